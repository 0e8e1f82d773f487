"""Autoscaling: at every round (idle ones too) a rule (:mod:`goodput_sim.autoscale`) sizes the
cluster for the next interval between ``--min-nodes`` and ``--max-nodes``. Nodes start in pool
order, cheapest per GPU first where groups have prices, after a start-up delay; booting nodes
are removed first, then idle ones, then those with the fewest GPUs in use. Jobs on removed
nodes lose their GPUs and restart elsewhere, as after a preemption by the policy. A node where
a fixed-size job runs is never removed, and a waiting request is never stranded."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Sequence

import numpy as np
from numpy.typing import NDArray

from goodput_sim.autoscale import ScaleView, make_autoscaler, removal_order
from goodput_sim.errors import InputError
from goodput_sim.policies.base import JobView, Snapshot
from goodput_sim.sim.clock import Cause
from goodput_sim.sim.dynamics.base import Dynamic, Interruption, LossCause, World
from goodput_sim.sim.nodes import held_nodes


class Autoscaling(Dynamic):
    """The autoscaler: provisions and removes the pool's nodes every round."""

    name = "autoscaling"
    settings = ("min_nodes", "max_nodes", "autoscaler", "startup_delay", "node_price")
    settings += ("autoscaler_params",)
    keeps_decisions = False  # the rule re-reads the jobs every round

    def __init__(self, world: World):
        super().__init__(world)
        scale = self.scale = world.config.autoscale
        self.scaler = make_autoscaler(scale.rule, dict(scale.params))
        self.reads_beliefs = self.scaler.reads_beliefs
        pool, cluster = world.pool, world.cluster
        pool.off = set(range(scale.min_nodes, cluster.nodes))
        # Nodes each group keeps provisioned (its min_nodes), where groups declare bounds.
        self._floors = None
        if cluster.group_bounds:
            self._floors = np.array([g.min_nodes or 0 for g in cluster.groups])
            self._start_with_group_floors()
        self._generation = 0

    @classmethod
    def build(cls, world: World) -> Autoscaling | None:
        return cls(world) if world.config.autoscale is not None else None

    def check(self) -> None:
        """Refuse, under a policy that keeps requested GPU counts, a job asking for more GPUs
        than an autoscaled pool with per-group bounds ever provisions at once (nodes start
        cheapest first, so ``--max-nodes`` of them may hold fewer GPUs than the pool's
        largest): it would wait for ever. The search rule probes the policy's own GPU counts,
        so it needs an elastic policy."""
        world = self.world
        if world.cluster.group_bounds and not world.policy.elastic:
            most = self.reachable_gpus()
            replicas = world.book.replicas
            for index in np.flatnonzero(replicas > most)[:1]:
                raise InputError(
                    f"job {world.book.names[index]!r}",
                    f"asks for {replicas[index]} GPUs; the autoscaled groups "
                    f"provision at most {most} at once within --max-nodes "
                    f"{self.scale.max_nodes} (nodes start cheapest first)",
                )
        if self.scaler.probes and not world.policy.elastic:
            raise InputError(
                "--autoscaler",
                f"search re-runs the policy's own allocation at candidate sizes; "
                f"{world.policy.name} keeps the GPU counts jobs ask for (use an elastic "
                "policy, or utility/queue)",
            )

    # --------------------------------------------------------------------------- rounds
    def before_decide(self, views: tuple[JobView, ...]) -> None:
        """Resize the cluster for the next interval; jobs on removed nodes lose their GPUs.
        Nodes where a fixed-size job runs stay (it keeps the GPUs it asked for)."""
        world = self.world
        allocations = [job.allocation for job in world.active]
        held = set() if world.policy.elastic else held_nodes(allocations)
        removed = self.resize(views, allocations, held, self._prober(views))
        for node in removed:
            why = Interruption(LossCause.NODE_REMOVED, world.env.now, self.name, node)
            for job in world.active:
                if job.allocation[node] > 0:
                    world.stop(job, why)

    def idle_round(self) -> bool:
        """A round with no active job: the rule may shrink the cluster; True while it is above
        ``--min-nodes``, so that idle rounds go on."""
        self.before_decide(())
        return self.can_shrink()

    def _prober(self, views: tuple[JobView, ...]) -> Callable[[Sequence[int]], list[int]]:
        """What a probing rule asks: the GPUs the policy gives each job of ``views`` if only
        ``nodes`` were up. The policy sees the jobs as the engine would leave them on those
        nodes: a job holding GPUs elsewhere has lost them all (as when its node is removed),
        so no job keeps GPUs the probe does not count; and only GPUs on ``nodes`` are counted.
        (Policies that start from the current allocation kept such GPUs, and the rule then
        counted speedups on GPUs outside its count: a utility above 1.) The policy's
        attributes are restored after each call, so a probe never changes what it decides at
        the round itself (caches keyed by their inputs may keep what the probe computed)."""
        world = self.world

        def probe(nodes: Sequence[int]) -> list[int]:
            up = np.zeros(world.cluster.nodes, dtype=bool)
            up[list(nodes)] = True
            snapshot = Snapshot(
                world.env.now,
                world.cluster.with_offline(np.flatnonzero(~up)),
                tuple(_without_gpus_off(view, up) for view in views),
                world.config.restart_delay,
            )
            state = dict(vars(world.policy))
            try:
                decision = world.policy.allocate(snapshot)
            finally:
                vars(world.policy).clear()
                vars(world.policy).update(state)
            given = [decision.allocations.get(v.name) for v in views]
            return [0 if row is None else int(np.sum(np.asarray(row)[up])) for row in given]

        return probe

    def resize(
        self,
        views: tuple[JobView, ...],
        allocations: Sequence[NDArray],
        held: set,
        probe: Callable[[Sequence[int]], Sequence[int]] | None = None,
    ) -> list[int]:
        """Resize the pool for the next interval; the nodes removed. ``held`` are nodes that
        may not be removed (fixed-size jobs run there). ``probe`` (for rules that ask) gives
        the policy's GPUs per job on a set of nodes."""
        scale, pool = self.scale, self.world.pool
        provisioned = pool.provisioned()
        removable = self._removable(allocations, held)
        order = self._keep_order(removable)
        gpus = tuple(int(self.world.cluster.capacity[n]) for n in order)
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
                pool.off.discard(node)
                self._start_node(node, scale.startup_delay)
            return []
        removed = removable[: max(provisioned - target, 0)]
        for node in removed:
            pool.starting.pop(node, None)
            pool.off.add(node)
        return removed

    # ---------------------------------------------------------------------- node order
    def can_shrink(self) -> bool:
        """Whether an idle cluster is above ``--min-nodes`` with a node it may remove."""
        pool = self.world.pool
        return pool.provisioned() > self.scale.min_nodes and bool(self._removable((), set()))

    def _removable(self, allocations: Sequence[NDArray], held: set) -> list[int]:
        """Provisioned nodes the autoscaler may remove, first to go first: booting ones, then
        up ones by ``removal_order``. Failed nodes stay (under repair), and so do ``held``;
        so do the nodes a group with ``min_nodes`` keeps (every prefix of the list leaves each
        group at least its floor)."""
        pool, cluster = self.world.pool, self.world.cluster
        booting = [n for n in sorted(pool.starting, reverse=True) if n not in held]
        away = pool.off | pool.failed | pool.reclaimed | held | set(pool.starting)
        up = [n for n in range(cluster.nodes) if n not in away]
        order = booting + removal_order(list(allocations), up)
        if self._floors is None:
            return order
        group_of = cluster.node_group_index
        left = np.bincount(
            [group_of[n] for n in range(cluster.nodes) if n not in pool.off],
            minlength=len(cluster.groups),
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
        pool, cluster = self.world.pool, self.world.cluster
        first = 0
        on: list[int] = []
        for group, floor in zip(cluster.groups, self._floors, strict=True):
            on += range(first, first + int(floor))
            first += group.nodes
        if len(on) > self.scale.max_nodes:
            raise InputError(
                "--max-nodes",
                f"{self.scale.max_nodes} is below the {len(on)} nodes the groups' min_nodes keep",
            )
        pool.off = set(range(cluster.nodes)) - set(on)
        for node in self._start_order()[: max(self.scale.min_nodes - len(on), 0)]:
            pool.off.discard(node)

    def reachable_gpus(self) -> int:
        """The most GPUs the autoscaler provisions at once: those of the nodes provisioned at
        the start, then of the nodes it would start, in its order, up to ``--max-nodes``."""
        pool, cluster = self.world.pool, self.world.cluster
        order = [n for n in range(cluster.nodes) if n not in pool.off] + self._start_order()
        return int(cluster.capacity[order[: self.scale.max_nodes]].sum())

    def _start_order(self) -> list[int]:
        """Nodes not provisioned, in the order the autoscaler starts them: cheapest per GPU
        first where groups have prices, then in node order."""
        pool, cluster = self.world.pool, self.world.cluster
        groups = cluster.node_groups
        if not any(g.price is not None for g in cluster.groups):
            return sorted(pool.off)

        def price(node: int) -> float:
            group = groups[node]
            return group.price / group.gpus_per_node if group.price is not None else 0.0

        return sorted(pool.off, key=lambda n: (price(n), n))

    def _keep_order(self, removable: list[int]) -> list[int]:
        """Every pool node in the order the autoscaler keeps them: provisioned nodes it may
        not remove, then the removable ones, last to go first, then the others in the order
        they would start."""
        gone = set(removable) | self.world.pool.off
        kept = [n for n in range(self.world.cluster.nodes) if n not in gone]
        return kept + removable[::-1] + self._start_order()

    def _start_node(self, node: int, delay: float) -> None:
        """Provision ``node``: usable after ``delay`` seconds of booting (at once if none)."""
        if delay <= 0:
            return
        pool = self.world.pool
        self._generation += 1
        generation = pool.starting[node] = self._generation

        def boot() -> None:
            if pool.starting.get(node) == generation:  # not removed or failed meanwhile
                del pool.starting[node]

        self.world.schedule(delay, Cause.NODE_READY, boot)


def _without_gpus_off(view: JobView, up: NDArray[np.bool_]) -> JobView:
    """``view`` as the engine leaves a job when the nodes not ``up`` go: stopped, holding no
    GPU, if it held any there; unchanged otherwise."""
    if not view.allocation[~up].any():
        return view
    return dataclasses.replace(view, allocation=_zero(len(up)))


def _zero(nodes: int) -> NDArray[np.int64]:
    row = np.zeros(nodes, dtype=np.int64)
    row.flags.writeable = False
    return row
