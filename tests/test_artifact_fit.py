"""The Sia artifact's throughput fit (:mod:`goodput_sim.models.artifact_fit`) gives the bits of
the plain implementation it replaced: the objective from :class:`LogFitObjective`'s residuals and
Jacobian as numpy expressions, minimised by ``scipy.optimize.minimize``."""

from __future__ import annotations

import numpy as np
import pytest
from scipy.optimize import Bounds, minimize

from goodput_sim.models.artifact_fit import TOLERANCE, _ArtifactObjective, artifact_fit, lbfgsb
from goodput_sim.models.numerics import TINY
from goodput_sim.models.throughput import (
    _INITIAL,
    _LOWER,
    _UPPER,
    PARAM_NAMES,
    ThroughputModel,
    ThroughputParams,
)
from goodput_sim.models.throughput_fit import LogFitObjective


def oracle_value_and_gradient(objective: LogFitObjective, x: np.ndarray):
    """The objective as first written: two RMS log errors plus the priors' sum of squares."""
    rows = objective.rows
    r, jac = objective.residuals(x), objective.jacobian(x)
    value, gradient = 0.0, np.zeros_like(x)
    for part in (slice(0, rows), slice(rows, 2 * rows)):
        norm = float(np.sqrt(np.sum(r[part] ** 2)))
        value += norm
        if norm > 0:
            gradient += jac[part].T @ r[part] / norm
    priors = slice(2 * rows, None)
    value += float(np.sum(r[priors] ** 2))
    gradient += 2.0 * jac[priors].T @ r[priors]
    return value, gradient


def observations(rng: np.random.Generator, rows: int) -> tuple[np.ndarray, ...]:
    """Step times of a random job on ``rows`` distinct (nodes, GPUs, per-GPU batch) shapes."""
    nodes = rng.integers(1, 4, rows).astype(float)
    replicas = nodes * rng.integers(1, 5, rows)
    local_bsz = rng.integers(8, 512, rows).astype(float)
    accum = 0.02 + 0.001 * local_bsz * rng.uniform(0.8, 1.2, rows)
    step = accum + np.where(replicas > 1, 0.05 * replicas, 0.0) * rng.uniform(0.5, 2.0, rows)
    return nodes, replicas, local_bsz, accum, step


def oracle_fit(nodes, replicas, local_bsz, accum, step) -> np.ndarray:
    """The artifact fit as first written, before the multi-node prior."""
    frozen = ThroughputModel._frozen_values(nodes, replicas, local_bsz, accum)
    start, lower, upper = _INITIAL.copy(), _LOWER.copy(), _UPPER.copy()
    for name, value in frozen.items():
        k = PARAM_NAMES.index(name)
        start[k] = lower[k] = upper[k] = value
    logs = (np.log(np.maximum(accum, TINY)), np.log(np.maximum(step, TINY)))
    objective = LogFitObjective(
        nodes, replicas, local_bsz, *logs, start.copy(), np.ones(7, dtype=bool)
    )
    with np.errstate(all="ignore"):
        result = minimize(
            lambda x: oracle_value_and_gradient(objective, x),
            start,
            jac=True,
            bounds=Bounds(lower, upper, keep_feasible=True),
            tol=TOLERANCE,
        )
    return result.x


@pytest.mark.parametrize("seed", range(30))
def test_objective_matches_its_oracle(seed):
    """Value and gradient to the bit, for 1 to 60 observations (numpy sums fewer than 8
    values in a plain loop, more with eight partial sums) at points far from the optimum."""
    rng = np.random.default_rng(seed)
    rows = int(rng.integers(1, 61))
    nodes, replicas, local_bsz, accum, step = observations(rng, rows)
    logs = (np.log(accum), np.log(step))
    compiled = _ArtifactObjective(nodes, replicas, local_bsz, *logs)
    oracle = LogFitObjective(nodes, replicas, local_bsz, *logs, _INITIAL.copy(), np.ones(7, bool))
    for _ in range(5):
        x = _INITIAL * np.exp(rng.uniform(-8, 8, 7))
        x[6] = rng.uniform(1, 10)
        with np.errstate(all="ignore"):
            value, gradient = compiled(x)
            want_value, want_gradient = oracle_value_and_gradient(oracle, x)
        assert value == want_value
        assert gradient.tobytes() == want_gradient.tobytes()


@pytest.mark.parametrize("seed", range(20))
def test_fit_matches_minimize(seed):
    """The direct L-BFGS-B driver ends on minimize's iterate, bit for bit, and so does the
    whole fit; the fitted parameters are those of the plain implementation."""
    rng = np.random.default_rng(100 + seed)
    data = observations(rng, int(rng.integers(1, 25)))
    want = oracle_fit(*data)
    params = artifact_fit(*data)
    got = np.array([getattr(params, name) for name in PARAM_NAMES])
    multi_node = bool(np.any(data[0] > 1))
    if multi_node:  # no multi-node prior applied: the solver's answer as it is
        assert got.tobytes() == want.tobytes()
    else:
        assert got[[0, 1, 4, 5, 6]].tobytes() == want[[0, 1, 4, 5, 6]].tobytes()
    assert isinstance(params, ThroughputParams)


def test_driver_honours_bounds_and_matches_minimize_on_a_quadratic():
    """On a bounded quadratic the driver stops where minimize stops, at the bound."""
    centre = np.array([1.0, -2.0, 3.0])

    def quadratic(x):
        d = x - centre
        return float(d @ d), 2.0 * d

    lower, upper = np.array([0.0, 0.0, -np.inf]), np.array([np.inf, 5.0, 2.0])
    start = np.array([4.0, 4.0, 0.0])
    got = lbfgsb(quadratic, start, lower, upper)
    want = minimize(
        quadratic, start, jac=True, bounds=Bounds(lower, upper, keep_feasible=True), tol=TOLERANCE
    ).x
    assert got.tobytes() == want.tobytes()
    np.testing.assert_allclose(got, [1.0, 0.0, 2.0], atol=1e-6)
