"""Placement helpers shared by the policies: turning GPU counts into GPUs-per-node rows."""

from __future__ import annotations

import numpy as np
from numpy.typing import NDArray

from goodput_sim.cluster import ClusterSpec
from goodput_sim.policies.base import Decision, JobView


def fill_most_free(
    needed: int, free: NDArray[np.int64]
) -> tuple[NDArray[np.int64], tuple[int, ...]] | None:
    """Take GPUs from the node with the most free GPUs, repeatedly (ties: lowest node id), as the
    reference baselines do: the row and the nodes in the order they were filled. Updates
    ``free`` in place; None (and ``free`` untouched) if short."""
    if needed > free.sum():
        return None
    row = np.zeros_like(free)
    order = []
    while needed > 0:
        node = int(np.argmax(free))
        take = min(int(free[node]), needed)
        row[node] += take
        free[node] -= take
        needed -= take
        order.append(node)
    return row, tuple(order)


def keep_or_fill(jobs: list[JobView], counts: dict[str, int], cluster: ClusterSpec) -> Decision:
    """Rows for GPU counts per job: a running job whose count is unchanged keeps its row; the
    others, in the order of ``jobs``, take GPUs from the most-free nodes (left out if short),
    their node orders recorded."""
    free = cluster.capacity.copy()
    decision: dict[str, NDArray[np.int64]] = {}
    orders: dict[str, tuple[int, ...]] = {}
    for job in jobs:
        if counts.get(job.name, 0) > 0 and job.replicas == counts[job.name]:
            decision[job.name] = job.allocation.copy()
            free -= job.allocation
    for job in jobs:
        if counts.get(job.name, 0) > 0 and job.name not in decision:
            filled = fill_most_free(counts[job.name], free)
            if filled is not None:
                decision[job.name], orders[job.name] = filled
    return Decision(decision, node_orders=orders)
