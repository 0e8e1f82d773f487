"""What a round observer sees: a frozen record of each round after its batches are chosen.

Observers are how tests and notebooks watch a run without reaching into the engine: pass
``observers=[callable]`` to :class:`~goodput_sim.sim.engine.Simulation` and each is called once per
round with a :class:`RoundRecord`. Records are immutable; nothing an observer does can change
the run.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass


@dataclass(frozen=True)
class RunningJob:
    """One job holding GPUs this round, with the configuration it runs in."""

    name: str
    application: str
    gpu_type: str | None  # None on untyped clusters
    allocation: tuple[int, ...]  # GPUs on every node of the cluster, by node id
    local_bsz: int  # examples per GPU per micro-step
    accum_steps: int  # extra micro-steps per optimizer step (0: no accumulation)

    @property
    def replicas(self) -> int:
        return sum(self.allocation)

    @property
    def total_batch(self) -> int:
        return self.replicas * self.local_bsz * (self.accum_steps + 1)


@dataclass(frozen=True)
class RoundRecord:
    """A scheduling round: its time, the active jobs and those running, and the nodes."""

    time: float
    active: tuple[str, ...]
    running: tuple[RunningJob, ...]
    offline_nodes: frozenset[int]  # failed, not provisioned or booting


RoundObserver = Callable[[RoundRecord], object]
