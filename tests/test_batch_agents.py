"""The seed batch rules as job agents: the critical-batch agent (both modes) and the
tail-weighted agent choose batches by their rules, within the job's limits."""

from __future__ import annotations

import numpy as np
import pytest

from goodput_sim import api
from goodput_sim.agents import get_agent
from goodput_sim.models.efficiency import noise_scale
from goodput_sim.models.tail import learning_rates, noise_blind_batches
from goodput_sim.profiles import load_profiles
from goodput_sim.sim.jobs import JobBelief


@pytest.fixture(scope="module")
def profiles():
    return load_profiles()


def _inputs(profile, epochs_done: int = 0):
    lim = profile.limits
    epochs = np.arange(epochs_done, lim.max_epochs)
    sqr, var = profile.grad_stats(lim.init_batch_size, epochs)
    return JobBelief(lim).view(), sqr, var


def _totals(agent, profile, replicas, requested=None, epochs_done=0):
    belief, sqr, var = _inputs(profile, epochs_done)
    lim = profile.limits
    b, s = agent.configs(belief, requested or lim.init_batch_size, 1, replicas, sqr, var)
    assert b.shape == sqr.shape and (b >= 1).all() and (s >= 0).all()
    total = replicas * b * (s + 1)
    assert (total <= lim.max_batch_size).all()
    return total, noise_scale(lim.init_batch_size, sqr, var)


def test_compute_mode_follows_the_critical_batch(profiles):
    agent = get_agent("critical-batch")
    profile = profiles["cifar10"]
    lim = profile.limits
    total, phi = _totals(agent, profile, replicas=2)
    low = max(lim.init_batch_size, 2 * lim.min_local_bsz)
    want = np.clip(phi, low, lim.max_batch_size)
    inside = (phi > low * 1.1) & (phi < lim.max_batch_size * 0.9)
    assert inside.any()
    np.testing.assert_allclose(total[inside], want[inside], rtol=0.05)  # up to integer rounding
    assert total[-1] > total[0]  # the batch grows as the noise scale does (seed 002)


def test_time_mode_fills_the_gpus_and_never_goes_below_compute_mode(profiles):
    compute = get_agent("critical-batch")
    time = get_agent("critical-batch", {"mode": "time"})
    for name in ("cifar10", "imagenet", "yolov3"):
        profile = profiles[name]
        fast, _ = _totals(time, profile, replicas=4)
        slow, _ = _totals(compute, profile, replicas=4)
        assert (fast >= slow - 4).all(), name  # 4 GPUs of integer rounding
        fill = min(4 * profile.limits.max_local_bsz, profile.limits.max_batch_size)
        assert (fast >= fill - 4).all(), name


def test_tail_weighted_keeps_the_static_budget_and_follows_its_schedule(profiles):
    profile = profiles["cifar10"]
    lim = profile.limits
    agent = get_agent("tail-weighted")
    requested = 1024
    total, _ = _totals(agent, profile, replicas=4, requested=requested)
    assert total.mean() == pytest.approx(requested, rel=0.05)  # same examples per step on average
    per_epoch = agent.values["steps_per_epoch"]
    rates = learning_rates("cosine", lim.max_epochs * per_epoch)
    blind = noise_blind_batches(
        rates, requested * len(rates), lim.init_batch_size, lim.max_batch_size
    )
    want = blind.reshape(lim.max_epochs, per_epoch).mean(axis=1)
    np.testing.assert_allclose(total, want, rtol=0.05, atol=8)
    # Halfway through, the plan covers the remaining epochs with their share of the budget.
    later, _ = _totals(agent, profile, replicas=4, requested=requested, epochs_done=50)
    assert len(later) == lim.max_epochs - 50


def test_tail_weighted_reads_the_applications_schedule(profiles):
    import dataclasses

    profile = profiles["cifar10"]
    belief, sqr, var = _inputs(profile)
    stepped = dataclasses.replace(
        belief, limits=dataclasses.replace(belief.limits, lr_schedule="step")
    )
    agent = get_agent("tail-weighted")
    cosine = agent.configs(belief, 1024, 1, 4, sqr, var)[0]
    step = agent.configs(stepped, 1024, 1, 4, sqr, var)[0]
    assert not np.array_equal(cosine, step)


@pytest.mark.parametrize(
    ("agent", "params"),
    [
        ("critical-batch", {}),
        ("critical-batch", {"mode": "time"}),
        ("tail-weighted", {}),
        ("tail-weighted", {"window": 0}),
    ],
)
@pytest.mark.parametrize("policy", ["goodput", "throughput", "tiresias"])
def test_seed_agents_run_under_every_scheduler(policy, agent, params, profiles):
    result = api.run(
        policy,
        api.bundled_workload(),
        profiles,
        cluster="16x4",
        agent=agent,
        params=params,
        config=api.SimConfig(horizon=3 * 3600.0),
    )
    assert result.jobs["finished"].sum() > 20
    assert result.agent["name"] == agent
