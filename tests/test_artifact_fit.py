"""The Sia artifact's throughput fit (:mod:`goodput_sim.models.artifact_fit`): its objective
and gradient are those of reverse-mode automatic differentiation of the formula, bit for bit,
and the direct L-BFGS-B driver ends where ``scipy.optimize.minimize`` ends."""

from __future__ import annotations

import numpy as np
import pytest
from machine import without_simd
from scipy.optimize import Bounds, minimize

from goodput_sim.models.artifact_fit import (
    TOLERANCE,
    _ArtifactObjective,
    artifact_fit,
    lbfgsb,
    start_and_bounds,
)
from goodput_sim.models.throughput import (
    _INITIAL,
    PARAM_NAMES,
)


def observations(rng: np.random.Generator, rows: int) -> tuple[np.ndarray, ...]:
    """Step times of a random job on ``rows`` distinct (nodes, GPUs, per-GPU batch) shapes."""
    nodes = rng.integers(1, 4, rows).astype(float)
    replicas = nodes * rng.integers(1, 5, rows)
    local_bsz = rng.integers(8, 512, rows).astype(float)
    accum = 0.02 + 0.001 * local_bsz * rng.uniform(0.8, 1.2, rows)
    step = accum + np.where(replicas > 1, 0.05 * replicas, 0.0) * rng.uniform(0.5, 2.0, rows)
    return nodes, replicas, local_bsz, accum, step


def random_point(rng: np.random.Generator) -> np.ndarray:
    x = _INITIAL * np.exp(rng.uniform(-6, 6, 7))
    x[6] = rng.uniform(1, 10)
    return x


def formula(x, nodes, replicas, local_bsz, accum, step, numpy=np):
    """The objective as written (Pollux SPEC 3.3), in ``numpy`` or autograd's numpy: the
    network time picks alpha/beta across nodes, else within a node, else 1e-8."""
    alpha_c, beta_c, alpha_n, beta_n, alpha_r, beta_r, gamma = (x[k] for k in range(7))
    t_acc = alpha_c + beta_c * local_bsz
    conds = [nodes > 1, replicas > 1]
    link = numpy.select(conds, [alpha_n, alpha_r], 1e-8)
    retro = numpy.select(conds, [beta_n, beta_r], 1e-8) * np.maximum(replicas - 2, 1e-8)
    t_net = link + retro
    log_step = numpy.log(t_acc**gamma + t_net**gamma) / gamma
    err_acc = numpy.sqrt(((numpy.log(t_acc) - np.log(accum)) ** 2).mean())
    err_step = numpy.sqrt(((log_step - np.log(step)) ** 2).mean())
    reg_gamma = 1e-3 * (gamma - 1) ** 2
    reg_net = 1e-2 * ((beta_n / alpha_n) ** 2 + (beta_r / alpha_r) ** 2)
    return err_acc + err_step + reg_gamma + reg_net


AUTOGRAD_SEEDS, AUTOGRAD_POINTS = 30, 5


def autograd_values(seeds: int = AUTOGRAD_SEEDS) -> list[list[tuple[list, float, list]]]:
    """Per seed, (point, value, gradient) of the formula by autograd for 1 to 40 random
    observations at points far from the optimum."""
    import autograd
    import autograd.numpy as anp

    out = []
    for seed in range(seeds):
        rng = np.random.default_rng(seed)
        data = observations(rng, int(rng.integers(1, 41)))
        points = []
        for _ in range(AUTOGRAD_POINTS):
            x = random_point(rng)
            with np.errstate(all="ignore"):
                value = float(formula(x, *data))
                gradient = autograd.grad(lambda p, data=data: formula(p, *data, numpy=anp))(x)
            points.append((x.tolist(), value, gradient.tolist()))
        out.append(points)
    return out


@pytest.fixture(scope="module")
def autograd_at_baseline():
    """:func:`autograd_values` with numpy at its baseline SIMD level, where its ``log`` and
    ``power`` are the C library's, as the fit's kernels are (numpy's AVX-512 routines round
    differently): in a process with numpy's run-time SIMD levels turned off."""
    pytest.importorskip("autograd", reason="autograd (a dev extra) is not installed")
    return without_simd(
        "import json\nfrom test_artifact_fit import autograd_values\n"
        "print(json.dumps(autograd_values()))\n"
    )


@pytest.mark.parametrize("seed", range(AUTOGRAD_SEEDS))
def test_objective_is_reverse_mode_differentiation_of_the_formula(seed, autograd_at_baseline):
    """Value and gradient to the bit against autograd's differentiation of the formula, as the
    artifact computes them, for 1 to 40 observations (numpy sums fewer than 8 values in a
    plain loop, more with eight partial sums) at points far from the optimum."""
    rng = np.random.default_rng(seed)
    objective = _ArtifactObjective(*observations(rng, int(rng.integers(1, 41))))
    for x, want_value, want_gradient in autograd_at_baseline[seed]:
        with np.errstate(all="ignore"):
            value, gradient = objective(np.array(x))
        assert value == want_value
        assert gradient.tobytes() == np.array(want_gradient).tobytes()


def test_the_fit_does_not_depend_on_numpys_simd_level():
    """A fit gives the same bits with numpy's run-time SIMD levels turned off: its ``log`` and
    ``power`` are the C library's on every CPU. (numpy's AVX-512 routines round differently,
    and sia's choices moved with the last bits; on a CPU without AVX-512 this cannot fail.)"""
    rng = np.random.default_rng(7)
    data = [observations(rng, int(rng.integers(1, 12))) for _ in range(20)]
    fits = [artifact_fit(*d).as_array().tobytes().hex() for d in data]
    program = (
        "import json\n"
        "import numpy as np\n"
        "from test_artifact_fit import observations\n"
        "from goodput_sim.models.artifact_fit import artifact_fit\n"
        "rng = np.random.default_rng(7)\n"
        "data = [observations(rng, int(rng.integers(1, 12))) for _ in range(20)]\n"
        "print(json.dumps([artifact_fit(*d).as_array().tobytes().hex() for d in data]))\n"
    )
    assert without_simd(program) == fits


@pytest.mark.parametrize("seed", range(10))
def test_gradient_agrees_with_finite_differences(seed):
    """Without autograd: the gradient is the objective's slope (central differences)."""
    rng = np.random.default_rng(50 + seed)
    data = observations(rng, int(rng.integers(1, 20)))
    objective = _ArtifactObjective(*data)
    x = random_point(rng)
    _, gradient = objective(x)
    for k in range(7):
        h = 1e-5 * x[k]
        up, down = x.copy(), x.copy()
        up[k] += h
        down[k] -= h
        slope = (objective(up)[0] - objective(down)[0]) / (2 * h)
        assert gradient[k] == pytest.approx(slope, rel=1e-3, abs=1e-9)


@pytest.mark.parametrize("seed", range(20))
def test_fit_matches_minimize(seed):
    """The direct L-BFGS-B driver ends on minimize's iterate, bit for bit, with the value and
    the gradient asked for separately as the artifact asks for them."""
    rng = np.random.default_rng(100 + seed)
    nodes, replicas, local_bsz, accum, step = observations(rng, int(rng.integers(1, 25)))
    start, lower, upper = start_and_bounds(nodes, replicas, local_bsz, accum)
    objective = _ArtifactObjective(nodes, replicas, local_bsz, accum, step)
    with np.errstate(all="ignore"):
        got = lbfgsb(objective, start, lower, upper)
        want = minimize(
            lambda x: objective(x)[0],
            start,
            jac=lambda x: objective(x)[1],
            bounds=Bounds(lower, upper, keep_feasible=True),
            tol=TOLERANCE,
        ).x
    assert got.tobytes() == want.tobytes()


def test_the_references_fit_of_a_cifar10_job():
    """A cifar10 job's eight observations on two GPUs of one node (the reference's step and
    sync times) and the parameters the Sia reference simulator fitted to them, measured by
    running it: a flat optimum where a last bit of gradient moves gamma from 1.17 to 1.02."""
    batches = (64, 69, 113, 264, 350, 403, 433, 498)
    step = (
        0.0299214273691177,
        0.03020911912123359,
        0.032550282384219885,
        0.046635699862579066,
        0.05406763741992546,
        0.05922268430391939,
        0.062246395150820324,
        0.06879776865243903,
    )
    sync = (
        0.000729792010039,
        0.000721720897489037,
        0.0006765743158756947,
        0.0007074837670221424,
        0.0010073998442867785,
        0.00105918720091376,
        0.00106402560497318,
        0.00107450881376859,
    )
    step, sync = np.array(step), np.array(sync)
    params = artifact_fit(np.ones(8), np.full(8, 2.0), np.array(batches, float), step - sync, step)
    got = tuple(getattr(params, name) for name in PARAM_NAMES)
    assert got == (
        0.022979540311004874,
        8.79350806030125e-05,
        0.0017236866899130938,
        1.1000000000000001e-08,
        0.0015669878999209942,
        1e-08,
        1.1685043548735614,
    )


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
