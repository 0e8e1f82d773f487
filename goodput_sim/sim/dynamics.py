"""Cluster dynamics: which nodes of the pool are failed, reclaimed, not provisioned or booting,
their failures, repairs and reclaims on the clock, the autoscaler's resizing, and the node-time
paid for (by on-demand and spot node where the cluster has prices or preemptible groups).

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
from goodput_sim.errors import InputError
from goodput_sim.inputs.cluster import ClusterSpec, FailureDomain, NodeGroup
from goodput_sim.inputs.failures import Failure, FailureModel
from goodput_sim.policies.base import JobView
from goodput_sim.sim.clock import At, Cause, SimEvent, after


class NodeStates:
    """The pool's nodes over time: failed (repairing, by their own or their domain's
    failure), reclaimed (spot nodes under notice or away), off (not provisioned) and starting
    (booting) nodes offer no GPUs; node-seconds and GPU-seconds are counted while provisioned,
    and by group where the cluster has prices or spot groups."""

    def __init__(
        self,
        env: simpy.Environment,
        cluster: ClusterSpec,
        failures: FailureModel | None,
        scale: AutoscaleConfig | None,
        on_failure: Callable[[Failure], None],
        on_reclaim: Callable[[int, float], None] | None = None,
    ):
        self.env = env
        self.cluster = cluster
        model = failures if failures is not None else FailureModel()
        declared = cluster.declares_failures
        self.failure_model = model if model.active or declared else None
        if self.failure_model is not None:
            own_rates = any(g.mtbf_hours is not None for g in cluster.groups) or any(
                d.mtbf_hours is not None for d in cluster.domains
            )
            if model.trace and own_rates:
                raise InputError(
                    "--failure-trace",
                    "a failure trace holds every failure, but the cluster declares its own "
                    "failure rates (domains or a group's mtbf_hours): give one or the other",
                )
            reclaims = any(f.reclaim for f in model.trace)
            if reclaims and any(g.preemption_hours is not None for g in cluster.groups):
                raise InputError(
                    "--failure-trace",
                    "the trace's reclaims would replace the preemptible groups' "
                    "preemption_hours: give one or the other",
                )
            spot = frozenset(n for n, g in enumerate(cluster.node_groups) if g.preemptible)
            model.check_nodes(cluster.nodes, tuple(d.name for d in cluster.domains), spot)
        self.scale = scale
        self.scaler = make_autoscaler(scale.rule, dict(scale.params)) if scale else None
        self.on_failure = on_failure
        self.on_reclaim = on_reclaim
        self.failed: set[int] = set()
        self._holds: dict[int, int] = {}  # node -> failures keeping it down (node, domain)
        self.reclaimed: set[int] = set()  # spot nodes under notice or taken by the provider
        self.reclaims = 0
        self._away: set[int] = set()  # reclaimed spot nodes gone (not paid for)
        self.failure_log: list[tuple[float, int, float]] = []
        self.off: set[int] = set(range(scale.min_nodes, cluster.nodes)) if scale else set()
        # Nodes each group keeps provisioned (its min_nodes), where groups declare bounds.
        self._floors = None
        if scale is not None and cluster.group_bounds:
            self._floors = np.array([g.min_nodes or 0 for g in cluster.groups])
            self._start_with_group_floors()
        self.starting: dict[int, int] = {}  # node -> generation of its start request
        self._generation = 0
        self.node_seconds = 0.0  # provisioned node-seconds, start-up included
        self.gpu_seconds = 0.0  # their GPUs, node by node
        self._tick = 0.0
        # Node-seconds paid per group, kept where the cluster prices its groups or has spot ones.
        self.group_seconds = np.zeros(len(cluster.groups))

    @property
    def fails(self) -> bool:
        """Whether nodes can go down unannounced to the policy: failures or reclaims."""
        return self.failure_model is not None

    def start(self) -> None:
        """Put every node's failures, every domain's and every spot node's reclaims on the
        clock (none without a failure model or a cluster that declares them)."""
        model = self.failure_model
        if model is None:
            return
        for node, group in enumerate(self.cluster.node_groups):
            self.env.process(self._node_failures(node, group))
        for index, domain in enumerate(self.cluster.domains):
            self.env.process(self._domain_failures(index, domain))
        traced = {f.node for f in model.trace if f.reclaim}
        for node, group in enumerate(self.cluster.node_groups):
            if group.preemptible and (group.preemption_hours is not None or node in traced):
                self.env.process(self._reclaims(node, group))

    def failure_rate(self, nodes: Sequence[int]) -> float:
        """Events per second that undo the work of a job on ``nodes``: each node's failures
        (its group's MTBF, else the run's), those of the domains they belong to, and reclaims
        of spot nodes."""
        model = self.failure_model
        if model is None or model.trace:
            return 0.0
        rate, domains = 0.0, set()
        for node in nodes:
            group = self.cluster.node_groups[node]
            mtbf = group.mtbf_hours if group.mtbf_hours is not None else model.mtbf_hours
            rate += 1.0 / (mtbf * 3600.0) if mtbf else 0.0
            if group.preemption_hours is not None:
                rate += 1.0 / (group.preemption_hours * 3600.0)
            if group.domain is not None:
                domains.add(group.domain)
        for domain in self.cluster.domains:
            if domain.name in domains and domain.mtbf_hours is not None:
                rate += 1.0 / (domain.mtbf_hours * 3600.0)
        return rate

    # ---------------------------------------------------------------------------- state
    def offline(self) -> set[int]:
        """Nodes offering no GPUs: failed, reclaimed, not provisioned, or booting."""
        return self.failed | self.reclaimed | self.off | set(self.starting)

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
        """Count the node-time and GPU-time provisioned since the last call (a reclaimed spot
        node is paid until the provider takes it, not while it is away)."""
        span = now - self._tick
        self.node_seconds += self.provisioned() * span
        self.gpu_seconds += self.provisioned_gpus() * span
        if self.cluster.priced:
            unpaid = list(self.off | self._away)
            paid = np.ones(self.cluster.nodes, dtype=bool)
            paid[unpaid] = False
            self.group_seconds += span * np.bincount(
                self.cluster.node_group_index[paid], minlength=len(self.cluster.groups)
            )
        self._tick = now

    def summary(self, end: float) -> dict:
        """Node-hours provisioned and lost to failures, failures, and cost with a price; on a
        cluster with prices or spot groups, node-hours and reclaims of spot nodes apart and cost
        at each group's price (the autoscaler's --node-price where a group has none)."""
        down = sum(min(duration, end - at) for at, _, duration in self.failure_log)
        price = self.scale.node_price if self.scale else None
        node_hours = self.node_seconds / 3600.0
        out = {
            "node_hours": node_hours,
            "provisioned_gpu_hours": self.gpu_seconds / 3600.0,
            "node_failures": len(self.failure_log),
            "node_hours_failed": down / 3600.0,
            "cost": node_hours * price if price is not None else float("nan"),
        }
        if self.cluster.priced:
            hours = self.group_seconds / 3600.0
            spot = np.array([g.preemptible for g in self.cluster.groups])
            prices = np.array(
                [g.price if g.price is not None else price for g in self.cluster.groups],
                dtype=float,
            )
            out["node_hours"] = float(hours.sum())
            out["node_hours_on_demand"] = float(hours[~spot].sum())
            out["node_hours_spot"] = float(hours[spot].sum())
            out["node_preemptions"] = self.reclaims
            out["cost"] = float(np.sum(hours * prices))  # nan where a price is missing
        return out

    # ------------------------------------------------------------------------- failures
    def _node_failures(self, node: int, group: NodeGroup):
        """A node's process: down at each failure, up again after its repair."""
        env = self.env
        failures = self.failure_model.node_failures(
            node, self.cluster.nodes, group.mtbf_hours, group.repair_hours
        )
        for failure in failures:
            if failure.time > env.now:
                yield At(env, failure.time - env.now, SimEvent(Cause.FAILURE, failure.time))
            took = self._fail(failure)
            yield after(env, failure.duration, Cause.REPAIR)
            if took:
                self._repair(node)

    def _domain_failures(self, index: int, domain: FailureDomain):
        """A failure domain's process: every node of it down at each failure, together."""
        env = self.env
        nodes = self.cluster.domain_nodes(domain.name)
        for failure in self.failure_model.domain_failures(index, domain):
            if failure.time > env.now:
                yield At(env, failure.time - env.now, SimEvent(Cause.FAILURE, failure.time))
            taken = [n for n in nodes if self._fail(Failure(failure.time, n, failure.duration))]
            yield after(env, failure.duration, Cause.REPAIR)
            for node in taken:
                self._repair(node)

    def _fail(self, failure: Failure) -> bool:
        """Node ``failure.node`` goes down now, unless it is not provisioned (the autoscaler
        has not started it, or the provider took it back); the engine is told first, so it can
        bring its jobs up to date and take their GPUs. True if it went down."""
        node = failure.node
        if node in self.off or node in self._away:
            return False
        self.on_failure(failure)
        self._holds[node] = self._holds.get(node, 0) + 1
        self.failed.add(node)
        self.starting.pop(node, None)
        self.failure_log.append((self.env.now, node, failure.duration))
        return True

    def _repair(self, node: int) -> None:
        """One failure holding ``node`` down is repaired; it is up once none holds it."""
        self._holds[node] -= 1
        if not self._holds[node]:
            del self._holds[node]
            self.failed.discard(node)

    def _reclaims(self, node: int, group: NodeGroup):
        """A spot node's process: at each reclaim's notice (``warning_seconds`` before it) it
        takes no new work and the engine stops its jobs, saving where the notice allows; it is
        gone from the reclaim for ``preempted_hours``, then available again."""
        env = self.env
        for at, away in self.failure_model.reclaims(node, group):
            notice = min(group.warning_seconds, at - env.now)
            if at - notice > env.now:
                yield At(env, at - notice - env.now, SimEvent(Cause.FAILURE, at - notice))
            if node in self.off:
                continue  # not provisioned: nothing to take back
            self.reclaims += 1
            self.reclaimed.add(node)
            self.starting.pop(node, None)
            if self.on_reclaim is not None:
                self.on_reclaim(node, notice)
            if notice > 0:
                yield after(env, notice, Cause.FAILURE)
            self._away.add(node)
            yield after(env, away, Cause.REPAIR)
            self._away.discard(node)
            self.reclaimed.discard(node)

    # ---------------------------------------------------------------------- autoscaling
    def autoscale(
        self,
        views: tuple[JobView, ...],
        allocations: Sequence[NDArray],
        held: set,
        probe: Callable[[Sequence[int]], Sequence[int]] | None = None,
    ) -> list[int]:
        """Resize the pool for the next interval; the nodes removed (their jobs lose their
        GPUs). ``held`` are nodes that may not be removed (fixed-size jobs run there).
        ``probe`` (for rules that ask) gives the policy's GPUs per job on a set of nodes."""
        scale = self.scale
        provisioned = self.provisioned()
        removable = self._removable(allocations, held)
        order = self._keep_order(removable)
        gpus = tuple(int(self.cluster.capacity[n]) for n in order)
        sized = None
        if probe is not None and self.scaler.probes:
            sized = lambda count: probe(order[:count])  # noqa: E731
        view = ScaleView(provisioned, gpus, views, sized)
        target = self.scaler.target(view)
        waiting = [v.requested_replicas for v in views if not v.allocation.any()]
        if waiting and all(not v.allocation.any() for v in views):  # never strand a request
            target = max(target, view.nodes_for(min(waiting)))
        target = min(max(target, scale.min_nodes), scale.max_nodes)
        if target > provisioned:
            for node in self._start_order()[: target - provisioned]:
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
        up ones by ``removal_order``. Failed nodes stay (under repair), and so do ``held``;
        so do the nodes a group with ``min_nodes`` keeps (every prefix of the list leaves each
        group at least its floor)."""
        booting = [n for n in sorted(self.starting, reverse=True) if n not in held]
        away = self.off | self.failed | self.reclaimed | held | set(self.starting)
        up = [n for n in range(self.cluster.nodes) if n not in away]
        order = booting + removal_order(list(allocations), up)
        if self._floors is None:
            return order
        group_of = self.cluster.node_group_index
        left = np.bincount(
            [group_of[n] for n in range(self.cluster.nodes) if n not in self.off],
            minlength=len(self.cluster.groups),
        )
        kept = []
        for node in order:
            group = int(group_of[node])
            if left[group] > self._floors[group]:
                left[group] -= 1
                kept.append(node)
        return kept

    def _start_with_group_floors(self) -> None:
        """Per-group bounds: each group starts with its ``min_nodes`` first nodes, then the
        cheapest others (:meth:`_start_order`) until ``--min-nodes`` are provisioned."""
        first = 0
        on: list[int] = []
        for group, floor in zip(self.cluster.groups, self._floors, strict=True):
            on += range(first, first + int(floor))
            first += group.nodes
        if len(on) > self.scale.max_nodes:
            raise InputError(
                "--max-nodes",
                f"{self.scale.max_nodes} is below the {len(on)} nodes the groups' min_nodes keep",
            )
        self.off = set(range(self.cluster.nodes)) - set(on)
        for node in self._start_order()[: max(self.scale.min_nodes - len(on), 0)]:
            self.off.discard(node)

    def reachable_gpus(self) -> int:
        """The most GPUs the autoscaler provisions at once: those of the nodes provisioned at
        the start, then of the nodes it would start, in its order, up to ``--max-nodes``."""
        if self.scale is None:
            return self.cluster.total_gpus
        order = [n for n in range(self.cluster.nodes) if n not in self.off] + self._start_order()
        return int(self.cluster.capacity[order[: self.scale.max_nodes]].sum())

    def _start_order(self) -> list[int]:
        """Nodes not provisioned, in the order the autoscaler starts them: cheapest per GPU
        first where groups have prices, then in node order."""
        groups = self.cluster.node_groups
        if not any(g.price is not None for g in self.cluster.groups):
            return sorted(self.off)

        def price(node: int) -> float:
            group = groups[node]
            return group.price / group.gpus_per_node if group.price is not None else 0.0

        return sorted(self.off, key=lambda n: (price(n), n))

    def _keep_order(self, removable: list[int]) -> list[int]:
        """Every pool node in the order the autoscaler keeps them: provisioned nodes it may
        not remove, then the removable ones, last to go first, then the others in the order
        they would start."""
        gone = set(removable) | self.off
        kept = [n for n in range(self.cluster.nodes) if n not in gone]
        return kept + removable[::-1] + self._start_order()

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
