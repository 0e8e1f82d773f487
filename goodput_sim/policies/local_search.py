"""Hill-climbing on the exact allocation objective, with moves scored incrementally.

A move hands ``amount`` GPUs on one node to a job, taken from the free GPUs or from another
job. Only the two rows involved change, so feasibility (caps, interference avoidance; node
capacity holds by construction) and the objective's sum of inverse values are updated from those
rows alone: O(moves x nodes) per step instead of O(moves x jobs x nodes).
A second kind of move puts a job back on its current row (avoiding its restart penalty), taking
the GPUs it needs from jobs that are moving anyway; those few are scored in full.
"""

from __future__ import annotations

import numpy as np
from numpy.typing import NDArray

from goodput_sim.policies.problem import EPSILON, AllocationProblem


class _Scorer:
    """Per-job values of rows, from the problem's speedup tables padded into one array."""

    def __init__(self, problem: AllocationProblem):
        self.problem = problem
        tables = problem.speedup_tables
        max_n = max(t.shape[0] for t in tables)
        max_r = max(t.shape[1] for t in tables)
        self.table = np.zeros((len(tables), max_n, max_r))
        for j, t in enumerate(tables):
            self.table[j, : t.shape[0], : t.shape[1]] = t
        self.scale = 1.0 / problem.gpus_per_node

    def inverse(self, jobs, replicas, nodes, changed) -> NDArray[np.float64]:
        """``1/(value + 1e-3)`` of jobs at (replicas, nodes), changed rows penalised."""
        p = self.problem
        r = np.minimum(replicas, self.table.shape[2] - 1)
        n = np.minimum(nodes, self.table.shape[1] - 1)
        value = np.where(replicas <= p.caps[jobs], self.table[jobs, n, r], 0.0) * self.scale
        value = value * np.where(changed, p.penalties[jobs], 1.0)
        return 1.0 / (value + EPSILON)


def _distributed_rows(rows: NDArray[np.int64]) -> NDArray[np.bool_]:
    used = rows > 0
    return used & (used.sum(axis=-1, keepdims=True) > 1)


def _best_transfer(problem, scorer, best, inverse):
    """The best feasible single move and its change of the inverse-value sum."""
    jobs, nodes = best.shape
    free = problem.gpus_per_node - best.sum(axis=0)
    # Moves: (giver or -1 for free GPUs, receiver, node, amount). Nodes that look alike to
    # every move are listed once: among nodes with free GPUs, one per (free, distributed jobs)
    # class plus the receiver's own; among a giver's nodes, only the first it fills completely.
    crowd = _distributed_rows(best).sum(axis=0)
    open_nodes = np.flatnonzero(free > 0)
    _, first = np.unique(
        np.column_stack([free[open_nodes], crowd[open_nodes]]), axis=0, return_index=True
    )
    representatives = open_nodes[np.sort(first)]
    add_b = np.concatenate(
        [np.repeat(np.arange(jobs), len(representatives)), np.nonzero((best > 0) & (free > 0))[0]]
    )
    add_n = np.concatenate([np.tile(representatives, jobs), np.nonzero((best > 0) & (free > 0))[1]])
    full = best == problem.gpus_per_node
    first_full = full & (np.cumsum(full, axis=1) == 1)
    give_a, give_n = np.nonzero((best > 0) & (~full | first_full))
    take_b = np.tile(np.arange(jobs), len(give_a))
    give_a, give_n = np.repeat(give_a, jobs), np.repeat(give_n, jobs)
    keep = take_b != give_a
    give_a, give_n, take_b = give_a[keep], give_n[keep], take_b[keep]
    giver = np.concatenate([np.full(len(add_b), -1), give_a])
    receiver = np.concatenate([add_b, take_b])
    node = np.concatenate([add_n, give_n])
    giver, receiver, node = _distinct_moves(problem, best, free, giver, receiver, node)
    gives = giver >= 0
    available = np.where(gives, best[np.maximum(giver, 0), node], free[node])
    giver, receiver, node = (np.tile(a, 2) for a in (giver, receiver, node))
    amount = np.concatenate([np.ones(len(available), dtype=np.int64), available])
    if not len(amount):
        return None, 0.0
    moves = np.arange(len(amount))
    new_b = best[receiver].copy()
    new_b[moves, node] += amount
    gives = giver >= 0
    new_a = best[np.maximum(giver, 0)].copy()
    new_a[moves, node] -= np.where(gives, amount, 0)
    # Interference avoidance: at most one distributed job per node after the move.
    crowd = _distributed_rows(best).sum(axis=0)[None, :]
    crowd = crowd - _distributed_rows(best[receiver]) + _distributed_rows(new_b)
    crowd = crowd - np.where(gives[:, None], _distributed_rows(best[np.maximum(giver, 0)]), 0)
    crowd = crowd + np.where(gives[:, None], _distributed_rows(new_a), 0)
    ok = (crowd <= 1).all(axis=1) & (new_b.sum(axis=1) <= problem.caps[receiver])
    current = problem.current
    delta = (
        scorer.inverse(
            receiver,
            new_b.sum(axis=1),
            (new_b > 0).sum(axis=1),
            (new_b != current[receiver]).any(axis=1),
        )
        - inverse[receiver]
    )
    giver_index = np.maximum(giver, 0)
    delta_a = (
        scorer.inverse(
            giver_index,
            new_a.sum(axis=1),
            (new_a > 0).sum(axis=1),
            (new_a != current[giver_index]).any(axis=1),
        )
        - inverse[giver_index]
    )
    delta = delta + np.where(gives, delta_a, 0.0)
    delta = np.where(ok, delta, np.inf)
    top = int(np.argmin(delta))
    if not np.isfinite(delta[top]):
        return None, 0.0
    out = best.copy()
    out[receiver[top], node[top]] += amount[top]
    if gives[top]:
        out[giver[top], node[top]] -= amount[top]
    return out, float(delta[top])


def _distinct_moves(problem, best, free, giver, receiver, node):
    """Drop moves equivalent to one already listed: on a large cluster most nodes look alike
    to a move (same GPUs of giver and receiver there, same free GPUs, same number of distributed
    jobs, same relation to the current rows), and the first such node stands for all."""
    crowd = _distributed_rows(best).sum(axis=0)
    source = np.maximum(giver, 0)
    current = problem.current
    keys = np.column_stack(
        [
            giver,
            receiver,
            np.where(giver >= 0, best[source, node], -1),
            best[receiver, node],
            free[node],
            crowd[node],
            current[receiver, node] - best[receiver, node],
            np.where(giver >= 0, current[source, node] - best[source, node], 0),
        ]
    )
    _, first = np.unique(keys, axis=0, return_index=True)
    first.sort()
    return giver[first], receiver[first], node[first]


def _restore(problem: AllocationProblem, allocation, job: int, changed) -> NDArray[np.int64]:
    """``allocation`` with ``job`` back on its current row, taking the GPUs it needs from other
    jobs that are moving anyway (lowest priority first); unchanged if that is not enough."""
    out = allocation.copy()
    out[job] = problem.current[job]
    over = out.sum(axis=0) - problem.gpus_per_node
    for node in np.flatnonzero(over > 0):
        for other in np.flatnonzero(changed)[::-1]:
            if other != job and over[node] > 0:
                take = min(int(out[other, node]), int(over[node]))
                out[other, node] -= take
                over[node] -= take
        if over[node] > 0:
            return allocation
    return out


def local_search(
    problem: AllocationProblem, allocation: NDArray[np.int64], max_steps: int = 8
) -> NDArray[np.int64]:
    """Improve ``allocation`` by the best improving move until none is left (or ``max_steps``)."""
    if problem.num_jobs == 0:
        return allocation
    scorer = _Scorer(problem)
    jobs = np.arange(problem.num_jobs)
    best = allocation.copy()
    score = problem.objective(best[None])[0]
    for _ in range(max_steps):
        inverse = scorer.inverse(
            jobs, best.sum(axis=1), (best > 0).sum(axis=1), (best != problem.current).any(axis=1)
        )
        total = inverse.sum()
        moved, delta = _best_transfer(problem, scorer, best, inverse)
        candidate, candidate_score = best, score
        if moved is not None and delta < 0:
            candidate, candidate_score = moved, problem.num_jobs / (total + delta)
        changed = (best != problem.current).any(axis=1)
        restored = [_restore(problem, best, j, changed) for j in np.flatnonzero(changed)]
        restored = [r for r in restored if problem.feasible(r)]
        if restored:
            stack = np.array(restored)
            values = problem.objective(stack)
            top = int(np.argmax(values))
            if values[top] > candidate_score:
                candidate, candidate_score = stack[top], values[top]
        if candidate_score <= score * (1 + 1e-12):
            break
        best, score = candidate, candidate_score
    return best
