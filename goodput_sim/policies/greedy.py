"""Deterministic optimiser for :class:`AllocationProblem`: greedy GPU counts, then placement.

1. GPU counts: starting from nothing, repeatedly make the move (job j from R to R' GPUs) with the
   largest drop in the sum of inverse values per GPU added. Looking ahead to any R' (not just
   R + 1) lets a job jump over the restart-penalty cliff between keeping its row and changing it.
2. Placement: jobs keeping their GPU count keep their row; the others, largest first, go to the
   best-fitting single node, or else across the most-free nodes that host no other distributed
   job (interference avoidance). A job that cannot be placed gives up GPUs one at a time.
3. Polish: hill-climb on the exact objective (:mod:`goodput_sim.policies.local_search`).
"""

from __future__ import annotations

import heapq

import numpy as np
from numpy.typing import NDArray

from goodput_sim.cluster import distributed_cells, packed_nodes
from goodput_sim.policies.local_search import local_search
from goodput_sim.policies.problem import AllocationProblem


def count_costs(problem: AllocationProblem) -> NDArray[np.float64]:
    """(jobs x GPUs) costs (p = -1: inverse values ``1/(value + 1e-3)``) of each job at each
    GPU count under packed placement; keeping the current count keeps the row (no restart
    penalty)."""
    g = problem.largest_node
    table = problem.padded_speedups
    jobs, rows, width = table.shape
    r = np.arange(width)
    packed = np.minimum(packed_nodes(r, g), rows - 1)
    value = table[:, packed, r] / g * problem.penalties[:, None]
    kept = problem.current.sum(axis=1)
    kept_nodes = np.minimum((problem.current > 0).sum(axis=1), rows - 1)
    keeps = np.flatnonzero((kept > 0) & (kept <= problem.caps))
    value[keeps, kept[keeps]] = table[keeps, kept_nodes[keeps], kept[keeps]] / g
    value[:, 0] = 0.0
    cost = problem.fairness.cost(value)
    cost[r[None, :] > problem.caps[:, None]] = np.inf
    if problem.floors is not None:
        cost[(r[None, :] > 0) & (r[None, :] < problem.floors[:, None])] = np.inf
    return cost


def whole_node_costs(problem: AllocationProblem, cost: NDArray[np.float64]) -> NDArray:
    """``cost`` with counts above one node that no set of whole nodes makes up ruled out
    (unless kept): a distributed job then takes whole nodes, which interference avoidance can
    always place."""
    r = np.arange(cost.shape[1])[None, :]
    kept = problem.current.sum(axis=1)[:, None]
    partial = (r > problem.largest_node) & ~problem.whole_node_counts[None, : cost.shape[1]]
    return np.where(partial & (r != kept), np.inf, cost)


def greedy_counts(
    cost: NDArray[np.float64],
    total_gpus: int,
    counts: NDArray[np.int64] | None = None,
    watch: NDArray[np.bool_] | None = None,
) -> tuple[NDArray[np.int64], NDArray[np.int64] | None]:
    """GPU count per job: from ``counts`` (default none), repeatedly the move with the largest
    cost drop per GPU added (ties to the lowest job, then the fewest GPUs). Also returns the
    counts just before the first move onto an entry of the ``watch`` mask (None if there is
    none): another cost table that differs from ``cost`` only on watched entries makes the same
    moves up to there, so its run can resume from them.

    Each job's best move is kept in a heap; a move changes only the moved job's best, and free
    GPUs only shrink, so a best move that no longer fits is replaced when it reaches the top.
    """
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
    """Rows for the chosen counts; counts that cannot be placed shrink until they fit. With
    ``keep_rows`` jobs whose count is unchanged keep their current row."""
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
    """Nodes and GPUs for ``replicas`` GPUs (which fit): the best-fit node (fewest free GPUs
    that hold them, then lowest id) if one node holds them, else the fullest-free open nodes
    (not ``taken`` by another distributed job; ties to the lowest id), which keeps the job on
    as few nodes as possible."""
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


def solve_greedy(problem: AllocationProblem, total_gpus: int) -> NDArray[np.int64]:
    """Allocation matrix for ``problem``.

    Candidates: greedy counts (free or whole-node) placed keeping unchanged rows or repacking
    everything (fragmentation can block the first). The best of them on the exact objective and
    the current allocation (whose small changes avoid restart penalties) are both polished by
    local search; the better result wins.
    """
    if problem.num_jobs == 0:
        return problem.current.copy()
    cost = count_costs(problem)
    whole = whole_node_costs(problem, cost)
    counts, diverged = greedy_counts(cost, total_gpus, watch=whole != cost)
    options = [counts]
    if diverged is not None:  # the whole-node run differs from here on
        whole_counts, _ = greedy_counts(whole, total_gpus, counts=diverged)
        if not np.array_equal(whole_counts, counts):
            options.append(whole_counts)
    candidates = []
    for counts in options:
        candidates += [place(problem, counts), place(problem, counts, keep_rows=False)]
    stack = np.array(candidates)
    starts = [stack[int(np.argmax(problem.objective(stack)))]]
    current = problem.current
    if not np.array_equal(starts[0], current) and problem.feasible(current):
        starts.append(current)  # small changes to the current allocation
    polished = np.array([local_search(problem, start) for start in starts])
    return polished[int(np.argmax(problem.objective(polished)))]
