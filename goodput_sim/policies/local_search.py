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

from goodput_sim.policies.problem import EPSILON, AllocationProblem


def _cost(problem: AllocationProblem, jobs, replicas, nodes, changed) -> NDArray[np.float64]:
    """Costs (p = -1: ``1/(value + 1e-3)``) of jobs at (replicas, nodes), changed rows
    penalised."""
    return problem.fairness.cost(problem.job_values(jobs, replicas, nodes, changed))


def _best_transfer(problem, best, cost):
    """The best feasible single move and its change of the cost-value sum.

    Every quantity a move changes (the two jobs' GPUs, nodes used and changed-row flags, and
    the number of distributed jobs on the nodes involved) is computed per move from per-job and
    per-node counts (:func:`goodput_sim.policies.kernels.transfer_moves`), so scoring costs
    O(moves) whatever the cluster size. Nodes that look alike are tried once: among nodes with
    free GPUs, one per (free, distributed jobs) class plus the receiver's own; among a giver's
    nodes, only the first it fills completely. With more jobs than ``problem.candidates``,
    receivers and givers are that many jobs each: those one more GPU helps most and one fewer
    hurts least. The first of equally good moves wins."""
    from goodput_sim.policies.kernels import best_harmonic_transfer, transfer_moves

    receivers, givers = _movers(problem, cost, best.sum(axis=1), (best > 0).sum(axis=1))
    floors = _NO_FLOORS if problem.floors is None else problem.floors
    moves = (
        best,
        problem.current,
        problem.capacity,
        receivers,
        givers,
        problem.caps,
        bool(problem.interference_avoidance),
        problem.padded_speedups,
        np.asarray(floors, dtype=np.int64),
        np.asarray(problem.penalties, dtype=np.float64),
        problem.largest_node,
    )
    if problem.fairness.p == -1:  # the default: scored in the kernel, as below
        found, a, b, n, amount, delta = best_harmonic_transfer(*moves, cost, EPSILON)
        return (_moved(best, a, b, n, amount), float(delta)) if found else (None, 0.0)
    giver, receiver, node, amount, ok, value_b, value_a = transfer_moves(*moves)
    if not len(amount):
        return None, 0.0
    gives = giver >= 0
    delta = problem.fairness.cost(value_b) - cost[receiver]
    delta_a = problem.fairness.cost(value_a) - cost[np.maximum(giver, 0)]
    delta = np.where(ok, delta + np.where(gives, delta_a, 0.0), np.inf)
    top = int(np.argmin(delta))
    if not np.isfinite(delta[top]):
        return None, 0.0
    return _moved(best, giver[top], receiver[top], node[top], amount[top]), float(delta[top])


def _moved(best, giver: int, receiver: int, node: int, amount: int) -> NDArray[np.int64]:
    """``best`` with ``amount`` GPUs on ``node`` handed to ``receiver`` by ``giver`` (-1: from
    the free GPUs)."""
    out = best.copy()
    out[receiver, node] += amount
    if giver >= 0:
        out[giver, node] -= amount
    return out


_NO_FLOORS = np.zeros(0, dtype=np.int64)


def _movers(problem: AllocationProblem, cost, replicas, count):
    """Receivers and givers of moves, in job order: every job, or with more jobs than
    ``problem.candidates`` that many receivers (largest drop in cost with one GPU more, on
    its nodes or one more) and givers (smallest rise with one GPU fewer)."""
    everyone = np.arange(problem.num_jobs)
    limit = problem.candidates
    if problem.num_jobs <= limit:
        return everyone, everyone
    more = np.minimum(
        _cost(problem, everyone, replicas + 1, np.maximum(count, 1), True),
        _cost(problem, everyone, replicas + 1, count + 1, True),
    )
    fewer = _cost(problem, everyone, replicas - 1, count, True)
    holders = np.flatnonzero(replicas > 0)
    receivers = np.argsort(more - cost, kind="stable")[:limit]
    givers = holders[np.argsort((fewer - cost)[holders], kind="stable")[:limit]]
    return np.sort(receivers), np.sort(givers)


def _restorations(problem: AllocationProblem, allocation, changed):
    """For each job whose row changed (in job order; above ``problem.candidates`` of them, those
    :func:`_restorable` picks), ``allocation`` with that job back on its current row, taking
    the GPUs it needs from the other changed jobs (lowest priority first); only those that fit
    and are feasible. Returns their objective values and a function that builds the allocation
    of one of them.

    Only the restored job and its donors change, on the nodes it returns to, so each candidate
    is described by its per-job counts (GPUs, nodes used, changed row; compiled:
    :func:`goodput_sim.policies.kernels.restoration_counts`): memory O(candidates x (jobs +
    nodes)), not candidates x jobs x nodes, and the values equal the objective of the full
    allocations exactly."""
    from goodput_sim.policies.kernels import restoration_counts

    current = problem.current
    moved = _restorable(problem, allocation, changed)
    ok, replicas, nodes_used, differ, gifts = restoration_counts(
        allocation,
        current,
        problem.capacity,
        moved,
        np.flatnonzero(changed)[::-1].copy(),  # donors: lowest priority first
        problem.caps,
        bool(problem.interference_avoidance),
    )
    keep = np.flatnonzero(ok)
    values = (
        problem.objective_of(replicas[keep], nodes_used[keep], (differ[keep] > 0))
        if len(keep)
        else np.zeros(0)
    )

    def build(index: int) -> NDArray[np.int64]:
        """The full allocation of the ``index``-th feasible candidate."""
        k = keep[index]
        out = allocation.copy()
        out[moved[k]] = current[moved[k]]
        _, donor, node, given = gifts[gifts[:, 0] == k].T
        np.subtract.at(out, (donor, node), given)
        return out

    return values, build


def _restorable(problem: AllocationProblem, allocation, changed) -> NDArray[np.int64]:
    """Jobs to try putting back on their current row, in job order: every changed job, or with
    more than ``problem.candidates`` that many, those their own restoration helps most."""
    moved = np.flatnonzero(changed)
    if len(moved) <= problem.candidates:
        return moved
    current = problem.current[moved]
    now = _cost(
        problem, moved, allocation[moved].sum(axis=1), (allocation[moved] > 0).sum(axis=1), True
    )
    back = _cost(problem, moved, current.sum(axis=1), (current > 0).sum(axis=1), False)
    return np.sort(moved[np.argsort(back - now, kind="stable")[: problem.candidates]])


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
        if changed.any():
            values, build = _restorations(problem, best, changed)
            if len(values):
                top = int(np.argmax(values))
                if values[top] > candidate_score:
                    candidate, candidate_score = build(top), values[top]
        if candidate_score <= score * (1 + 1e-12):
            break
        best, score = candidate, candidate_score
    return best
