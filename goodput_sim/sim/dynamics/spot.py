"""Spot reclaims with notice: the provider takes back a preemptible group's nodes (at its
``preemption_hours`` rate, or as a failure trace's ``reclaim`` rows say), warning
``warning_seconds`` before. At the notice the node takes no new work and each job on it stops:
one whose checkpoint save fits in the notice saves and loses nothing (the save is paid at its
next start, beside the restore); any other falls back to its last checkpoint. The node is gone
for ``preempted_hours``, then available again."""

from __future__ import annotations

from goodput_sim.inputs.cluster import NodeGroup
from goodput_sim.sim.clock import At, Cause, SimEvent, after
from goodput_sim.sim.dynamics.base import Dynamic, Interruption, LossCause, World
from goodput_sim.sim.dynamics.checkpoints import save_seconds
from goodput_sim.sim.jobs import Job


class SpotReclaims(Dynamic):
    """Reclaims of spot nodes on the clock, and the preemptions they cause (a ``preemptions``
    column wherever the cluster has spot groups)."""

    name = "spot-reclaims"
    settings = ("failure_trace", "checkpoint_seconds")

    def __init__(self, world: World):
        super().__init__(world)
        self.columns = ("preemptions",)
        self._preemptions: dict[Job, int] = {}

    @classmethod
    def build(cls, world: World) -> SpotReclaims | None:
        return cls(world) if any(g.preemptible for g in world.cluster.groups) else None

    def start(self) -> None:
        model = self.world.pool.failure_model
        if model is None:
            return
        traced = {f.node for f in model.trace if f.reclaim}
        for node, group in enumerate(self.world.cluster.node_groups):
            if group.preemptible and (group.preemption_hours is not None or node in traced):
                self.world.env.process(self._reclaims(node, group))

    def _reclaims(self, node: int, group: NodeGroup):
        """A spot node's process: at each reclaim's notice it stops its jobs; it is away from
        the reclaim for ``preempted_hours``, then back."""
        env, pool = self.world.env, self.world.pool
        for at, away in pool.failure_model.reclaims(node, group):
            notice = min(group.warning_seconds, at - env.now)
            if at - notice > env.now:
                yield At(env, at - notice - env.now, SimEvent(Cause.FAILURE, at - notice))
            if node in pool.off:
                continue  # not provisioned: nothing to take back
            pool.reclaim(node)
            self._stop_jobs(node, notice)
            if notice > 0:
                yield after(env, notice, Cause.FAILURE)
            pool.away.add(node)
            yield after(env, away, Cause.REPAIR)
            pool.away.discard(node)
            pool.reclaimed.discard(node)

    def _stop_jobs(self, node: int, notice: float) -> None:
        """Each job on reclaimed ``node`` stops now, saving where the notice allows."""
        world = self.world
        now = world.env.now
        world.catch_up()
        why = Interruption(LossCause.NODE_RECLAIMED, now, self.name, node)
        for job in world.jobs_on(node):
            saved = notice > 0 and save_seconds(world.config, job) <= notice
            if saved:
                world.save(job, now)
                job.save_due = True
            world.stop(job, why, lose_work=not saved, restore=True)
            self._preemptions[job] = self._preemptions.get(job, 0) + 1

    def job_columns(self, job: Job) -> dict[str, int]:
        return {"preemptions": self._preemptions.get(job, 0)}
