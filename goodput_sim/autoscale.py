"""Cluster autoscaling: at each round a rule decides how many nodes the next interval needs,
between ``--min-nodes`` and ``--max-nodes``.

* ``utility`` (Pollux, OSDI'21 Sec. 4.3): cluster utility is the sum of the jobs' speedups per
  provisioned GPU, each job's speedup being its believed goodput on its GPUs over its goodput on
  one GPU (so a cluster of perfectly scaling, fully used GPUs has utility 1), under the best
  allocation of the GPUs there are (handed out one at a time to the job that gains most, waiting
  jobs included). Above ``high`` the cluster grows, below ``low`` it shrinks; in both cases to
  the largest size whose utility is still at least ``target``. Between the thresholds the size
  holds (hysteresis).
* ``queue``: what a cloud operator does without a job model: grow to fit every active job's
  requested GPUs while any job waits; shrink to fit them, plus ``slack_nodes``, once none waits.

Whatever the rule, when no job runs and some wait, the cluster grows to fit the smallest waiting
request (no job is stranded by a rule that cannot see fixed-size requests). The engine starts
the nodes asked for (they come up after a start-up delay) and removes nodes
idle first, then those with the fewest GPUs in use; jobs on removed nodes are preempted and
restarted elsewhere, as by the scheduler (a graceful checkpoint: no progress is lost)."""

from __future__ import annotations

import functools
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, ClassVar

import numpy as np

from goodput_sim.cluster import packed_nodes
from goodput_sim.errors import InputError
from goodput_sim.params import Param, resolve
from goodput_sim.policies.base import JobView
from goodput_sim.policies.elastic import best_goodputs


@dataclass(frozen=True)
class AutoscaleConfig:
    """Autoscaling settings: the node range, the rule and its parameters (sorted pairs), the
    start-up delay of a new node and an optional price per node-hour."""

    min_nodes: int
    max_nodes: int
    rule: str = "utility"
    params: tuple[tuple[str, Any], ...] = ()
    startup_delay: float = 120.0
    node_price: float | None = None

    def __post_init__(self) -> None:
        if self.min_nodes < 1:
            raise InputError("--min-nodes", f"must be at least 1, got {self.min_nodes}")
        if self.min_nodes > self.max_nodes:
            raise InputError(
                "--min-nodes", f"{self.min_nodes} exceeds --max-nodes {self.max_nodes}"
            )
        if not 0 <= self.startup_delay <= 86400:
            raise InputError("--startup-delay", "must be seconds in [0, 86400]")
        if self.node_price is not None and not (
            math.isfinite(self.node_price) and self.node_price >= 0
        ):
            raise InputError("--node-price", f"must be a price >= 0, got {self.node_price}")
        make_autoscaler(self.rule, dict(self.params))  # parameters checked now


@dataclass(frozen=True)
class ScaleView:
    """What a rule sees at a round: the provisioned nodes (up or starting), GPUs per node and
    the active jobs with their current allocations and beliefs."""

    provisioned: int
    gpus_per_node: int
    max_gpus: int  # of the largest cluster allowed
    jobs: tuple[JobView, ...]


class Autoscaler:
    """A rule for the cluster size; declares its parameters like a policy."""

    name: ClassVar[str]
    params: ClassVar[tuple[Param, ...]] = ()
    reads_beliefs: ClassVar[bool] = False  # whether the engine must refresh beliefs for it

    def __init__(self, **values: Any):
        self.values = resolve(type(self).params, values, f"autoscaler {self.name}")

    def target(self, view: ScaleView) -> int:
        """Nodes wanted for the next interval (the engine clamps to [min, max])."""
        raise NotImplementedError

    def describe(self) -> dict:
        return {"name": self.name, **self.values}


class UtilityAutoscaler(Autoscaler):
    """Pollux's rule: keep the cluster utility (believed speedup per provisioned GPU) between
    two thresholds."""

    name = "utility"
    reads_beliefs = True
    params = (
        Param("low", float, 0.5, "shrink below this utility", 0.0, 1.0),
        Param("high", float, 0.8, "grow above this utility", 0.0, 1.0),
        Param("target", float, 0.65, "utility the new size aims at", 0.0, 1.0),
    )

    def __init__(self, **values: Any):
        super().__init__(**values)
        if not self.values["low"] <= self.values["target"] <= self.values["high"]:
            raise InputError("--param", "autoscaler utility needs low <= target <= high")

    def target(self, view: ScaleView) -> int:
        gpn = view.gpus_per_node
        curves = [_speedups(job, job.belief.max_replicas(view.max_gpus), gpn) for job in view.jobs]
        gains = np.sort(np.concatenate([np.diff(c) for c in curves] or [np.zeros(0)]))[::-1]
        ideal = np.cumsum(gains) / np.arange(1, len(gains) + 1)  # utility of the best G GPUs
        capacity = view.provisioned * gpn
        held = float(np.sum(gains[:capacity]))  # the best allocation of the GPUs there are
        utility = held / capacity if capacity else 1.0
        if self.values["low"] <= utility <= self.values["high"]:
            return view.provisioned
        enough = np.flatnonzero(ideal >= self.values["target"])
        gpus = int(enough[-1]) + 1 if enough.size else 1
        wanted = max(-(-gpus // gpn), 1)
        if utility > self.values["high"]:
            return max(wanted, view.provisioned)
        return min(wanted, view.provisioned)


class QueueAutoscaler(Autoscaler):
    """Size the cluster to the GPUs the active jobs requested, growing while any job waits."""

    name = "queue"
    params = (Param("slack_nodes", int, 0, "nodes kept beyond the requests", 0, 1_000_000),)

    def target(self, view: ScaleView) -> int:
        requested = sum(job.requested_replicas for job in view.jobs)
        fits = -(-requested // view.gpus_per_node)
        waiting = any(not job.allocation.any() for job in view.jobs)
        if waiting:
            return max(fits, view.provisioned)
        return min(fits + self.values["slack_nodes"], view.provisioned)


AUTOSCALERS: Mapping[str, type[Autoscaler]] = {
    cls.name: cls for cls in (UtilityAutoscaler, QueueAutoscaler)
}


def make_autoscaler(rule: str, values: Mapping[str, Any]) -> Autoscaler:
    if rule not in AUTOSCALERS:
        raise InputError("--autoscaler", f"unknown rule {rule!r}; known: {', '.join(AUTOSCALERS)}")
    return AUTOSCALERS[rule](**values)


def _speedups(job: JobView, cap: int, gpus_per_node: int) -> np.ndarray:
    """The job's speedup on 0..cap GPUs packed on nodes, against one GPU (its believed goodput;
    linear before it has been profiled, flat past its GPU limit)."""
    cap = min(job.limits.cap(cap), cap)
    model = job.belief.goodput_model
    curve = np.zeros(cap + 1)
    if model is None:
        curve[1:] = np.arange(1, cap + 1)
        return curve
    best = _cached_best(model, cap, gpus_per_node)
    r = np.arange(1, cap + 1)
    rows = np.minimum([packed_nodes(int(x), gpus_per_node) for x in r], 2)
    values = best[rows, r]
    curve[1:] = np.maximum.accumulate(values / values[0]) if values[0] > 0 else r
    return curve


@functools.lru_cache(maxsize=4096)
def _cached_best(model, cap: int, gpus_per_node: int) -> np.ndarray:
    return best_goodputs(model, True, cap, 2, gpus_per_node)


def removal_order(allocations: Sequence[np.ndarray], candidates: Sequence[int]) -> list[int]:
    """Nodes to remove first: idle ones, then those with the fewest GPUs in use (ties: the
    highest node id, so the cluster shrinks from its end)."""
    used = np.sum(allocations, axis=0) if len(allocations) else None
    load = {n: int(used[n]) if used is not None else 0 for n in candidates}
    return sorted(candidates, key=lambda n: (load[n], -n))
