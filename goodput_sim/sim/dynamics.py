"""Cluster dynamics: which nodes of the pool are failed, not provisioned or booting, their
failures and repairs on the clock, the autoscaler's resizing, and the node-time paid for.

The engine owns the jobs; this module owns the nodes. It tells the engine which nodes went
down (``on_failure``) or were removed (the return of :meth:`NodeStates.autoscale`), and the
engine takes the GPUs of the jobs on them.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import numpy as np
import simpy
from numpy.typing import NDArray

from goodput_sim.autoscale import AutoscaleConfig, ScaleView, make_autoscaler, removal_order
from goodput_sim.cluster import ClusterSpec
from goodput_sim.failures import Failure, FailureModel
from goodput_sim.policies.base import JobView
from goodput_sim.sim.clock import At, Cause, SimEvent, after


class NodeStates:
    """The pool's nodes over time: failed (repairing), off (not provisioned) and starting
    (booting) nodes offer no GPUs; node-seconds and GPU-seconds are counted while provisioned."""

    def __init__(
        self,
        env: simpy.Environment,
        cluster: ClusterSpec,
        failures: FailureModel | None,
        scale: AutoscaleConfig | None,
        on_failure: Callable[[Failure], None],
    ):
        self.env = env
        self.cluster = cluster
        self.failure_model = failures if failures is not None and failures.active else None
        if self.failure_model is not None:
            self.failure_model.check_nodes(cluster.nodes)
        self.scale = scale
        self.scaler = make_autoscaler(scale.rule, dict(scale.params)) if scale else None
        self.on_failure = on_failure
        self.failed: set[int] = set()
        self.failure_log: list[tuple[float, int, float]] = []
        self.off: set[int] = set(range(scale.min_nodes, cluster.nodes)) if scale else set()
        self.starting: dict[int, int] = {}  # node -> generation of its start request
        self._generation = 0
        self.node_seconds = 0.0  # provisioned node-seconds, start-up included
        self.gpu_seconds = 0.0  # their GPUs, node by node
        self._tick = 0.0

    def start(self) -> None:
        """Put every node's failures on the clock (none without a failure model)."""
        if self.failure_model is not None:
            for node in range(self.cluster.nodes):
                self.env.process(self._node_failures(node))

    # ---------------------------------------------------------------------------- state
    def offline(self) -> set[int]:
        """Nodes offering no GPUs: failed, not provisioned, or booting."""
        return self.failed | self.off | set(self.starting)

    def live_cluster(self) -> ClusterSpec:
        """The cluster as this round's policy sees it: offline nodes offer no GPUs."""
        return self.cluster.with_offline(self.offline())

    def provisioned(self) -> int:
        """Nodes paid for: all but those the autoscaler has not started."""
        return self.cluster.nodes - len(self.off)

    def provisioned_gpus(self) -> int:
        """GPUs of the nodes paid for, each node counted with its own GPUs."""
        capacity = self.cluster.capacity
        return int(capacity.sum() - sum(int(capacity[n]) for n in self.off))

    def account(self, now: float) -> None:
        """Count the node-time and GPU-time provisioned since the last call."""
        self.node_seconds += self.provisioned() * (now - self._tick)
        self.gpu_seconds += self.provisioned_gpus() * (now - self._tick)
        self._tick = now

    def summary(self, end: float) -> dict:
        """Node-hours provisioned and lost to failures, failures, and cost with a price."""
        down = sum(min(duration, end - at) for at, _, duration in self.failure_log)
        price = self.scale.node_price if self.scale else None
        node_hours = self.node_seconds / 3600.0
        return {
            "node_hours": node_hours,
            "provisioned_gpu_hours": self.gpu_seconds / 3600.0,
            "node_failures": len(self.failure_log),
            "node_hours_failed": down / 3600.0,
            "cost": node_hours * price if price is not None else float("nan"),
        }

    # ------------------------------------------------------------------------- failures
    def _node_failures(self, node: int):
        """A node's process: down at each failure, up again after its repair."""
        env = self.env
        for failure in self.failure_model.node_failures(node, self.cluster.nodes):
            if failure.time > env.now:
                yield At(env, failure.time - env.now, SimEvent(Cause.FAILURE, failure.time))
            self._fail(failure)
            yield after(env, failure.duration, Cause.REPAIR)
            self.failed.discard(node)

    def _fail(self, failure: Failure) -> None:
        """Node ``failure.node`` goes down now, unless the autoscaler has not started it; the
        engine is told first, so it can bring its jobs up to date and take their GPUs."""
        node = failure.node
        if node in self.off:
            return
        self.on_failure(failure)
        self.failed.add(node)
        self.starting.pop(node, None)
        self.failure_log.append((self.env.now, node, failure.duration))

    # ---------------------------------------------------------------------- autoscaling
    def autoscale(
        self, views: tuple[JobView, ...], allocations: Sequence[NDArray], held: set
    ) -> list[int]:
        """Resize the pool for the next interval; the nodes removed (their jobs lose their
        GPUs). ``held`` are nodes that may not be removed (fixed-size jobs run there)."""
        scale = self.scale
        provisioned = self.provisioned()
        removable = self._removable(allocations, held)
        view = ScaleView(provisioned, self._keep_order(removable), views)
        target = self.scaler.target(view)
        waiting = [v.requested_replicas for v in views if not v.allocation.any()]
        if waiting and all(not v.allocation.any() for v in views):  # never strand a request
            target = max(target, view.nodes_for(min(waiting)))
        target = min(max(target, scale.min_nodes), scale.max_nodes)
        if target > provisioned:
            for node in sorted(self.off)[: target - provisioned]:
                self.off.discard(node)
                self._start_node(node, scale.startup_delay)
            return []
        removed = removable[: max(provisioned - target, 0)]
        for node in removed:
            self.starting.pop(node, None)
            self.off.add(node)
        return removed

    def can_shrink(self) -> bool:
        """Whether an idle cluster is above ``--min-nodes`` with a node it may remove."""
        return self.provisioned() > self.scale.min_nodes and bool(self._removable((), set()))

    def _removable(self, allocations: Sequence[NDArray], held: set) -> list[int]:
        """Provisioned nodes the autoscaler may remove, first to go first: booting ones, then
        up ones by ``removal_order``. Failed nodes stay (under repair), and so do ``held``."""
        booting = [n for n in sorted(self.starting, reverse=True) if n not in held]
        up = [
            n
            for n in range(self.cluster.nodes)
            if n not in self.off | self.failed | held and n not in self.starting
        ]
        return booting + removal_order(list(allocations), up)

    def _keep_order(self, removable: list[int]) -> tuple[int, ...]:
        """GPUs of every pool node in the order the autoscaler keeps them: provisioned nodes it
        may not remove, then the removable ones, last to go first, then the others in the order
        they would start."""
        gone = set(removable) | self.off
        kept = [n for n in range(self.cluster.nodes) if n not in gone]
        order = kept + removable[::-1] + sorted(self.off)
        return tuple(int(self.cluster.capacity[n]) for n in order)

    def _start_node(self, node: int, delay: float) -> None:
        """Provision ``node``: usable after ``delay`` seconds of booting (at once if none)."""
        if delay <= 0:
            return
        self._generation += 1
        generation = self.starting[node] = self._generation
        ready = after(self.env, delay, Cause.NODE_READY)

        def boot(_event, node=node, generation=generation) -> None:
            if self.starting.get(node) == generation:  # not removed or failed meanwhile
                del self.starting[node]

        ready.callbacks.append(boot)


def held_nodes(allocations: Sequence[NDArray]) -> set[int]:
    """Nodes where any of ``allocations`` holds GPUs."""
    held: set[int] = set()
    for row in allocations:
        held.update(np.flatnonzero(row).tolist())
    return held
