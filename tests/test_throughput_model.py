"""The 7-parameter Pollux step-time model (SPEC 3): formulas, freezing rules and fitting."""

from __future__ import annotations

import os
import subprocess
import sys

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from spec_formulas import by_hand

from goodput_sim.models.goodput import GoodputModel
from goodput_sim.models.throughput import (
    PARAM_NAMES,
    TINY,
    ThroughputModel,
    ThroughputParams,
    network_time,
    step_times,
)
from goodput_sim.models.throughput_fit import LogFitObjective

PARAMS = ThroughputParams(
    alpha_c=0.02, beta_c=0.0005, alpha_n=0.05, beta_n=0.004, alpha_r=0.01, beta_r=0.001, gamma=1.6
)


# ------------------------------------------------------------------------ formulas
@pytest.mark.parametrize(
    ("nodes", "replicas", "b", "s"),
    [(1, 1, 64, 0), (1, 1, 64, 3), (1, 2, 32, 0), (1, 4, 128, 1), (2, 2, 16, 0), (4, 16, 256, 2)],
)
def test_step_times_match_hand_computation(nodes, replicas, b, s):
    got = step_times(PARAMS, nodes, replicas, b, s)
    want = by_hand(PARAMS, nodes, replicas, b, s)
    for g, w in zip(got, want, strict=True):
        assert float(g) == pytest.approx(w, rel=1e-12)


def test_step_times_concrete_numbers():
    # One node, 4 GPUs, b=100, s=2: T_acc = 0.02 + 0.05 = 0.07, T_net = 0.01 + 0.001*2 = 0.012.
    t_acc, t_sync, t_iter = step_times(PARAMS, 1, 4, 100, 2)
    assert float(t_acc) == pytest.approx(0.07)
    assert float(network_time(PARAMS, 1, 4)) == pytest.approx(0.012)
    assert float(t_sync) == pytest.approx((0.07**1.6 + 0.012**1.6) ** (1 / 1.6))
    assert float(t_iter) == pytest.approx(2 * 0.07 + float(t_sync))
    # gamma = 1 is no overlap (a sum); a large gamma approaches max().
    no_overlap = ThroughputParams(**{**PARAMS.as_dict(), "gamma": 1.0})
    assert float(step_times(no_overlap, 2, 8, 100)[1]) == pytest.approx(0.07 + 0.05 + 0.004 * 6)
    overlap = ThroughputParams(**{**PARAMS.as_dict(), "gamma": 10.0})
    assert float(step_times(overlap, 1, 4, 100)[1]) == pytest.approx(0.07, rel=1e-6)


def test_single_gpu_network_time_is_negligible():
    assert float(network_time(PARAMS, 1, 1)) == pytest.approx(TINY + TINY * TINY)
    assert float(network_time(PARAMS, 2, 2)) == pytest.approx(0.05 + 0.004 * 1e-8)


def test_step_times_vectorised_and_throughput():
    nodes = np.array([1, 1, 2, 4])
    replicas = np.array([1, 4, 4, 16])
    b = np.array([32, 64, 64, 128])
    s = np.array([0, 1, 0, 3])
    *_, t_iter = step_times(PARAMS, nodes, replicas, b, s)
    for i in range(4):
        assert t_iter[i] == pytest.approx(by_hand(PARAMS, nodes[i], replicas[i], b[i], s[i])[2])
    model = GoodputModel(PARAMS, 32, 4096, 1, 1024, 1.0, 0.0)
    np.testing.assert_allclose(
        model.throughput(nodes, replicas, b, s), replicas * b * (s + 1) / t_iter
    )


def test_huge_gamma_does_not_overflow():
    params = ThroughputParams(1e3, 1.0, 1e4, 1.0, 1e3, 1.0, 10.0)
    t_acc, t_sync, _ = step_times(params, 2, 64, 1e6)
    assert np.isfinite(t_sync) and t_sync >= max(t_acc, 1e4)


# ------------------------------------------------------------------------ SPEC 3.3 example
def test_spec_example_cifar10_single_observation(measured_profiles):
    step, sync = measured_profiles["cifar10"].step_sync((1,), 128)
    acc = float(step - sync)
    model = ThroughputModel().fit(1, 1, 128, acc, float(step))
    p = model.params_
    assert p.alpha_c == pytest.approx(acc / 2)  # frozen at mean(T_acc)/2
    expected = (0.0513, 0.000402, 1.1e-8, 1.1e-8, 1e-8, 1e-8, 1.001)
    np.testing.assert_allclose(p.as_array(), expected, rtol=0.05)
    assert model.frozen_ == ("alpha_c", "alpha_n", "beta_n", "alpha_r", "beta_r")
    # With no network data the predicted speedup is close to linear (SPEC 3.3).
    one = model.predict(1, 1, 128)
    eight = model.predict(2, 8, 128)
    assert 8 * one / eight > 7.5


# ------------------------------------------------------------------------ frozen parameters
@pytest.mark.parametrize(
    ("obs", "frozen"),
    [
        # (nodes, replicas, b) observations -> parameters frozen per SPEC 3.3
        ([(1, 1, 64)], ("alpha_c", "alpha_n", "beta_n", "alpha_r", "beta_r")),
        ([(1, 1, 64), (1, 1, 64)], ("alpha_c", "alpha_n", "beta_n", "alpha_r", "beta_r")),
        ([(1, 1, 64), (1, 1, 128)], ("alpha_n", "beta_n", "alpha_r", "beta_r")),
        ([(1, 1, 128), (1, 2, 64)], ("alpha_n", "beta_n", "beta_r")),
        ([(1, 1, 128), (1, 4, 64)], ("alpha_n", "beta_n")),
        ([(1, 1, 128), (1, 3, 64)], ("alpha_n", "beta_n")),
        ([(1, 1, 32), (2, 2, 64)], ("beta_n", "alpha_r", "beta_r")),
        ([(2, 8, 64)], ("alpha_c", "alpha_r", "beta_r")),
        ([(2, 2, 64), (1, 2, 64)], ("alpha_c", "beta_n", "beta_r")),
        ([(1, 4, 32), (2, 8, 64)], ()),
    ],
)
def test_frozen_parameters_follow_spec_rules(obs, frozen):
    nodes, replicas, b = (np.array(col, dtype=float) for col in zip(*obs, strict=True))
    params = by_hand_batch(nodes, replicas, b)
    model = ThroughputModel().fit(nodes, replicas, b, params[0], params[1])
    assert model.frozen_ == frozen
    p = model.params_.as_dict()
    if "alpha_c" in frozen:
        assert p["alpha_c"] == pytest.approx(float(np.mean(params[0])) / 2)
    for name in ("alpha_r", "beta_r"):
        if name in frozen:
            assert p[name] == TINY
    if "beta_n" in frozen and np.any(nodes > 1):
        assert p["beta_n"] == TINY
    if not np.any(nodes > 1):  # post-fit prior: inter-node at least 10% above intra-node
        assert p["alpha_n"] == pytest.approx(max(TINY, 1.1 * p["alpha_r"]))
        assert p["beta_n"] == pytest.approx(max(TINY, 1.1 * p["beta_r"]))
    elif "alpha_n" not in frozen:
        assert p["alpha_n"] > 1e-4  # really fitted: the data has 50 ms of network time
    for name in set(PARAM_NAMES) - set(frozen):
        assert p[name] >= (1.0 if name == "gamma" else TINY)


def by_hand_batch(nodes, replicas, b):
    acc, sync = [], []
    for n, r, x in zip(nodes, replicas, b, strict=True):
        t_acc, t_sync, _ = by_hand(PARAMS, n, r, x)
        acc.append(t_acc)
        sync.append(t_sync)
    return np.array(acc), np.array(sync)


def test_intra_node_data_moves_alpha_n_above_alpha_r():
    nodes, replicas, b = np.array([1.0, 1, 1]), np.array([1.0, 2, 4]), np.array([64.0, 64, 32])
    acc, sync = by_hand_batch(nodes, replicas, b)
    p = ThroughputModel().fit(nodes, replicas, b, acc, sync).params_
    assert p.alpha_r > 1e-3
    assert p.alpha_n == pytest.approx(1.1 * p.alpha_r)
    assert p.beta_n == pytest.approx(max(TINY, 1.1 * p.beta_r))


# ------------------------------------------------------------------------ fitting
def test_fit_recovers_a_known_parameter_vector():
    true = ThroughputParams(0.02, 0.0005, 0.05, 0.001, 0.01, 0.0002, 1.1)
    rng = np.random.default_rng(7)
    n = 80
    nodes = rng.integers(1, 9, n)
    replicas = nodes * rng.integers(1, 5, n)
    b = rng.integers(16, 1025, n)
    acc, sync, _ = step_times(true, nodes, replicas, b)
    model = ThroughputModel().fit(nodes, replicas, b, acc, sync)
    assert model.frozen_ == ()
    assert model.n_observations_ == n
    qn = rng.integers(1, 17, 500)
    qr = qn * rng.integers(1, 5, 500)
    qb = rng.integers(8, 2048, 500)
    qs = rng.integers(0, 4, 500)
    predicted = model.predict(qn, qr, qb, qs)
    actual = step_times(true, qn, qr, qb, qs)[2]
    np.testing.assert_allclose(predicted, actual, rtol=0.01)


def test_warm_start_reaches_the_same_fit():
    true = ThroughputParams(0.03, 0.0004, 0.08, 0.002, 0.02, 0.0003, 1.0)
    nodes = np.array([1, 1, 1, 2, 4, 4, 8])
    replicas = np.array([1, 2, 4, 8, 8, 16, 32])
    b = np.array([32, 64, 128, 64, 32, 128, 256])
    acc, sync, _ = step_times(true, nodes, replicas, b)
    cold = ThroughputModel().fit(nodes, replicas, b, acc, sync)
    warm = ThroughputModel(warm_start=cold.params_).fit(nodes, replicas, b, acc, sync)
    qn, qr, qb = np.array([1, 3, 16]), np.array([3, 12, 64]), np.array([50, 100, 200])
    np.testing.assert_allclose(warm.predict(qn, qr, qb), cold.predict(qn, qr, qb), rtol=1e-3)
    np.testing.assert_allclose(cold.predict(qn, qr, qb), step_times(true, qn, qr, qb)[2], rtol=0.01)


@pytest.mark.parametrize("free", [np.ones(7, dtype=bool), np.array([1, 1, 0, 0, 1, 1, 1], bool)])
def test_fit_jacobian_matches_finite_differences(free):
    """The solver's exact Jacobian, including with frozen parameters, against central
    differences of the residuals."""
    nodes = np.array([1.0, 1, 1, 2, 2, 4])
    replicas = np.array([1.0, 2, 4, 8, 4, 16])
    b = np.array([32.0, 64, 128, 64, 32, 128])
    acc, sync, _ = step_times(PARAMS, nodes, replicas, b)
    full = np.array([0.03, 0.0004, 0.08, 0.002, 0.02, 0.0003, 1.3])
    objective = LogFitObjective(nodes, replicas, b, np.log(acc) + 0.01, np.log(sync), full, free)
    x = full[free]
    numeric = np.empty((2 * len(b) + 3, len(x)))
    for k in range(len(x)):
        step = 1e-6 * x[k]
        up, down = x.copy(), x.copy()
        up[k] += step
        down[k] -= step
        numeric[:, k] = (objective.residuals(up) - objective.residuals(down)) / (2 * step)
    np.testing.assert_allclose(objective.jacobian(x.copy()), numeric, rtol=1e-5, atol=1e-6)


def test_predict_before_fit_raises():
    with pytest.raises(RuntimeError, match="not fitted"):
        ThroughputModel().predict(1, 1, 32)


def test_fit_without_observations_raises_value_error():
    with pytest.raises(ValueError):
        ThroughputModel().fit([], [], [], [], [])


TIMES = st.one_of(
    st.floats(min_value=1e-9, max_value=1e4),
    st.sampled_from([1e-300, 1e-30, 1e-12, 1e12, 1e30, 1e300]),
)


@st.composite
def observation(draw):
    nodes = draw(st.integers(1, 16))
    replicas = draw(st.integers(nodes, 4 * nodes + 8))
    b = draw(st.integers(1, 4096))
    return nodes, replicas, b, draw(TIMES), draw(TIMES)


@st.composite
def observations(draw):
    first = draw(observation())
    rest = draw(st.lists(st.one_of(observation(), st.just(first)), min_size=0, max_size=2))
    return [first, *rest]


QUERIES = st.lists(
    st.tuples(st.integers(1, 256), st.integers(1, 4), st.integers(1, 100_000), st.integers(0, 16)),
    min_size=1,
    max_size=8,
)


@settings(
    max_examples=150,
    deadline=None,
    derandomize=True,
    database=None,
    suppress_health_check=[HealthCheck.too_slow],
)
@given(obs=observations(), queries=QUERIES)
def test_fit_never_raises_and_predicts_positive_finite(obs, queries):
    nodes, replicas, b, acc, step = (np.array(col, dtype=float) for col in zip(*obs, strict=True))
    model = ThroughputModel().fit(nodes, replicas, b, acc, step)
    params = model.params_.as_array()
    assert np.all(np.isfinite(params))
    assert np.all(params[:6] >= TINY) and 1.0 <= params[6] <= 10.0
    qn, per_node, qb, qs = (np.array(col) for col in zip(*queries, strict=True))
    predicted = model.predict(qn, qn * per_node, qb, qs)
    assert np.all(np.isfinite(predicted)) and np.all(predicted > 0)


@settings(max_examples=25, deadline=None, derandomize=True, database=None)
@given(
    nodes=st.integers(1, 16),
    extra=st.integers(0, 16),
    b=st.integers(1, 4096),
    t=st.floats(min_value=1e-3, max_value=1e3),
)
def test_single_multi_gpu_observation_is_reproduced(nodes, extra, b, t):
    """One observation on several GPUs leaves enough free parameters to reproduce it exactly:
    T_acc through beta_c (alpha_c frozen at half of it) and T_sync through the network time.
    (Below about 0.2 ms per step at b = 4096, beta_c would have to go under its 1e-8 bound.)"""
    replicas = max(nodes + extra, 2)
    model = ThroughputModel().fit(nodes, replicas, b, 0.5 * t, t)
    assert float(model.predict(nodes, replicas, b)) == pytest.approx(t, rel=1e-3)
    assert float(model.predict(nodes, replicas, b, 2)) == pytest.approx(2 * t, rel=1e-3)


# ------------------------------------------------------------------------ machine independence
BLAS_KERNELS = ("Haswell", "SkylakeX", "Sandybridge")


def test_fits_do_not_depend_on_the_cpus_blas_kernel():
    """The same fit under each OpenBLAS kernel this CPU can run gives the same bits: BLAS sums
    in a kernel-specific order, so a fit through it moved results from one machine to another."""
    program = (
        "import numpy as np\n"
        "from goodput_sim.models.throughput import ThroughputModel\n"
        "rng = np.random.default_rng(3)\n"
        "n = rng.integers(1, 5, 40); r = n * rng.integers(1, 5, 40)\n"
        "b = rng.integers(16, 256, 40).astype(float)\n"
        "t_acc = 0.002 * b + 0.01 + rng.normal(0, 1e-4, 40)\n"
        "t = t_acc + 0.05 * (n > 1) + 0.02 * (r > 1) + rng.normal(0, 1e-3, 40)\n"
        "m = ThroughputModel().fit(n, r, b, t_acc, t)\n"
        "print(m.params_.as_array().tobytes().hex())\n"
    )
    outputs = set()
    for kernel in BLAS_KERNELS:
        env = {**os.environ, "OPENBLAS_CORETYPE": kernel}
        done = subprocess.run(
            [sys.executable, "-c", program], env=env, capture_output=True, text=True, timeout=120
        )
        assert done.returncode == 0, done.stderr
        outputs.add(done.stdout)
    assert len(outputs) == 1
