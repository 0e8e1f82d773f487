"""Placement helpers shared by the policies: turning GPU counts into GPUs-per-node rows."""

from __future__ import annotations

import numpy as np
from numpy.typing import NDArray

from goodput_sim.inputs.cluster import ClusterSpec
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


def keep_or_fill(
    jobs: list[JobView],
    counts: dict[str, int],
    cluster: ClusterSpec,
    on_type: dict[str, int] | None = None,
    prefer: dict[str, int] | None = None,
) -> Decision:
    """Rows for GPU counts per job: a running job whose count is unchanged keeps its row; the
    others, in the order of ``jobs``, take GPUs from the most-free nodes (left out if short),
    their node orders recorded. On a cluster of several GPU types a job takes its GPUs from one
    type: the one ``on_type`` names (an index in the cluster's type order; a job elsewhere moves
    there), else the first with room for all of them, in type order after the type ``prefer``
    names, if any."""
    on_type = on_type or {}
    prefer = prefer or {}
    free = cluster.capacity.copy()
    types = cluster.node_type_index if cluster.mixed else None
    decision: dict[str, NDArray[np.int64]] = {}
    orders: dict[str, tuple[int, ...]] = {}
    for job in jobs:
        wanted = on_type.get(job.name)
        stays = wanted is None or types is None or (types[job.allocation > 0] == wanted).all()
        if counts.get(job.name, 0) > 0 and job.replicas == counts[job.name] and stays:
            decision[job.name] = job.allocation.copy()
            free -= job.allocation
    for job in jobs:
        if counts.get(job.name, 0) > 0 and job.name not in decision:
            filled = _fill(
                counts[job.name], free, types, on_type.get(job.name), prefer.get(job.name)
            )
            if filled is not None:
                decision[job.name], orders[job.name] = filled
    return Decision(decision, node_orders=orders)


def _fill(
    needed: int,
    free: NDArray[np.int64],
    types: NDArray[np.int64] | None,
    only: int | None,
    first: int | None = None,
):
    """``fill_most_free`` on the whole cluster, on type ``only``, or on the first GPU type
    with room (type ``first``, then the others in order)."""
    if types is None:
        return fill_most_free(needed, free)
    order = list(range(int(types.max()) + 1))
    if first is not None:
        order.remove(first)
        order.insert(0, first)
    for gpu_type in order if only is None else (only,):
        mine = np.where(types == gpu_type, free, 0)
        filled = fill_most_free(needed, mine)
        if filled is not None:
            free -= filled[0]
            return filled
    return None


def one_type_rows(
    rows: NDArray[np.int64], cluster: ClusterSpec, preference: tuple[str, ...] = ()
) -> NDArray[np.int64]:
    """Allocation rows repaired to one GPU type each, as the reference repairs its
    heterogeneity-unaware Pollux (Sia SPEC 5.4): a job keeps the type holding most of its GPUs
    (ties: the earlier type in ``preference``, then in the cluster's order); its GPUs on other
    types idle for the round."""
    if not cluster.mixed or not len(rows):
        return rows
    types = cluster.node_type_index
    order = cluster.type_order
    ranked = sorted(
        order, key=lambda t: (preference.index(t) if t in preference else 99, order.index(t))
    )
    rank = np.array([ranked.index(t) for t in order])  # 0 = preferred
    per_type = np.stack([rows[:, types == k].sum(axis=1) for k in range(len(order))], axis=1)
    keys = per_type * len(order) + (len(order) - 1 - rank)  # most GPUs, then preferred
    keep = np.argmax(keys, axis=1)
    return np.where(types[None, :] == keep[:, None], rows, 0)
