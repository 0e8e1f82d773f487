"""Placement helpers shared by the policies: turning GPU counts into GPUs-per-node rows."""

from __future__ import annotations

import numpy as np
from numpy.typing import NDArray

from goodput_sim.cluster import ClusterSpec
from goodput_sim.policies.base import Decision, JobView


def fill_most_free(needed: int, free: NDArray[np.int64]) -> NDArray[np.int64] | None:
    """Take GPUs from the node with the most free GPUs, repeatedly (ties: lowest node id), as the
    reference baselines do. Updates ``free`` in place; None (and ``free`` untouched) if short."""
    if needed > free.sum():
        return None
    row = np.zeros_like(free)
    while needed > 0:
        node = int(np.argmax(free))
        take = min(int(free[node]), needed)
        row[node] += take
        free[node] -= take
        needed -= take
    return row


def keep_or_fill(jobs: list[JobView], counts: dict[str, int], cluster: ClusterSpec) -> Decision:
    """Rows for GPU counts per job: a running job whose count is unchanged keeps its row; the
    others, in the order of ``jobs``, take GPUs from the most-free nodes (left out if short)."""
    free = cluster.capacity.copy()
    decision: dict[str, NDArray[np.int64]] = {}
    for job in jobs:
        if counts.get(job.name, 0) > 0 and job.replicas == counts[job.name]:
            decision[job.name] = job.allocation.copy()
            free -= job.allocation
    for job in jobs:
        if counts.get(job.name, 0) > 0 and job.name not in decision:
            row = fill_most_free(counts[job.name], free)
            if row is not None:
                decision[job.name] = row
    return Decision(decision)
