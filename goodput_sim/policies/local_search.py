"""Hill-climbing on the exact allocation objective, with moves scored incrementally.

A move hands ``amount`` GPUs on one node to a job, taken from the free GPUs or from another
job. Only the two rows involved change, so feasibility (caps, interference avoidance; node
capacity holds by construction) and the objective (a sum of per-job costs) are updated from
per-job and per-node counts: O(moves) per step whatever the cluster size.
A second kind of move puts a job back on its current row (avoiding its restart penalty), taking
the GPUs it needs from jobs that are moving anyway; those few are scored in full.
"""

from __future__ import annotations

import numpy as np
from numpy.typing import NDArray

from goodput_sim.policies.problem import AllocationProblem


def _cost(problem: AllocationProblem, jobs, replicas, nodes, changed) -> NDArray[np.float64]:
    """Costs (p = -1: ``1/(value + 1e-3)``) of jobs at (replicas, nodes), changed rows
    penalised."""
    return problem.fairness.cost(problem.job_values(jobs, replicas, nodes, changed))


def _best_transfer(problem, best, cost):
    """The best feasible single move and its change of the cost-value sum.

    Every quantity a move changes (the two jobs' GPUs, nodes used and changed-row flags, and
    the number of distributed jobs on the nodes involved) is computed per move from per-job and
    per-node counts, so scoring costs O(moves) whatever the cluster size."""
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
    # Candidate moves; nodes that look alike are listed once: among nodes with free GPUs, one
    # per (free, distributed jobs) class plus the receiver's own; among a giver's nodes, only
    # the first it fills completely.
    open_nodes = np.flatnonzero(free > 0)
    node_class = free[open_nodes] * (jobs + 1) + crowd[open_nodes]  # crowd <= jobs
    _, first = np.unique(node_class, return_index=True)
    representatives = open_nodes[np.sort(first)]
    own_b, own_n = np.nonzero(used & (free > 0)[None, :])
    add_b = np.concatenate([np.repeat(np.arange(jobs), len(representatives)), own_b])
    add_n = np.concatenate([np.tile(representatives, jobs), own_n])
    full = best == capacity[None, :]
    give_a, give_n = np.nonzero(used & (~full | (full & (np.cumsum(full, axis=1) == 1))))
    take_b = np.tile(np.arange(jobs), len(give_a))
    give_a, give_n = np.repeat(give_a, jobs), np.repeat(give_n, jobs)
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


def _restorations(problem: AllocationProblem, allocation, changed) -> NDArray[np.int64]:
    """For each job whose row changed (in job order), ``allocation`` with that job back on its
    current row, taking the GPUs it needs from the other changed jobs (lowest priority first);
    only those that fit and are feasible, as a (candidates x jobs x nodes) stack."""
    moved = np.flatnonzero(changed)
    out = np.repeat(allocation[None], len(moved), axis=0)
    out[np.arange(len(moved)), moved] = problem.current[moved]
    over = np.maximum(out.sum(axis=1) - problem.capacity, 0)  # (candidates x nodes)
    donors = moved[::-1]
    held = out[:, donors, :] * (donors[None, :] != moved[:, None])[:, :, None]
    # Each donor in turn gives what is still missing on each node, up to what it holds.
    take = np.minimum(held, np.maximum(over[:, None, :] - (np.cumsum(held, axis=1) - held), 0))
    out[:, donors, :] -= take
    fits = (take.sum(axis=1) >= over).all(axis=1)
    out = out[fits]
    return out[problem.feasible_each(out)]


def local_search(
    problem: AllocationProblem, allocation: NDArray[np.int64], max_steps: int = 8
) -> NDArray[np.int64]:
    """Improve ``allocation`` by the best improving move until none is left (or ``max_steps``)."""
    if problem.num_jobs == 0:
        return allocation
    jobs = np.arange(problem.num_jobs)
    best = allocation.copy()
    score = None
    for _ in range(max_steps):
        changed = (best != problem.current).any(axis=1)
        cost = _cost(problem, jobs, best.sum(axis=1), (best > 0).sum(axis=1), changed)
        total = cost.sum()
        if score is None:
            score = problem.fairness.score(total, problem.num_jobs)
        moved, delta = _best_transfer(problem, best, cost)
        candidate, candidate_score = best, score
        if moved is not None and delta < 0:
            candidate, candidate_score = (
                moved,
                problem.fairness.score(total + delta, problem.num_jobs),
            )
        stack = _restorations(problem, best, changed) if changed.any() else ()
        if len(stack):
            values = problem.objective(stack)
            top = int(np.argmax(values))
            if values[top] > candidate_score:
                candidate, candidate_score = stack[top], values[top]
        if candidate_score <= score * (1 + 1e-12):
            break
        best, score = candidate, candidate_score
    return best
