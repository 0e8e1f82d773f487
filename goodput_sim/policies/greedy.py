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

import numpy as np
from numpy.typing import NDArray

from goodput_sim.inputs.cluster import distributed_cells, packed_nodes
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

    A move changes only the moved job's best, and free GPUs only shrink, so a best move that no
    longer fits is replaced when it comes first (compiled: :mod:`.kernels`)."""
    from goodput_sim.policies.kernels import greedy_counts_kernel

    jobs = cost.shape[0]
    now = np.zeros(jobs, dtype=np.int64) if counts is None else np.array(counts, dtype=np.int64)
    mask = _NO_WATCH if watch is None else np.ascontiguousarray(watch, dtype=np.bool_)
    table = np.ascontiguousarray(cost, dtype=np.float64)
    now, diverged, found = greedy_counts_kernel(
        table, int(total_gpus), now, mask, watch is not None
    )
    return now, diverged if found else None


_NO_WATCH = np.zeros((1, 1), dtype=np.bool_)


def place(
    problem: AllocationProblem, counts: NDArray[np.int64], keep_rows: bool = True
) -> NDArray[np.int64]:
    """Rows for the chosen counts; counts that cannot be placed shrink until they fit. With
    ``keep_rows`` jobs whose count is unchanged keep their current row.

    The others, most GPUs first (ties to the lowest job), take the best-fit node (fewest free
    GPUs that hold them, then lowest id) if one node holds them, else the fullest open nodes
    (not taken by another distributed job; ties to the lowest id), which keeps the job on as
    few nodes as possible (compiled: :mod:`.kernels`)."""
    from goodput_sim.policies.kernels import place_kernel

    current = problem.current
    keep = (counts == current.sum(axis=1)) & (counts > 0) & keep_rows
    allocation = np.where(keep[:, None], current, 0).astype(np.int64, copy=False)
    free = (problem.capacity - allocation.sum(axis=0)).astype(np.int64, copy=False)
    avoid = bool(problem.interference_avoidance)
    taken = distributed_cells(allocation).any(axis=0) & avoid
    wanted = np.asarray(counts, dtype=np.int64)
    moving = np.flatnonzero(~keep & (counts > 0))
    order = moving[np.lexsort((moving, -wanted[moving]))]
    return place_kernel(allocation, free, taken, order, wanted, problem.largest_node, avoid)


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
