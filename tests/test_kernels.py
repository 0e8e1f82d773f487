"""The compiled optimiser loops (goodput_sim.policies.kernels) make exactly the choices of the
numpy code they replaced (tests/numpy_optimizer.py), on random problems built to hit ties,
NaN drops, caps, floors, nodes without GPUs, kept rows and interference avoidance."""

from __future__ import annotations

import numpy as np
import pytest
from numpy_optimizer import _best_transfer as numpy_best_transfer
from numpy_optimizer import greedy_counts as numpy_greedy_counts
from numpy_optimizer import place as numpy_place
from test_optimizer import random_rows

from goodput_sim.policies.greedy import greedy_counts, place
from goodput_sim.policies.local_search import _best_transfer, _cost
from goodput_sim.policies.problem import AllocationProblem, Fairness


def _cost_table(rng, jobs: int, width: int) -> np.ndarray:
    """Decreasing-ish costs rounded to force ties, with infinite entries (caps, floors, ruled
    out counts) that give inf - inf = NaN drops."""
    value = np.cumsum(rng.uniform(0.0, 1.0, (jobs, width)), axis=1) * rng.uniform(0, 1, (jobs, 1))
    cost = np.round(1.0 / (value / 8 + 1e-3), int(rng.integers(0, 3)))
    cost[rng.random((jobs, width)) < 0.08] = np.inf
    floors = rng.random(jobs) < 0.2
    cost[floors, 1:3] = np.inf
    cost[:, 0] = 1000.0
    return cost


@pytest.mark.parametrize("seed", range(40))
def test_greedy_counts_match_numpy(seed):
    rng = np.random.default_rng(seed)
    jobs, width = int(rng.integers(1, 30)), int(rng.integers(1, 70))
    cost = _cost_table(rng, jobs, width)
    watch = rng.random(cost.shape) < 0.1
    total = int(rng.integers(0, jobs * width + 2))
    expected, expected_diverged = numpy_greedy_counts(cost, total, watch=watch)
    counts, diverged = greedy_counts(cost, total, watch=watch)
    np.testing.assert_array_equal(counts, expected)
    assert (diverged is None) == (expected_diverged is None)
    if diverged is not None:
        np.testing.assert_array_equal(diverged, expected_diverged)
        resumed = numpy_greedy_counts(cost, total, counts=diverged)[0]
        np.testing.assert_array_equal(greedy_counts(cost, total, counts=diverged)[0], resumed)
    scratch = numpy_greedy_counts(cost, total)[0]
    np.testing.assert_array_equal(greedy_counts(cost, total)[0], scratch)
    start = rng.integers(0, width, jobs)  # some on infinite costs: NaN drops rule a job out
    np.testing.assert_array_equal(
        greedy_counts(cost, total + int(start.sum()), counts=start)[0],
        numpy_greedy_counts(cost, total + int(start.sum()), counts=start)[0],
    )


def _problem(rng, avoid: bool) -> AllocationProblem:
    jobs, nodes = int(rng.integers(1, 12)), int(rng.integers(1, 9))
    capacity = rng.choice([0, 2, 4, 4, 8], nodes)
    capacity[rng.integers(nodes)] = 4  # some node has GPUs
    width = int(capacity.sum()) + 1
    tables = []
    for _ in range(jobs):
        speedup = np.round(np.cumsum(rng.uniform(0, 1, (3, width)), axis=1), 1)
        speedup[:, 0] = 0.0
        tables.append(speedup)
    floors = rng.integers(1, 3, jobs) if rng.random() < 0.3 else None
    return AllocationProblem(
        [f"j{j}" for j in range(jobs)],
        rng.integers(1, width + 1, jobs),
        rng.choice([0.5, 0.75, 1.0], jobs),
        random_rows(rng, jobs, capacity),
        capacity,
        tables,
        Fairness(float(rng.choice([-1.0, -2.0, 0.0, 0.5]))),
        interference_avoidance=avoid,
        candidates=int(rng.choice([2, 4, 64])),
        floors=floors,
    )


@pytest.mark.parametrize("seed", range(60))
def test_placement_matches_numpy(seed):
    rng = np.random.default_rng(seed)
    problem = _problem(rng, avoid=bool(seed % 3))
    total = int(problem.capacity.sum())
    counts = np.minimum(rng.integers(0, max(total, 1) + 1, problem.num_jobs), problem.caps)
    keep = rng.random(problem.num_jobs) < 0.3
    counts = np.where(keep, problem.current.sum(axis=1), counts)
    for keep_rows in (True, False):
        np.testing.assert_array_equal(
            place(problem, counts, keep_rows), numpy_place(problem, counts, keep_rows)
        )


@pytest.mark.parametrize("seed", range(80))
def test_best_transfer_matches_numpy(seed):
    rng = np.random.default_rng(seed)
    problem = _problem(rng, avoid=bool(seed % 3))
    best = random_rows(rng, problem.num_jobs, problem.capacity)
    jobs = np.arange(problem.num_jobs)
    changed = (best != problem.current).any(axis=1)
    cost = _cost(problem, jobs, best.sum(axis=1), (best > 0).sum(axis=1), changed)
    moved, delta = _best_transfer(problem, best, cost)
    expected, expected_delta = numpy_best_transfer(problem, best, cost)
    assert (moved is None) == (expected is None)
    if moved is not None:
        np.testing.assert_array_equal(moved, expected)
    assert delta == expected_delta
