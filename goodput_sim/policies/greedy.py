"""Deterministic optimiser for :class:`AllocationProblem`: greedy GPU counts, then placement.

1. GPU counts: starting from nothing, repeatedly make the move (job j from R to R' GPUs) with the
   largest drop in the sum of inverse values per GPU added. Looking ahead to any R' (not just
   R + 1) lets a job jump over the restart-penalty cliff between keeping its row and changing it.
2. Placement: jobs keeping their GPU count keep their row; the others are packed, largest first,
   onto whole free nodes plus a best-fit remainder node that hosts no other distributed job
   (interference avoidance). A job that cannot be placed gives up GPUs one at a time.
3. Polish: hill-climb on the exact objective (:mod:`goodput_sim.policies.local_search`).
"""

from __future__ import annotations

import numpy as np
from numpy.typing import NDArray

from goodput_sim.policies.local_search import local_search
from goodput_sim.policies.problem import EPSILON, AllocationProblem


def count_costs(problem: AllocationProblem) -> NDArray[np.float64]:
    """(jobs x GPUs) inverse values ``1/(value + 1e-3)`` of each job at each GPU count under
    packed placement; keeping the current count keeps the row (no restart penalty)."""
    g = problem.gpus_per_node
    jobs = problem.num_jobs
    top = int(problem.caps.max()) if jobs else 0
    cost = np.full((jobs, top + 1), np.inf)
    kept = problem.current.sum(axis=1)
    kept_nodes = (problem.current > 0).sum(axis=1)
    for j, table in enumerate(problem.speedup_tables):
        cap = int(problem.caps[j])
        r = np.arange(cap + 1)
        n = np.minimum(-(-r // g), table.shape[0] - 1)
        value = table[n, r] / g * problem.penalties[j]
        if 0 < kept[j] <= cap:
            value[kept[j]] = table[min(kept_nodes[j], table.shape[0] - 1), kept[j]] / g
        value[0] = 0.0
        cost[j, : cap + 1] = 1.0 / (value + EPSILON)
    return cost


def whole_node_costs(problem: AllocationProblem, cost: NDArray[np.float64]) -> NDArray:
    """``cost`` with partial-node counts above one node ruled out (unless kept): a distributed
    job then takes whole nodes, which interference avoidance can always place."""
    g = problem.gpus_per_node
    r = np.arange(cost.shape[1])[None, :]
    kept = problem.current.sum(axis=1)[:, None]
    return np.where((r > g) & (r % g != 0) & (r != kept), np.inf, cost)


def greedy_counts(cost: NDArray[np.float64], total_gpus: int) -> NDArray[np.int64]:
    """GPU count per job: repeatedly the move with the largest cost drop per GPU added.

    The (jobs x counts) table of drops per GPU changes only in the moved job's row, so each
    step updates one row. Moves that no longer fit in the free GPUs are masked lazily, only when
    the best move is one of them: free GPUs only shrink, so a masked move never comes back.
    """
    jobs, width = cost.shape
    grid = np.arange(width)
    counts = np.zeros(jobs, dtype=np.int64)
    with np.errstate(invalid="ignore", divide="ignore"):
        drop = (cost[:, :1] - cost) / np.maximum(grid, 1)  # drop per GPU of moving from 0
        drop[:, 0] = -np.inf
        drop[~np.isfinite(drop)] = -np.inf
        free = total_gpus
        while free > 0 and jobs:
            j, target = divmod(int(np.argmax(drop)), width)
            if target - counts[j] > free:  # the best move no longer fits: mask all that don't
                drop[grid[None, :] - counts[:, None] > free] = -np.inf
                j, target = divmod(int(np.argmax(drop)), width)
            if not drop[j, target] > 1e-12:
                break
            free -= target - int(counts[j])
            counts[j] = target
            # From ``target`` only larger counts are moves; ``cost[j, target]`` is finite, so
            # unreachable counts (infinite cost) get a drop of -inf.
            drop[j, : target + 1] = -np.inf
            drop[j, target + 1 :] = (cost[j, target] - cost[j, target + 1 :]) / grid[
                1 : width - target
            ]
    return counts


def place(
    problem: AllocationProblem, counts: NDArray[np.int64], keep_rows: bool = True
) -> NDArray[np.int64]:
    """Rows for the chosen counts; counts that cannot be placed shrink until they fit. With
    ``keep_rows`` jobs whose count is unchanged keep their current row."""
    g = problem.gpus_per_node
    allocation = np.zeros_like(problem.current)
    keep = (counts == problem.current.sum(axis=1)) & (counts > 0) & keep_rows
    allocation[keep] = problem.current[keep]
    free = g - allocation.sum(axis=0)
    hosts_distributed = ((allocation > 0).sum(axis=1)[:, None] > 1) & (allocation > 0)
    taken = hosts_distributed.any(axis=0)
    order = sorted(np.flatnonzero(~keep & (counts > 0)), key=lambda j: (-counts[j], j))
    for j in order:
        for r in range(int(counts[j]), 0, -1):
            row = _pack(r, free, taken, g)
            if row is not None:
                allocation[j] = row
                free -= row
                if np.count_nonzero(row) > 1:
                    taken |= row > 0
                break
    return allocation


def _pack(replicas: int, free: NDArray, taken: NDArray, g: int) -> NDArray | None:
    """A row for ``replicas`` GPUs: one best-fit node if it fits, else whole empty nodes plus a
    best-fit remainder on nodes without another distributed job; None if impossible."""
    row = np.zeros_like(free)
    fits = np.flatnonzero(free >= replicas)
    if replicas <= g and fits.size:
        node = fits[np.argmin(free[fits])]
        row[node] = replicas
        return row
    open_nodes = np.flatnonzero(~taken & (free > 0))
    if free[open_nodes].sum() < replicas:
        return None
    # Fullest-free first keeps the job on as few nodes as possible.
    for node in sorted(open_nodes, key=lambda n: (-free[n], n)):
        take = min(int(free[node]), replicas - int(row.sum()))
        row[node] = take
        if row.sum() == replicas:
            break
    return row


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
    options = [greedy_counts(cost, total_gpus)]
    if not np.array_equal(whole, cost):
        options.append(greedy_counts(whole, total_gpus))
    if len(options) == 2 and np.array_equal(*options):
        options.pop()
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
