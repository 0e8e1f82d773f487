"""Seed 002 and 004: gradient-noise-scale estimators, the critical-batch fit and the
tail-weighted schedule's mechanism checks."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest

from goodput_sim.models.critical import fit_critical_batch
from goodput_sim.models.efficiency import estimate_grad_stats, noise_scale
from goodput_sim.models.noise import (
    NoiseEstimate,
    RunningNoiseScale,
    microbatch_estimates,
    two_batch_estimates,
)
from goodput_sim.models.tail import (
    batch_objective,
    clipped_batches,
    learning_rates,
    optimal_batches,
    plan,
    rounded_batches,
    tail_coefficients,
)
from goodput_sim.profiles import load_profiles
from goodput_sim.profiles.critical import (
    noise_trajectory,
    profile_critical_batch,
    steps_and_examples_to_finish,
)

# A known gradient distribution: true gradient G and a diagonal per-example covariance.
DIMS = 50
RNG = np.random.default_rng(2026)
TRUE_G = RNG.normal(0.0, 0.2, DIMS)
PER_EXAMPLE_SD = RNG.uniform(0.5, 2.0, DIMS)
TRUE_G2 = float(np.sum(TRUE_G**2))
TRUE_TRACE = float(np.sum(PER_EXAMPLE_SD**2))


def batch_gradients(rng, batch: int, count: int) -> np.ndarray:
    """``count`` gradients of batches of ``batch`` examples: mean G, covariance Sigma/B."""
    return TRUE_G + rng.normal(0.0, 1.0, (count, DIMS)) * PER_EXAMPLE_SD / math.sqrt(batch)


def _two_batch(rng, small: int, big: int) -> NoiseEstimate:
    g_small, g_big = batch_gradients(rng, small, 1)[0], batch_gradients(rng, big, 1)[0]
    return two_batch_estimates(np.sum(g_small**2), np.sum(g_big**2), small, big)


def _microbatch(rng, q: int, b: int) -> NoiseEstimate:
    return microbatch_estimates(batch_gradients(rng, b, q), b)


ESTIMATORS = {
    "two-batch": lambda rng: _two_batch(rng, 16, 256),
    "microbatch": lambda rng: _microbatch(rng, 8, 32),
}


@pytest.mark.parametrize("name", sorted(ESTIMATORS))
def test_estimators_are_unbiased(name):
    """The mean of many estimates lies within 3 standard errors of the truth, for |G|^2 and
    tr(Sigma) alike."""
    rng = np.random.default_rng(7)
    trials = 4000
    estimates = [ESTIMATORS[name](rng) for _ in range(trials)]
    for field, truth in (("grad_norm_sq", TRUE_G2), ("trace", TRUE_TRACE)):
        values = np.array([getattr(e, field) for e in estimates])
        stderr = values.std(ddof=1) / math.sqrt(trials)
        assert abs(values.mean() - truth) < 3 * stderr, (field, values.mean(), truth, stderr)


@pytest.mark.parametrize("name", sorted(ESTIMATORS))
def test_estimators_reach_five_percent_with_enough_samples(name):
    """Averaging enough measurements (a running estimate) brings the noise scale within 5%."""
    rng = np.random.default_rng(11)
    running = RunningNoiseScale(decay=0.999)
    for _ in range(3000):
        running.update(ESTIMATORS[name](rng))
    truth = TRUE_TRACE / TRUE_G2
    estimate = running.estimate
    assert abs(estimate.grad_norm_sq - TRUE_G2) <= 0.05 * TRUE_G2
    assert abs(estimate.trace - TRUE_TRACE) <= 0.05 * TRUE_TRACE
    assert abs(running.value - truth) <= 0.05 * truth


def test_the_naive_norm_is_biased_and_the_estimator_is_not():
    rng = np.random.default_rng(3)
    grads = [batch_gradients(rng, 32, 8) for _ in range(500)]
    naive = np.mean([np.sum(g.mean(axis=0) ** 2) for g in grads])
    fixed = np.mean([microbatch_estimates(g, 32).grad_norm_sq for g in grads])
    assert naive > 1.05 * TRUE_G2  # |mean g|^2 carries tr(Sigma)/(q b)
    assert abs(fixed - TRUE_G2) < 0.05 * TRUE_G2


def test_two_batch_exact_case_and_errors():
    # |G|^2 = 1, tr(Sigma) = 32: E|G_8|^2 = 5, E|G_32|^2 = 2.
    estimate = two_batch_estimates(5.0, 2.0, 8, 32)
    assert estimate.grad_norm_sq == pytest.approx(1.0)
    assert estimate.trace == pytest.approx(32.0)
    assert estimate.simple_noise_scale == pytest.approx(32.0)
    with pytest.raises(ValueError):
        two_batch_estimates(5.0, 2.0, 32, 8)
    with pytest.raises(ValueError):
        RunningNoiseScale(decay=1.0)
    with pytest.raises(ValueError):
        _ = RunningNoiseScale().value


def test_running_estimate_is_bias_corrected():
    running = RunningNoiseScale(decay=0.9)
    assert running.update(NoiseEstimate(2.0, 10.0)) == pytest.approx(5.0)  # not 0.1-weighted


def test_estimator_maps_onto_reference_grad_columns(reference_dir):
    """SPEC 4.4: grad_sqr is |G|^2 and grad_var is tr(Sigma)/M0. Gradients drawn to match a row
    of the measurements give back that row's grad_sqr and grad_var, and the noise scale
    M0 * grad_var / grad_sqr is tr(Sigma)/|G|^2."""
    frame = pd.read_csv(reference_dir / "traces" / "cifar10" / "validation-128.csv")
    row = frame.iloc[len(frame) // 2]
    m0 = 128
    sqr, var = float(row["grad_sqr"]), float(row["grad_var"])
    rng = np.random.default_rng(5)
    dims = 40
    g = np.full(dims, math.sqrt(sqr / dims))
    sd = np.full(dims, math.sqrt(var * m0 / dims))  # per-example: tr(Sigma) = var * M0
    b, q, trials = 64, 8, 3000
    estimates = np.array(
        [
            estimate_grad_stats(g + rng.normal(0, 1, (q, dims)) * sd / math.sqrt(b), b, m0)
            for _ in range(trials)
        ]
    )
    got_sqr, got_var = estimates.mean(axis=0)
    assert got_sqr == pytest.approx(sqr, rel=0.05)
    assert got_var == pytest.approx(var, rel=0.05)
    assert float(noise_scale(m0, got_sqr, got_var)) == pytest.approx(m0 * var / sqr, rel=0.07)


# ------------------------------------------------------------------------- critical batch
def test_critical_batch_fit_recovers_known_parameters():
    s_min, e_min = 1000.0, 5.0e5  # B_crit = 500
    batch = np.geomspace(32, 8192, 9)
    steps = s_min * (1 + (e_min / s_min) / batch)
    rng = np.random.default_rng(0)
    noisy = steps * np.exp(rng.normal(0, 0.01, steps.shape))
    fit = fit_critical_batch(noisy, noisy * batch)
    assert fit.s_min == pytest.approx(s_min, rel=0.03)
    assert fit.e_min == pytest.approx(e_min, rel=0.03)
    assert fit.b_crit == pytest.approx(500.0, rel=0.05)
    exact = fit_critical_batch(steps, steps * batch)
    assert exact.b_crit == pytest.approx(500.0, rel=1e-6) and exact.rms_log_error < 1e-8
    # At B_crit the run costs twice S_min steps and twice E_min examples (seed 002).
    assert exact.steps(exact.b_crit) == pytest.approx(2 * exact.s_min)
    assert exact.examples(exact.b_crit) == pytest.approx(2 * exact.e_min)
    with pytest.raises(ValueError):
        fit_critical_batch([1.0], [2.0])


@pytest.fixture(scope="module")
def profiles():
    return load_profiles()


def test_noise_scale_grows_during_training_for_every_application(profiles):
    """Seed 002: the critical batch is not a constant; it rises as training proceeds."""
    for name, profile in profiles.items():
        trajectory = noise_trajectory(profile)
        assert len(trajectory.progress) == profile.limits.max_epochs
        assert trajectory.progress[0] == 0 and (np.diff(trajectory.progress) >= 0).all()
        assert trajectory.growth > 1.5, (name, trajectory.growth)


def test_profile_fits_follow_the_tradeoff(profiles):
    """Finishing at a larger fixed batch takes fewer steps and, over the range, more examples
    (measured statistics make the examples curve a little uneven), and the seed's curve fits
    each application's own trade-off within a few percent."""
    for name, profile in profiles.items():
        lim = profile.limits
        batches = np.geomspace(lim.init_batch_size, lim.max_batch_size, 6)
        steps, examples = steps_and_examples_to_finish(profile, batches)
        assert (np.diff(steps) < 0).all() and examples[-1] > examples[0]
        assert profile_critical_batch(profile).rms_log_error < 0.05, name


# ------------------------------------------------------------------------- tail weighting
SEED_STEPS, SEED_BUDGET, SEED_LOW, SEED_HIGH = 64, 64 * 16, 8, 64


@pytest.mark.parametrize("schedule", ["constant", "step", "cosine"])
def test_allocation_ratios_follow_sqrt_c_s(schedule):
    rates = learning_rates(schedule, SEED_STEPS)
    c = tail_coefficients(rates)
    s = np.random.default_rng(1).uniform(0.5, 4.0, SEED_STEPS)
    b = optimal_batches(c, s, SEED_BUDGET)
    assert b.sum() == pytest.approx(SEED_BUDGET, rel=1e-12)
    ratio = b / np.sqrt(c * s)
    np.testing.assert_allclose(ratio, ratio[0], rtol=1e-12)
    # It is the optimum: any feasible perturbation with the same budget does worse.
    best = batch_objective(c, s, b)
    for _ in range(20):
        step = np.random.default_rng(_).normal(0, 0.5, SEED_STEPS)
        other = b + step - step.mean()
        if (other > 0).all():
            assert batch_objective(c, s, other) >= best


def test_scaling_noise_keeps_the_allocation_and_scales_the_objective():
    c = tail_coefficients(learning_rates("cosine", SEED_STEPS))
    s = np.random.default_rng(2).uniform(0.5, 4.0, SEED_STEPS)
    base = optimal_batches(c, s, SEED_BUDGET)
    for k in (0.25, 4.0, 16.0):
        scaled = optimal_batches(c, k * s, SEED_BUDGET)
        np.testing.assert_allclose(scaled, base, rtol=1e-12)
        assert batch_objective(c, k * s, scaled) == pytest.approx(
            k * batch_objective(c, s, base), rel=1e-12
        )


def test_tail_coefficients_by_definition():
    rates = np.array([1.0, 0.5, 0.25])
    np.testing.assert_allclose(
        tail_coefficients(rates), [1.0 / (2 * 0.75), 0.25 / (2 * 0.25), 0.125]
    )
    with pytest.raises(ValueError):
        tail_coefficients([1.0, 0.0])
    with pytest.raises(ValueError):
        learning_rates("linear", 10)


def test_clipping_renormalises_the_remaining_budget():
    c = tail_coefficients(learning_rates("cosine", SEED_STEPS))
    b = clipped_batches(c, 1.0, SEED_BUDGET, SEED_LOW, SEED_HIGH)
    assert b.sum() == pytest.approx(SEED_BUDGET)
    assert b.min() >= SEED_LOW - 1e-9 and b.max() <= SEED_HIGH + 1e-9
    free = (b > SEED_LOW + 1e-9) & (b < SEED_HIGH - 1e-9)
    ratio = b[free] / np.sqrt(c[free])
    np.testing.assert_allclose(ratio, ratio[0], rtol=1e-9)  # unclipped steps keep the rule
    with pytest.raises(ValueError):
        clipped_batches(c, 1.0, SEED_BUDGET, 20, 64)  # 64 steps x 20 > budget


def test_rounding_keeps_the_budget():
    b = clipped_batches(tail_coefficients(learning_rates("step", 50)), 1.0, 800, 4, 64)
    for granule in (1, 4):
        rounded = rounded_batches(b, 800, granule)
        assert rounded.sum() == 800 and (rounded % granule == 0).all()
        assert np.abs(rounded - b).max() <= granule


def test_integer_schedule_stays_within_a_tenth_of_a_percent_of_the_continuous_one():
    """Seed 004's setting: 64 steps, cosine decay, a static batch of 16 as the budget, batches in
    [8, 64]: the integer schedule's objective is within 0.1% of the continuous optimum."""
    schedule = plan(learning_rates("cosine", SEED_STEPS), 1.0, SEED_BUDGET, SEED_LOW, SEED_HIGH)
    assert schedule.integer_batches.sum() == SEED_BUDGET
    assert schedule.integer_objective / schedule.objective <= 1.001
    assert schedule.objective < schedule.static_objective()


def test_windowed_plan_spends_the_whole_budget_causally():
    rates = learning_rates("cosine", 96)
    noise = np.linspace(1.0, 8.0, 96)
    schedule = plan(rates, noise, 96 * 16, 4, 64, window=16, smoothing=0.5)
    assert schedule.batches.sum() == pytest.approx(96 * 16)
    assert schedule.integer_batches.sum() == 96 * 16
    # A window plans with what it has measured so far: changing later noise leaves it alone.
    later = noise.copy()
    later[32:] *= 10
    other = plan(rates, later, 96 * 16, 4, 64, window=16, smoothing=0.5)
    np.testing.assert_allclose(other.batches[:32], schedule.batches[:32])


def test_a_causal_plan_is_blind_to_the_noise():
    """With the noise held at its latest estimate for the steps ahead, every windowed plan is
    the bounded optimum with constant noise, whatever the noise does."""
    from goodput_sim.models.tail import noise_blind_batches

    rates = learning_rates("cosine", 96)
    blind = noise_blind_batches(rates, 96 * 16, 4, 64)
    for noise in (np.linspace(1.0, 8.0, 96), np.random.default_rng(4).uniform(0.1, 50, 96)):
        for window, smoothing in ((1, 0.0), (16, 0.5), (40, 0.9)):
            windowed = plan(rates, noise, 96 * 16, 4, 64, window=window, smoothing=smoothing)
            np.testing.assert_allclose(windowed.batches, blind, rtol=1e-9)
    hindsight = plan(rates, np.linspace(1.0, 8.0, 96), 96 * 16, 4, 64)
    assert not np.allclose(hindsight.batches, blind)  # the all-at-once plan does see it
