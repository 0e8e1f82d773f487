"""Tiresias (+TunedJobs): two-queue discretised least-attained-service, gang-scheduled at the
requested GPUs and batch size (SPEC 7.2; Gu et al., NSDI'19)."""

from __future__ import annotations

from goodput_sim.params import Param
from goodput_sim.policies.base import Decision, Policy, Snapshot, register
from goodput_sim.policies.placement import keep_or_fill

QUEUE_THRESHOLD = 16 * 3600  # GPU-seconds of attained service before demotion to the low queue


@register("fixed-batch")
class Tiresias(Policy):
    """2D-LAS with two queues; demotion after 16 GPU-hours, no promotion, skip-ahead admission."""

    name = "tiresias"
    reads_beliefs = False
    params = (
        Param(
            "queue_threshold",
            float,
            float(QUEUE_THRESHOLD),
            "GPU-seconds of attained service before a job is demoted to the low queue",
            low=0.0,
            high=1e12,
        ),
    )

    def __init__(self, seed: int = 0, **values):
        super().__init__(seed, **values)
        self.queue_threshold = self.values["queue_threshold"]
        self.queues: tuple[list[str], list[str]] = ([], [])
        self._running_high: dict[str, int] = {}  # GPUs of the high queue's running jobs

    def allocate(self, snapshot: Snapshot) -> Decision:
        jobs = {job.name: job for job in snapshot.jobs}
        high, low = self.queues
        for queue in self.queues:
            queue[:] = [name for name in queue if name in jobs]
        known = set(high) | set(low)
        high.extend(name for name in jobs if name not in known)
        # Demotion on attained service (GPU-seconds): Tiresias runs a job at its requested GPUs.
        # Those demoted join the low queue in the snapshot's order.
        in_high = set(high)
        demoted = [
            name
            for name, job in jobs.items()
            if name in in_high and job.attained_service >= self.queue_threshold
        ]
        if demoted:
            gone = set(demoted)
            high[:] = [name for name in high if name not in gone]
            low.extend(demoted)
            in_high -= gone
        remaining = snapshot.cluster.total_gpus
        admitted = []  # skip-ahead: a job that does not fit lets later ones in
        for name in high + low:
            if jobs[name].requested_replicas <= remaining:
                admitted.append(jobs[name])
                remaining -= jobs[name].requested_replicas
        counts = {job.name: job.requested_replicas for job in admitted}
        decision = keep_or_fill(admitted, counts, snapshot.cluster)
        # keep_or_fill gives a job its count or leaves it out: the GPUs of the high queue's
        # running jobs, whose demotions quiet_until foresees.
        self._running_high = {
            name: counts[name] for name in decision.allocations if name in in_high
        }
        return decision

    def quiet_until(self, snapshot: Snapshot, rows) -> float:
        """Besides events, the answer changes only when a job of the high queue is demoted:
        from a second before the first running one reaches the threshold (attained service
        grows by its GPUs per second), the engine asks every round. The GPUs each job runs on
        are those :meth:`allocate` just granted (the ``rows`` it gave)."""
        running = self._running_high
        first = float("inf")
        for job in snapshot.jobs:
            gpus = running.get(job.name)
            if gpus:
                left = (self.queue_threshold - job.attained_service) / gpus
                first = min(first, snapshot.time + left - 1.0)
        return first
