"""The Gavel max-min fairness LP and its round-based realisation.

Optimality on random instances is checked by LP duality: the test builds and solves the dual of
the max-min programme itself (a different formulation: one weight per fairness row, per job and
per GPU type), checks the dual point is feasible, and requires the allocation's minimum
normalised throughput to reach the dual optimum, an upper bound on every feasible allocation.
"""

from __future__ import annotations

import numpy as np
import pytest
from scipy.optimize import linprog

from goodput_sim.policies.gavel_lp import (
    RoundScheduler,
    max_min_fair_allocation,
    reference_throughput,
)

TOL = 1e-7


def _usable(thr, reps, cap):
    """The pairs a job can run on, from the documented rule (independent of the module)."""
    best = thr.max(axis=1, keepdims=True)
    return (thr > 1e-9 * best) & (reps[:, None] <= cap[None, :])


def _reference(thr, reps, cap):
    """The documented reference throughput, written out job by job."""
    usable = _usable(thr, reps, cap)
    total = cap.sum()
    out = np.zeros(len(thr))
    for j in range(len(thr)):
        share = min(1.0, total / (len(thr) * reps[j]))
        out[j] = sum(thr[j, t] * cap[t] / total for t in range(len(cap)) if usable[j, t]) * share
    return out


def _normalised(x, thr, reps, cap):
    ref = _reference(thr, reps, cap)
    eff = np.where(_usable(thr, reps, cap), thr, 0.0)
    active = ref > 0
    return (eff * x).sum(axis=1)[active] / ref[active], active


def _assert_feasible(x, thr, reps, cap):
    assert x.shape == thr.shape
    assert np.all(x >= 0) and np.all(x <= 1)
    assert np.all(x.sum(axis=1) <= 1 + TOL)
    assert np.all(reps @ x <= cap + TOL)
    assert np.all(x[~_usable(thr, reps, cap)] == 0)


def _dual_optimum(thr, reps, cap):
    """min sum_j v_j + sum_t cap_t w_t  s.t.  sum_j u_j = 1 and, for every usable (j, t),
    gain[j, t] u_j <= v_j + reps_j w_t; u, v, w >= 0 (u over jobs with a positive reference)."""
    ref = _reference(thr, reps, cap)
    usable = _usable(thr, reps, cap)
    active = np.flatnonzero(ref > 0)
    num_jobs, num_types = thr.shape
    n_u = active.size
    n = n_u + num_jobs + num_types
    rows = []
    for k, j in enumerate(active):
        for t in range(num_types):
            if usable[j, t]:
                row = np.zeros(n)
                row[k] = thr[j, t] / ref[j]
                row[n_u + j] = -1.0
                row[n_u + num_jobs + t] = -reps[j]
                rows.append(row)
    cost = np.concatenate([np.zeros(n_u), np.ones(num_jobs), cap])
    a_eq = np.concatenate([np.ones(n_u), np.zeros(num_jobs + num_types)])[None, :]
    res = linprog(
        cost,
        A_ub=np.array(rows),
        b_ub=np.zeros(len(rows)),
        A_eq=a_eq,
        b_eq=[1.0],
        bounds=(0, None),
        method="highs",
    )
    assert res.status == 0
    point = res.x
    assert np.all(point >= -1e-12)
    assert abs(point[:n_u].sum() - 1) < 1e-9
    assert np.all(np.array(rows) @ point <= 1e-9)
    return float(cost @ point)


def _random_instance(rng, max_jobs, max_types):
    num_jobs = int(rng.integers(1, max_jobs + 1))
    num_types = int(rng.integers(1, max_types + 1))
    thr = rng.uniform(0.1, 5.0, (num_jobs, num_types))
    thr[rng.random(thr.shape) < 0.2] = 0.0  # some jobs cannot run on some types
    reps = rng.choice([1, 1, 2, 4], num_jobs)
    cap = rng.integers(0, 6, num_types).astype(float)
    return thr, reps, cap


@pytest.mark.parametrize("max_jobs, max_types, count", [(3, 2, 150), (6, 3, 50)])
def test_random_instances_are_feasible_and_optimal(max_jobs, max_types, count):
    rng = np.random.default_rng(20201104 + max_jobs)
    checked = 0
    for _ in range(count):
        thr, reps, cap = _random_instance(rng, max_jobs, max_types)
        x = max_min_fair_allocation(thr, reps, cap)
        _assert_feasible(x, thr, reps, cap)
        norm, active = _normalised(x, thr, reps, cap)
        np.testing.assert_allclose(
            reference_throughput(thr, reps, cap), _reference(thr, reps, cap), rtol=1e-12
        )
        if not active.any():
            assert np.all(x == 0)
            continue
        optimum = _dual_optimum(thr, reps, cap)
        assert norm.min() >= optimum - 1e-6
        assert norm.min() <= optimum + 1e-6
        checked += 1
    assert checked > count // 2


def test_deterministic():
    rng = np.random.default_rng(7)
    thr, reps, cap = rng.uniform(0, 3, (12, 3)), rng.integers(1, 4, 12), np.array([8, 4, 4])
    first = max_min_fair_allocation(thr, reps, cap)
    assert np.array_equal(first, max_min_fair_allocation(thr, reps, cap))
    assert np.array_equal(first, np.round(first, 9))


def test_homogeneous_uncontended_everyone_runs():
    x = max_min_fair_allocation([[1.0], [2.5], [0.3]], [2, 2, 2], [8])
    np.testing.assert_allclose(x, 1.0, atol=1e-8)


def test_contended_homogeneous_equal_shares():
    x = max_min_fair_allocation(np.full((4, 1), 3.0), [2, 2, 2, 2], [4])
    np.testing.assert_allclose(x, 0.5, atol=1e-8)


def test_heterogeneous_placement_is_type_aware():
    # Job A is 4x faster on type 0; job B is indifferent.
    x = max_min_fair_allocation([[4.0, 1.0], [1.0, 1.0]], [1, 1], [1, 1])
    np.testing.assert_allclose(x, [[1.0, 0.0], [0.0, 1.0]], atol=1e-8)


def test_second_pass_uses_leftover_capacity():
    # B limits the min (z = 1 with B alone on type 1); A needs only x = 0.5 on type 0 for that,
    # and the utilisation pass gives it the rest of type 0.
    x = max_min_fair_allocation([[1.0, 0.0], [1.0, 1.0]], [1, 1], [1, 1])
    np.testing.assert_allclose(x, [[1.0, 0.0], [0.0, 1.0]], atol=1e-8)


def test_jobs_that_cannot_run_get_nothing_and_do_not_drag_the_min():
    # Job 1 needs 4 GPUs but no type has more than 2; job 2 has no throughput anywhere.
    thr = np.array([[1.0, 2.0], [5.0, 5.0], [0.0, 0.0]])
    x = max_min_fair_allocation(thr, [1, 4, 1], [2, 2])
    np.testing.assert_allclose(x[1:], 0.0)
    assert x[0].sum() == pytest.approx(1.0)
    assert max_min_fair_allocation(np.zeros((0, 2)), [], [1, 1]).shape == (0, 2)
    np.testing.assert_allclose(max_min_fair_allocation([[1.0]], [1], [0]), 0.0)


def _run_rounds(scheduler, names, x, reps, cap, rounds):
    placements = []
    counts = np.zeros_like(x)
    for _ in range(rounds):
        placed = scheduler.schedule(names, x, reps, cap, 360.0)
        used = np.zeros(len(cap))
        for j, name in enumerate(names):
            t = placed[name]
            if t is not None:
                assert x[j, t] > 0
                used[t] += reps[j]
                counts[j, t] += 1
        assert np.all(used <= cap)
        placements.append(placed)
    return counts / rounds, placements


def test_round_scheduler_realises_the_allocation():
    thr = np.array([[3.0, 1.0], [2.0, 1.5], [1.0, 1.0], [4.0, 0.5], [1.2, 1.1]])
    reps = np.array([1, 1, 1, 1, 1])
    cap = np.array([2, 1])
    x = max_min_fair_allocation(thr, reps, cap)
    assert np.any((x > 0.05) & (x < 0.95))  # a genuinely time-shared allocation
    names = [f"job{j}" for j in range(len(thr))]
    realised, placements = _run_rounds(RoundScheduler(), names, x, reps, cap, 200)
    np.testing.assert_allclose(realised, x, atol=0.05)
    _, again = _run_rounds(RoundScheduler(), names, x, reps, cap, 200)
    assert again == placements


def test_round_scheduler_forgets_departed_and_favours_new_jobs():
    scheduler = RoundScheduler()
    x = np.array([[1.0], [1.0]])
    for _ in range(5):
        scheduler.schedule(["a", "b"], x * 0.5, [1, 1], [1], 10.0)
    assert scheduler.received("a")[0] + scheduler.received("b")[0] == pytest.approx(60.0)
    placed = scheduler.schedule(["a", "c"], x * 0.5, [1, 1], [1], 10.0)
    assert placed == {"a": None, "c": 0}  # c has had half a round in 5.5: highest priority
    with pytest.raises(KeyError):
        scheduler.received("b")


@pytest.mark.parametrize(
    "thr, reps, cap, match",
    [
        ([1.0, 2.0], [1], [1, 1], "throughput"),
        ([[1.0, -1.0]], [1], [1, 1], "non-negative"),
        ([[1.0, np.nan]], [1], [1, 1], "finite"),
        ([[1.0, 1.0]], [1, 1], [1, 1], "replicas must have shape"),
        ([[1.0, 1.0]], [0], [1, 1], "positive integers"),
        ([[1.0, 1.0]], [1.5], [1, 1], "positive integers"),
        ([[1.0, 1.0]], [1], [1], "capacity must have shape"),
        ([[1.0, 1.0]], [1], [1, -1], "capacity"),
        (np.zeros((1, 0)), [1], [], "types >= 1"),
    ],
)
def test_allocation_validation(thr, reps, cap, match):
    with pytest.raises(ValueError, match=match):
        max_min_fair_allocation(thr, reps, cap)


def test_scheduler_validation():
    scheduler = RoundScheduler()
    x = np.array([[0.5, 0.5]])
    with pytest.raises(ValueError, match="unique"):
        scheduler.schedule(["a", "a"], np.vstack([x, x]), [1, 1], [1, 1], 1.0)
    with pytest.raises(ValueError, match="x must be"):
        scheduler.schedule(["a"], x, [1], [1], 1.0)
    with pytest.raises(ValueError, match="non-negative"):
        scheduler.schedule(["a"], -x, [1], [1, 1], 1.0)
    with pytest.raises(ValueError, match="replicas must be positive"):
        scheduler.schedule(["a"], x, [0], [1, 1], 1.0)
    with pytest.raises(ValueError, match="round_seconds"):
        scheduler.schedule(["a"], x, [1], [1, 1], 0.0)
    scheduler.schedule(["a"], x, [1], [1, 1], 1.0)
    with pytest.raises(ValueError, match="types changed"):
        scheduler.schedule(["a"], x[:, :1], [1], [1], 1.0)
