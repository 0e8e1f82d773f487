"""First come, first served at the requested GPUs and batch, with backfill of smaller jobs."""

from __future__ import annotations

import numpy as np

from goodput_sim.policies.base import Decision, Policy, Snapshot, register
from goodput_sim.policies.placement import fill_most_free


@register()
class Fifo(Policy):
    """Non-preemptive: running jobs keep their GPUs; queued jobs start in arrival order, and a
    later job that fits starts ahead of an earlier one that does not (backfill)."""

    name = "fifo"

    def allocate(self, snapshot: Snapshot) -> Decision:
        free = np.full(snapshot.cluster.nodes, snapshot.cluster.gpus_per_node, dtype=np.int64)
        decision: Decision = {}
        for job in snapshot.jobs:
            if job.replicas > 0:
                decision[job.name] = job.allocation.copy()
                free -= job.allocation
        for job in snapshot.jobs:
            if job.name not in decision:
                row = fill_most_free(job.requested_replicas, free)
                if row is not None:
                    decision[job.name] = row
        return decision
