"""Statistical efficiency (SPEC 4.1, 4.4) and the goodput-maximising batch (SPEC 4.2, 5.3)."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from spec_formulas import by_hand

from goodput_sim.models.efficiency import (
    efficiency,
    estimate_grad_stats,
    gain,
    noise_scale,
    steps_and_examples,
)
from goodput_sim.models.goodput import GoodputModel, candidate_configs, fixed_batch_config
from goodput_sim.models.throughput import ThroughputParams
from goodput_sim.profiles.base import Limits

# ------------------------------------------------------------------------ efficiency identities
STAT = st.floats(min_value=0.0, max_value=1e6, allow_nan=False)


@settings(max_examples=200, deadline=None, derandomize=True, database=None)
@given(
    m0=st.integers(1, 4096),
    scale=st.floats(min_value=1.0, max_value=1e4),
    sqr=STAT,
    var=STAT,
)
def test_gain_lies_between_one_and_scale(m0, scale, sqr, var):
    g = float(gain(m0 * scale, m0, sqr, var))
    assert 1.0 - 1e-12 <= g <= scale * (1 + 1e-12)
    eff = float(efficiency(m0 * scale, m0, sqr, var))
    assert eff == pytest.approx(g / scale, rel=1e-12)
    assert 1.0 / scale * (1 - 1e-12) <= eff <= 1.0 + 1e-12


@settings(max_examples=200, deadline=None, derandomize=True, database=None)
@given(
    m0=st.integers(1, 4096),
    scale=st.floats(min_value=1.0, max_value=1e4),
    sqr=st.floats(min_value=1e-6, max_value=1e6),
    var=STAT,
)
def test_efficiency_is_noise_scale_ratio(m0, scale, sqr, var):
    phi = float(noise_scale(m0, sqr, var))
    assert phi == pytest.approx(m0 * var / sqr)
    m = m0 * scale
    assert float(efficiency(m, m0, sqr, var)) == pytest.approx((phi + m0) / (phi + m), rel=1e-9)


def test_gain_hand_values_and_limits():
    # var = 3, sqr = 1, S = 4: gain = (3 + 1) / (3/4 + 1) = 16/7.
    assert float(gain(512, 128, 1.0, 3.0)) == pytest.approx(16 / 7)
    assert float(gain(128, 128, 1.0, 3.0)) == 1.0  # at M0 every step is one M0-step
    assert float(gain(1024, 128, 0.0, 2.0)) == pytest.approx(8.0)  # pure noise: perfect scaling
    assert float(gain(1024, 128, 2.0, 0.0)) == pytest.approx(1.0)  # no noise: no benefit
    assert float(gain(1024, 128, 0.0, 0.0)) == 1.0  # undefined -> 1
    assert float(noise_scale(128, 0.0, 1.0)) == math.inf
    np.testing.assert_allclose(
        gain(np.array([128, 256, 1024]), 128, 1.0, 1.0), [1.0, 2 / 1.5, 2 / 1.125]
    )


def test_gain_increases_and_efficiency_decreases_with_batch():
    batches = np.geomspace(128, 1 << 16, 30)
    g = gain(batches, 128, 0.5, 4.0)
    e = efficiency(batches, 128, 0.5, 4.0)
    assert np.all(np.diff(g) > 0) and np.all(np.diff(e) < 0)


def test_steps_and_examples_tradeoff():
    steps, examples = steps_and_examples(np.array([10.0, 100.0, 1000.0]), 100.0)
    np.testing.assert_allclose(steps, [11.0, 2.0, 1.1])
    np.testing.assert_allclose(examples, [1.1, 2.0, 11.0])
    np.testing.assert_allclose((steps - 1) * (examples - 1), 1.0)


def test_estimate_grad_stats_is_unbiased():
    rng = np.random.default_rng(1234)
    dims, q, b, m0, trials = 16, 4, 32, 128, 4000
    true_grad = rng.normal(0.0, 0.3, dims)
    per_sample_sd = rng.uniform(0.5, 2.0, dims)  # per-example gradient noise
    # Each sub-batch gradient averages b examples: noise sd / sqrt(b) per coordinate.
    noise = rng.normal(0.0, 1.0, (trials, q, dims)) * per_sample_sd / math.sqrt(b)
    estimates = np.array([estimate_grad_stats(true_grad + n, b, m0) for n in noise])
    want_sqr = float(np.sum(true_grad**2))
    want_var = float(np.sum(per_sample_sd**2)) / m0  # tr(Sigma) at a batch of M0
    for column, want in ((0, want_sqr), (1, want_var)):
        mean = estimates[:, column].mean()
        stderr = estimates[:, column].std(ddof=1) / math.sqrt(trials)
        assert abs(mean - want) < 4 * stderr, (column, mean, want, stderr)
        assert abs(mean - want) < 0.05 * want
    # The naive |mean g|^2 is biased upwards by the noise: the estimator must not be that.
    naive = np.mean([np.sum((true_grad + n).mean(axis=0) ** 2) for n in noise[:500]])
    assert naive > want_sqr * 1.05


def test_estimate_grad_stats_exact_small_case():
    grads = np.array([[1.0, 0.0], [0.0, 1.0]])  # local = 1, total = 0.5
    sqr, var = estimate_grad_stats(grads, sub_batch_size=4, init_batch_size=8)
    assert sqr == pytest.approx(0.0)  # (2*0.5 - 1)/1
    assert var == pytest.approx(0.5)  # (1 - 0.5) * (2*4/8) / 1
    with pytest.raises(ValueError):
        estimate_grad_stats(np.ones((1, 3)), 4, 8)


# ------------------------------------------------------------------------ goodput model
CIFAR_PARAMS = ThroughputParams(0.0141, 0.000703, 0.1, 4.6e-6, 0.0111, 0.000378, 1.099)


def make_model(kind: str = "cifar10", sqr: float = 1.0, var: float = 3.0) -> GoodputModel:
    limits = {  # M0, max batch, min local, max local (SPEC 1.6)
        "cifar10": (128, 4096, 32, 1024),
        "bert": (12, 384, 4, 12),
        "ncf": (256, 32768, 32, 32768),
    }[kind]
    return GoodputModel(CIFAR_PARAMS, *limits, grad_sqr=sqr, grad_var=var)


def brute_force(model: GoodputModel, nodes: int, replicas: int, statistical: bool = True):
    """SPEC 4.2 one candidate at a time with plain floats."""
    m0, max_batch = model.init_batch_size, model.max_batch_size
    b_min, b_max = model.min_local_bsz, model.max_local_bsz
    p = model.params
    low = max(m0, b_min * replicas)
    best = None
    for i in range(50):
        total = low * (max_batch / low) ** (i / 49)
        local = total / replicas
        s = math.ceil(local / b_max - 1e-8) - 1
        if replicas == 1 and local > m0 + 1e-8:
            s = max(s, 1)
        b = math.ceil(local / (s + 1) - 1e-8)
        t_iter = by_hand(p, nodes, replicas, b, s)[2]
        m = replicas * b * (s + 1)
        if statistical:
            scale = m / m0
            g = (model.grad_var + model.grad_sqr) / (model.grad_var / scale + model.grad_sqr)
            value = m0 * g / t_iter
        else:
            value = m / t_iter
        if b < b_min or b > b_max:
            value = 0.0
        if best is None or value > best[0]:
            best = (value, b, s)
    value, b, s = best
    b = max(min(b, math.floor(max_batch / (replicas * (s + 1)))), 1)
    return value, b, s


PAIRS = [(1, 1), (1, 2), (1, 3), (1, 4), (2, 2), (2, 5), (2, 8), (3, 7), (4, 16), (8, 20)]
PAIRS += [(16, 64), (32, 100), (64, 256), (3, 12), (5, 6)]


@pytest.mark.parametrize("kind", ["cifar10", "bert", "ncf"])
@pytest.mark.parametrize(("sqr", "var"), [(1.0, 3.0), (1.0, 0.01), (0.01, 50.0)])
def test_optimize_matches_brute_force(kind, sqr, var):
    model = make_model(kind, sqr, var)
    nodes, replicas = np.array(PAIRS).T
    choice = model.optimize(nodes, replicas)
    for i, (n, r) in enumerate(PAIRS):
        value, b, s = brute_force(model, n, r)
        assert choice.goodput[i] == pytest.approx(value, rel=1e-9), (n, r)
        assert (choice.local_bsz[i], choice.accum_steps[i]) == (b, s), (n, r)


def test_optimize_respects_bounds_and_accumulation_rules():
    rng = np.random.default_rng(5)
    for kind in ("cifar10", "bert", "ncf"):
        for sqr, var in ((1.0, 3.0), (0.001, 100.0), (10.0, 0.001)):
            model = make_model(kind, sqr, var)
            nodes = rng.integers(1, 33, 300)
            replicas = nodes * rng.integers(1, 5, 300)
            replicas[:20] = 1
            nodes[:20] = 1
            c = model.optimize(nodes, replicas)
            b, s = c.local_bsz, c.accum_steps
            total = replicas * b * (s + 1)
            # Allocations too wide for the largest batch (R * b_min > max batch) keep the
            # reference's final clamp, which may go below b_min; all others respect the bounds.
            ok = replicas * model.min_local_bsz <= model.max_batch_size
            assert np.all(c.goodput[ok] > 0)
            assert np.all(b[ok] >= model.min_local_bsz) and np.all(b[ok] <= model.max_local_bsz)
            assert np.all(total <= model.max_batch_size) and np.all(b >= 1)
            assert np.all(total[ok] >= model.init_batch_size)
            assert np.all(s >= 0) and np.all(s == np.round(s)) and np.all(b == np.round(b))
            single_above = (replicas == 1) & (b * (s + 1) > model.init_batch_size)
            assert np.all(s[single_above] >= 1)  # one GPU above M0 accumulates (SPEC 4.2)


def test_single_gpu_above_m0_accumulates():
    # With almost no noise (big M hurts), one GPU sits at M0 with s = 0; with pure noise
    # it grows the batch, and then must accumulate at least once.
    quiet = make_model("cifar10", sqr=10.0, var=1e-6).optimize(1, 1)
    assert (quiet.local_bsz[0], quiet.accum_steps[0]) == (128, 0)
    noisy = make_model("cifar10", sqr=1e-6, var=10.0).optimize(1, 1)
    assert noisy.local_bsz[0] * (noisy.accum_steps[0] + 1) > 128
    assert noisy.accum_steps[0] >= 1


def test_candidate_grid_is_geometric_from_the_lower_bound():
    b, s = candidate_configs(np.array([1.0, 8.0]), 128, 4096, 32, 1024)
    assert b.shape == s.shape == (2, 50)
    totals = np.array([[1], [8]]) * b * (s + 1)
    assert totals[0, 0] == 128 and totals[1, 0] == 256  # max(M0, b_min * R)
    assert totals[0, -1] == 4096 and totals[1, -1] == 4096
    assert np.all(np.diff(totals, axis=1) >= 0)


def test_vectorised_optimize_equals_per_pair_calls():
    model = make_model("cifar10")
    nodes, replicas = np.array(PAIRS).T
    together = model.optimize(nodes, replicas)
    for i, (n, r) in enumerate(PAIRS):
        alone = model.optimize(n, r)
        assert alone.goodput[0] == together.goodput[i]
        assert alone.local_bsz[0] == together.local_bsz[i]
        assert alone.accum_steps[0] == together.accum_steps[i]


@pytest.mark.parametrize("statistical", [True, False])
def test_dedupe_path_equals_direct_path(statistical):
    rng = np.random.default_rng(11)
    model = make_model("cifar10", 0.5, 5.0)
    base = np.array(PAIRS)
    picks = base[rng.integers(0, len(base), 500)]  # 500 pairs, 15 distinct: dedupe path
    many = model.optimize(picks[:, 0], picks[:, 1], statistical)
    direct = model.optimize(base[:, 0], base[:, 1], statistical)  # 15 pairs: direct path
    index = {tuple(p): i for i, p in enumerate(base)}
    rows = [index[tuple(p)] for p in picks]
    np.testing.assert_array_equal(many.goodput, direct.goodput[rows])
    np.testing.assert_array_equal(many.local_bsz, direct.local_bsz[rows])
    np.testing.assert_array_equal(many.accum_steps, direct.accum_steps[rows])
    # More than 64 pairs, all distinct: no dedupe, but the same answers as one-by-one.
    distinct = np.array([(n, r) for n in range(1, 11) for r in range(n, n + 10)])
    big = model.optimize(distinct[:, 0], distinct[:, 1], statistical)
    for i in range(0, len(distinct), 9):
        one = model.optimize(distinct[i, 0], distinct[i, 1], statistical)
        assert (big.goodput[i], big.local_bsz[i], big.accum_steps[i]) == (
            one.goodput[0],
            one.local_bsz[0],
            one.accum_steps[0],
        )


def test_per_pair_gradient_statistics_equal_separate_models():
    model = make_model("cifar10")
    stats = [(1.0, 3.0), (0.01, 50.0), (5.0, 0.1)]
    pairs = np.array([(1, 1), (2, 8), (4, 16)] * 30)  # 90 pairs: more than the dedupe cutoff
    sqr = np.array([stats[i % 3][0] for i in range(90)])
    var = np.array([stats[i % 3][1] for i in range(90)])
    sqr[3:6], var[3:6] = sqr[6:9][::-1].copy(), var[6:9][::-1].copy()  # break the 3-cycle
    mixed = model.optimize(pairs[:, 0], pairs[:, 1], grad_sqr=sqr, grad_var=var)
    for i in range(0, 90, 7):
        own = GoodputModel(model.params, 128, 4096, 32, 1024, float(sqr[i]), float(var[i]))
        one = own.optimize(pairs[i, 0], pairs[i, 1])
        assert mixed.goodput[i] == pytest.approx(one.goodput[0], rel=1e-12)
        assert (mixed.local_bsz[i], mixed.accum_steps[i]) == (one.local_bsz[0], one.accum_steps[0])


@pytest.mark.parametrize("kind", ["cifar10", "bert", "ncf"])
def test_throughput_objective_picks_larger_batches(kind):
    model = make_model(kind, 1.0, 3.0)
    nodes, replicas = np.array(PAIRS).T
    good = model.optimize(nodes, replicas)
    fast = model.optimize(nodes, replicas, statistical=False)
    good_total = replicas * good.local_bsz * (good.accum_steps + 1)
    fast_total = replicas * fast.local_bsz * (fast.accum_steps + 1)
    assert np.all(fast_total >= good_total)
    assert np.any(fast_total > good_total)  # the efficiency term really shrinks some batches
    for i, (n, r) in enumerate(PAIRS):
        value, b, s = brute_force(model, n, r, statistical=False)
        assert fast.goodput[i] == pytest.approx(value, rel=1e-9)
        assert (fast.local_bsz[i], fast.accum_steps[i]) == (b, s)


def test_speedup_relative_to_base():
    model = make_model("cifar10")
    base = float(model.optimize(1, 1).goodput[0])
    speedup = model.speedup(np.array([1, 0, 2, 4]), np.array([1, 0, 8, 16]), base)
    assert speedup[0] == pytest.approx(1.0)
    assert speedup[1] == 0.0
    assert 1.0 < speedup[2] < speedup[3] < 16


# ------------------------------------------------------------------------ fixed batch (SPEC 5.3)
@pytest.mark.parametrize(
    ("total", "replicas", "limits", "expected"),
    [
        (32768, 1, (256, 32768, 32768), (16384, 1)),  # SPEC 5.5: ncf on one GPU
        (32768, 4, (256, 32768, 32768), (8192, 0)),
        (128, 1, (128, 4096, 1024), (128, 0)),  # at M0 one GPU needs no accumulation
        (256, 1, (128, 4096, 1024), (128, 1)),  # above M0 it must accumulate
        (4096, 1, (128, 4096, 1024), (1024, 3)),
        (1000, 3, (128, 4096, 1024), (334, 0)),
        (4096, 3, (128, 4096, 1024), (682, 1)),  # ceil gives 683, the max-batch clamp 682
        (384, 4, (12, 384, 12), (12, 7)),  # bert: 96 per GPU in 8 micro-steps of 12
    ],
)
def test_fixed_batch_config_examples(total, replicas, limits, expected):
    init, max_batch, max_local = limits
    lim = Limits(init, max_batch, 1, max_local, 1)
    assert fixed_batch_config(total, replicas, lim) == expected
