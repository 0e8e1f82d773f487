"""First come, first served at the requested GPUs and batch, with backfill of smaller jobs."""

from __future__ import annotations

from goodput_sim.policies.base import Decision, Policy, Snapshot, register
from goodput_sim.policies.placement import keep_or_fill


@register()
class Fifo(Policy):
    """Non-preemptive: running jobs keep their GPUs; queued jobs start in arrival order, and a
    later job that fits starts ahead of an earlier one that does not (backfill)."""

    name = "fifo"
    reads_beliefs = False

    def allocate(self, snapshot: Snapshot) -> Decision:
        counts = {job.name: job.replicas or job.requested_replicas for job in snapshot.jobs}
        return keep_or_fill(list(snapshot.jobs), counts, snapshot.cluster)

    def quiet_until(self, snapshot: Snapshot, rows) -> float:
        """Running jobs keep their GPUs and the queue is in arrival order: the answer changes
        only with an arrival, a completion, a failure or a node change."""
        return float("inf")
