"""Node failures and repairs: each node's own (the run's MTBF or its group's, exponential or
Weibull lifetimes), those of failure domains (every node of a domain down together), or a
failure trace's. A failure takes a node down for its repair time; every job with GPUs on it
falls back to its last checkpoint and waits for the next round."""

from __future__ import annotations

from goodput_sim.errors import InputError
from goodput_sim.inputs.cluster import FailureDomain, NodeGroup
from goodput_sim.inputs.failures import Failure
from goodput_sim.sim.clock import At, Cause, SimEvent, after
from goodput_sim.sim.dynamics.base import Dynamic, Interruption, LossCause, World


class NodeFailures(Dynamic):
    """Node and domain failures on the clock, and their repairs."""

    name = "node-failures"
    settings = ("mtbf", "repair_hours", "repair", "lifetime", "weibull_shape", "failure_trace")

    @classmethod
    def build(cls, world: World) -> NodeFailures | None:
        model, cluster = world.pool.failure_model, world.cluster
        if model is None:
            return None
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
        return cls(world)

    def start(self) -> None:
        env, cluster = self.world.env, self.world.cluster
        for node, group in enumerate(cluster.node_groups):
            env.process(self._node_failures(node, group))
        for index, domain in enumerate(cluster.domains):
            env.process(self._domain_failures(index, domain))

    def _node_failures(self, node: int, group: NodeGroup):
        """A node's process: down at each failure, up again after its repair."""
        env, pool = self.world.env, self.world.pool
        failures = pool.failure_model.node_failures(
            node, self.world.cluster.nodes, group.mtbf_hours, group.repair_hours
        )
        for failure in failures:
            if failure.time > env.now:
                yield At(env, failure.time - env.now, SimEvent(Cause.FAILURE, failure.time))
            took = self._fail(failure)
            yield after(env, failure.duration, Cause.REPAIR)
            if took:
                pool.repair(node)

    def _domain_failures(self, index: int, domain: FailureDomain):
        """A failure domain's process: every node of it down at each failure, together."""
        env, pool = self.world.env, self.world.pool
        nodes = self.world.cluster.domain_nodes(domain.name)
        for failure in pool.failure_model.domain_failures(index, domain):
            if failure.time > env.now:
                yield At(env, failure.time - env.now, SimEvent(Cause.FAILURE, failure.time))
            taken = [n for n in nodes if self._fail(Failure(failure.time, n, failure.duration))]
            yield after(env, failure.duration, Cause.REPAIR)
            for node in taken:
                pool.repair(node)

    def _fail(self, failure: Failure) -> bool:
        """Node ``failure.node`` goes down now, unless it is not provisioned (the autoscaler
        has not started it, or the provider took it back): every job on it falls back to its
        last checkpoint first. True if it went down."""
        world, node = self.world, failure.node
        if not world.pool.present(node):
            return False
        now = world.env.now
        world.count_events(2)  # the failure and its repair
        world.catch_up()
        why = Interruption(LossCause.NODE_DOWN, now, self.name, node)
        for job in world.jobs_on(node):
            world.stop(job, why, lose_work=True, restore=True)
            job.failures += 1
        world.pool.take_down(node, now, failure.duration)
        return True
