"""The elastic optimiser's loops as they were written in numpy, before
:mod:`goodput_sim.policies.kernels` compiled them: the oracle the compiled versions must match
choice for choice."""

from __future__ import annotations

import heapq

import numpy as np
from numpy.typing import NDArray

from goodput_sim.inputs.cluster import distributed_cells
from goodput_sim.policies.local_search import _cost, _movers
from goodput_sim.policies.problem import AllocationProblem


def greedy_counts(
    cost: NDArray[np.float64],
    total_gpus: int,
    counts: NDArray[np.int64] | None = None,
    watch: NDArray[np.bool_] | None = None,
) -> tuple[NDArray[np.int64], NDArray[np.int64] | None]:
    """numpy version of :func:`goodput_sim.policies.greedy.greedy_counts`, a heap of per-job
    best moves."""
    jobs, width = cost.shape
    grid = np.arange(width)
    now = [0] * jobs if counts is None else [int(c) for c in counts]
    free = total_gpus - sum(now)
    diverged = None

    def best_move(j: int, limit: int) -> tuple[float, int, int] | None:
        """(-drop per GPU, job, target) of job ``j``'s best move adding at most ``limit``."""
        start, stop = now[j], min(width, now[j] + limit + 1)
        if stop <= start + 1:
            return None
        drops = (cost[j, start] - cost[j, start + 1 : stop]) / grid[1 : stop - start]
        k = int(drops.argmax())
        return (-float(drops[k]), j, start + 1 + k) if drops[k] > -np.inf else None

    with np.errstate(invalid="ignore", divide="ignore"):
        heap = [move for j in range(jobs) if (move := best_move(j, width)) is not None]
        heapq.heapify(heap)
        while free > 0 and heap:
            negative_drop, j, target = heap[0]
            if target - now[j] > free:
                move = best_move(j, free)
                if move is None:
                    heapq.heappop(heap)
                else:
                    heapq.heapreplace(heap, move)
                continue
            if not -negative_drop > 1e-12:
                break
            if diverged is None and watch is not None and watch[j, target]:
                diverged = np.array(now, dtype=np.int64)
            free -= target - now[j]
            now[j] = target
            move = best_move(j, width)
            if move is None:
                heapq.heappop(heap)
            else:
                heapq.heapreplace(heap, move)
    return np.array(now, dtype=np.int64), diverged


def place(
    problem: AllocationProblem, counts: NDArray[np.int64], keep_rows: bool = True
) -> NDArray[np.int64]:
    """numpy version of :func:`goodput_sim.policies.greedy.place`."""
    g = problem.largest_node
    current = problem.current
    keep = (counts == current.sum(axis=1)) & (counts > 0) & keep_rows
    allocation = np.where(keep[:, None], current, 0)
    free = problem.capacity - allocation.sum(axis=0)
    avoid = problem.interference_avoidance
    taken = distributed_cells(allocation).any(axis=0) & avoid
    wanted = counts.tolist()
    order = sorted(np.flatnonzero(~keep & (counts > 0)).tolist(), key=lambda j: (-wanted[j], j))
    for j in order:
        # The most GPUs that fit: on one node (at most g), or across the open nodes.
        open_gpus = int(free[~taken].sum())
        replicas = min(wanted[j], max(open_gpus, min(g, int(free.max(initial=0)))))
        if replicas > 0:
            nodes, gpus = _pack(replicas, free, taken, g)
            allocation[j, nodes] = gpus
            free[nodes] -= gpus
            taken[nodes] |= avoid and len(nodes) > 1
    return allocation


def _pack(
    replicas: int, free: NDArray[np.int64], taken: NDArray[np.bool_], g: int
) -> tuple[NDArray[np.int64], NDArray[np.int64]]:
    """Nodes and GPUs for ``replicas`` GPUs, as the compiled placement picks them."""
    if replicas <= g:
        fits = np.flatnonzero(free >= replicas)
        if len(fits):
            return fits[np.argmin(free[fits])][None], np.array([replicas])
    open_nodes = np.flatnonzero((free > 0) & ~taken)
    order = open_nodes[np.lexsort((open_nodes, -free[open_nodes]))]
    filled = np.cumsum(free[order])
    last = int(np.searchsorted(filled, replicas))
    gpus = free[order[: last + 1]].copy()
    gpus[last] = replicas - (filled[last - 1] if last else 0)
    return order[: last + 1], gpus


def _best_transfer(problem, best, cost):
    """numpy version of :func:`goodput_sim.policies.local_search._best_transfer`."""
    jobs = best.shape[0]
    capacity = problem.capacity
    current = problem.current
    used = best > 0
    free = capacity - best.sum(axis=0)
    count = used.sum(axis=1)
    distributed = count > 1
    crowd = (used & distributed[:, None]).sum(axis=0)
    home = np.argmax(used, axis=1)  # the node of a single-node job
    differ = (best != current).sum(axis=1)
    replicas = best.sum(axis=1)
    receivers, givers = _movers(problem, cost, replicas, count)
    # Candidate moves; nodes that look alike are listed once: among nodes with free GPUs, one
    # per (free, distributed jobs) class plus the receiver's own; among a giver's nodes, only
    # the first it fills completely.
    open_nodes = np.flatnonzero(free > 0)
    node_class = free[open_nodes] * (jobs + 1) + crowd[open_nodes]  # crowd <= jobs
    _, first = np.unique(node_class, return_index=True)
    representatives = open_nodes[np.sort(first)]
    own, own_n = np.nonzero(used[receivers] & (free > 0)[None, :])
    add_b = np.concatenate([np.repeat(receivers, len(representatives)), receivers[own]])
    add_n = np.concatenate([np.tile(representatives, len(receivers)), own_n])
    full = best[givers] == capacity[None, :]
    cells = used[givers] & (~full | (full & (np.cumsum(full, axis=1) == 1)))
    give_i, give_n = np.nonzero(cells)
    give_a = givers[give_i]
    take_b = np.tile(receivers, len(give_a))
    give_a, give_n = np.repeat(give_a, len(receivers)), np.repeat(give_n, len(receivers))
    other = take_b != give_a
    giver = np.concatenate([np.full(len(add_b), -1), give_a[other]])
    receiver = np.concatenate([add_b, take_b[other]])
    node = np.concatenate([add_n, give_n[other]])
    a = np.maximum(giver, 0)
    available = np.where(giver >= 0, best.ravel()[a * best.shape[1] + node], free[node])
    # Each candidate moves one GPU, or all available ones where that is more than one.
    several = available > 1
    moves = np.stack([giver, receiver, node, a])
    giver, receiver, node, a = np.concatenate([moves, moves[:, several]], axis=1)
    gives = giver >= 0
    amount = np.concatenate([np.ones(len(available), dtype=np.int64), available[several]])
    if not len(amount):
        return None, 0.0
    b = receiver
    # Per-cell values are read through flat indices (much cheaper than 2-D fancy indexing).
    nodes = best.shape[1]
    cell_b, cell_a = b * nodes + node, a * nodes + node
    used_flat, best_flat, current_flat = used.ravel(), best.ravel(), current.ravel()
    # Receiver after the move.
    had = used_flat[cell_b]
    held_b, current_b = best_flat[cell_b], current_flat[cell_b]
    count_b = count[b] + ~had
    dist_b = count_b > 1
    differ_b = differ[b] - (held_b != current_b) + (held_b + amount != current_b)
    # Giver after the move (ignored where the GPUs come from the free pool).
    held_a, current_a = best_flat[cell_a], current_flat[cell_a]
    leaves = gives & (amount == held_a)
    count_a = count[a] - leaves
    dist_a = count_a > 1
    differ_a = differ[a] - (held_a != current_a) + (held_a - amount != current_a)
    # Interference avoidance: at most one distributed job on the move's node, and on the
    # receiver's home node if the receiver becomes distributed.
    on_node = crowd[node] - (distributed[b] & had) + dist_b
    on_node = on_node - np.where(gives, distributed[a] & used_flat[cell_a], 0)
    on_node = on_node + np.where(gives, dist_a & ~leaves, 0)
    newly = dist_b & ~distributed[b]
    home_b = home[b]
    a_leaves_home = gives & used_flat[a * nodes + home_b] & distributed[a] & ~dist_a
    on_home = crowd[home_b] + 1 - a_leaves_home
    ok = (on_node <= 1) & (~newly | (on_home <= 1)) | (not problem.interference_avoidance)
    ok &= replicas[b] + amount <= problem.caps[b]
    delta = _cost(problem, b, replicas[b] + amount, count_b, differ_b > 0) - cost[b]
    left = np.where(gives, replicas[a] - amount, replicas[a])
    delta_a = _cost(problem, a, left, count_a, differ_a > 0) - cost[a]
    delta = np.where(ok, delta + np.where(gives, delta_a, 0.0), np.inf)
    top = int(np.argmin(delta))
    if not np.isfinite(delta[top]):
        return None, 0.0
    out = best.copy()
    out[receiver[top], node[top]] += amount[top]
    if gives[top]:
        out[giver[top], node[top]] -= amount[top]
    return out, float(delta[top])
