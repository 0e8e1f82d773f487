"""Checkpoints that cost time and job-level crashes: a save costs exactly its seconds, the auto
interval is Young/Daly's, a crash loses exactly the work since the last finished save, and
reallocations save a checkpoint for free (AdaptDL), at a charge, or not at all."""

from __future__ import annotations

import dataclasses
import math

import numpy as np
import pandas as pd
import pytest

from goodput_sim import api
from goodput_sim.errors import InputError
from goodput_sim.inputs.cluster import ClusterSpec
from goodput_sim.inputs.failures import FailureModel
from goodput_sim.policies import get_policy
from goodput_sim.sim.dynamics.checkpoints import young_daly
from goodput_sim.sim.engine import Simulation
from goodput_sim.spec import SimConfig

HEADER = "name,time,application,num_replicas,batch_size\n"
ONE_GPU = pd.read_csv(pd.io.common.StringIO(HEADER + "cifar10-0,0,cifar10,1,128\n"))
CLUSTER = ClusterSpec.uniform(1, 4)


def _one(profiles, config: SimConfig) -> pd.Series:
    return api.run("fifo", ONE_GPU, profiles, CLUSTER, config=config).jobs.iloc[0]


def test_a_save_costs_exactly_its_seconds(profiles):
    """One cifar10 job on one GPU trains T seconds after its 30 s start. Saving every 600 s of
    training for 20 s pauses it at each save: k = ceil(T / 600) - 1 saves, each 20 s later."""
    base = _one(profiles, SimConfig(checkpoint_interval=600.0))
    train = base.finish - base.start - 30.0
    saves = math.ceil(train / 600.0) - 1
    assert saves >= 5
    paid = _one(profiles, SimConfig(checkpoint_interval=600.0, checkpoint_seconds=20.0))
    assert paid.saves == saves
    assert paid.finish - base.finish == pytest.approx(20.0 * saves, abs=1e-6)
    assert paid.restart_gpu_seconds == pytest.approx(30.0 + 20.0 * saves, abs=1e-9)
    assert paid.train_gpu_seconds == pytest.approx(base.train_gpu_seconds, abs=1e-6)


def test_a_save_of_zero_seconds_changes_nothing(profiles, slice40):
    plain = api.run("goodput", slice40, profiles)
    free = api.run("goodput", slice40, profiles, config=SimConfig(checkpoint_seconds=0.0))
    assert plain.jobs.equals(free.jobs) and plain.rounds.equals(free.rounds)


def test_the_auto_interval_is_young_daly(profiles):
    """``sqrt(2 x save x MTBF)``, the effective MTBF adding the job's crash rate and its nodes'
    failure rate; the job saves exactly as often as that interval says."""
    assert young_daly(20.0, 3600.0) == pytest.approx(math.sqrt(2 * 20.0 * 3600.0))
    config = SimConfig(
        checkpoint_interval="auto",
        checkpoint_seconds=20.0,
        failures=FailureModel(mtbf_hours=6.0, job_crash_hours=2.0, seed=0),
    )
    sim = Simulation(ONE_GPU, profiles, get_policy("fifo"), CLUSTER, config)
    job = sim.jobs[0]
    job.nodes_used = 1
    mtbf = 1.0 / (1 / (6 * 3600.0) + 1 / (2 * 3600.0))
    assert sim.dynamic("checkpoints").effective_mtbf(job) == pytest.approx(mtbf, rel=1e-12)
    assert sim.dynamic("checkpoints").interval(job) == pytest.approx(
        math.sqrt(2 * 20.0 * mtbf), rel=1e-12
    )
    # Crashes only: a mean of 100 h lets the job finish unhurt; its saves follow the interval.
    rare = SimConfig(
        checkpoint_interval="auto",
        checkpoint_seconds=20.0,
        failures=FailureModel(job_crash_hours=100.0, seed=0),
    )
    base = _one(profiles, SimConfig())
    run = _one(profiles, rare)
    assert run.crashes == 0
    every = math.sqrt(2 * 20.0 * 100 * 3600.0)
    assert run.saves == math.ceil((base.finish - base.start - 30.0) / every) - 1
    assert run.finish - base.finish == pytest.approx(20.0 * run.saves, abs=1e-6)


@pytest.mark.parametrize(
    "config, message",
    [
        (SimConfig(checkpoint_interval="auto", failures=FailureModel(mtbf_hours=5.0)), "save"),
        (SimConfig(checkpoint_interval="auto", checkpoint_seconds=5.0), "MTBF"),
    ],
)
def test_auto_without_a_save_time_or_an_mtbf_is_refused(profiles, config, message):
    with pytest.raises(InputError, match=message):
        Simulation(ONE_GPU, profiles, get_policy("fifo"), CLUSTER, config)


def test_a_crash_loses_exactly_the_work_since_the_last_checkpoint(profiles):
    """The job's first crash comes after c running seconds (its own seeded stream); with no
    periodic checkpoint before it, it loses c - 30 s of training (its start's restart delay
    is not training), then waits for the next round and restores (30 s)."""
    model = FailureModel(job_crash_hours=0.5, seed=3)
    first = next(model.crash_seconds("cifar10-0", 0.5))
    base = _one(profiles, SimConfig())
    assert 30.0 < first < base.finish - base.start  # the seed gives a crash mid-training
    config = SimConfig(checkpoint_interval=86400.0, failures=model)
    hit = _one(profiles, config)
    assert hit.crashes >= 1 and hit.failures == 0
    assert hit.restores == hit.crashes
    # The work lost at the first crash is the first c - 30 s; later crashes add their own.
    once = SimConfig(checkpoint_interval=86400.0, failures=dataclasses.replace(model))
    sim = Simulation(ONE_GPU, profiles, get_policy("fifo"), CLUSTER, once)
    sim.run()
    assert sim.jobs[0].lost_gpu_seconds >= first - 30.0 - 1e-9
    # Training minus lost work is the crash-free run's training, exactly.
    assert hit.train_gpu_seconds - hit.lost_gpu_seconds == pytest.approx(
        base.train_gpu_seconds, rel=1e-9
    )


def test_a_single_crash_is_exact(profiles):
    """Crashes on average once per job length, and a seed where the job crashes
    once: the finish moves by the lost work, the wait for the next round and the restore's
    restart delay."""
    base = _one(profiles, SimConfig())
    length = base.finish - base.start
    hours = length / 3600.0
    for seed in range(50):
        model = FailureModel(job_crash_hours=hours, seed=seed)
        stream = model.crash_seconds("cifar10-0", hours)
        first, second = next(stream), next(stream)
        if 30.0 < first < length and second > 1.2 * length:  # the rerun needs ~length
            break
    else:
        pytest.fail("no seed in 0..49 crashes the job exactly once")
    hit = _one(profiles, SimConfig(checkpoint_interval=86400.0, failures=model))
    assert hit.crashes == 1
    assert hit.lost_gpu_seconds == pytest.approx(first - 30.0, abs=1e-9)
    crash_at = base.start + first
    resumed_round = math.ceil(crash_at / 60.0) * 60.0
    expected = base.finish + (resumed_round - crash_at) + 30.0 + (first - 30.0)
    assert hit.finish == pytest.approx(expected, abs=1e-6)


def test_a_crash_during_a_save_falls_back_to_the_save_before(profiles):
    """A save counts only once it has finished: a crash inside it restores the one before."""
    config = SimConfig(checkpoint_interval=600.0, checkpoint_seconds=20.0)
    sim = Simulation(ONE_GPU, profiles, get_policy("fifo"), CLUSTER, config)
    job = sim.jobs[0]
    job.checkpoint = (1.0, 0, 100.0)
    job.saving = (2.0, 0, 720.0)
    job.progress, job.replicas = 3.0, 1
    sim.lose_work(job, 710.0)  # inside the save
    assert job.progress == 1.0 and job.lost_gpu_seconds == pytest.approx(610.0)
    job.checkpoint, job.saving, job.progress = (1.0, 0, 100.0), (2.0, 0, 720.0), 3.0
    sim.lose_work(job, 730.0)  # after it
    assert job.progress == 2.0 and job.checkpoint == (2.0, 0, 720.0)


def test_crashes_follow_their_seed_and_conserve_gpu_time(profiles, slice40):
    config = SimConfig(checkpoint_seconds=30.0, failures=FailureModel(job_crash_hours=1.0, seed=1))
    result = api.run("goodput", slice40, profiles, config=config)
    jobs = result.jobs
    assert jobs["crashes"].sum() > 0 and jobs["finished"].all()
    assert (jobs["restores"] == jobs["crashes"]).all()
    assert np.allclose(
        jobs["gpu_seconds"], jobs["train_gpu_seconds"] + jobs["restart_gpu_seconds"], rtol=1e-9
    )
    assert (jobs["train_gpu_seconds"] - jobs["lost_gpu_seconds"] >= -1e-9).all()
    again = api.run("goodput", slice40, profiles, config=config)
    assert again.jobs.equals(jobs)


@pytest.mark.parametrize(
    "policy, params", [("tiresias", {"queue_threshold": 600.0}), ("goodput", {})]
)
def test_reallocations_save_for_free_at_a_charge_or_not_at_all(policy, params, profiles, slice40):
    """free (AdaptDL's, the default) loses nothing at a reallocation; charged pays one save per
    reallocation of a running job and loses nothing; none loses work at reallocations (back to
    the last periodic checkpoint) and so can only add training time. A 2x4 cluster (and, for
    tiresias, a short queue threshold) makes the policies preempt and resize jobs."""
    small = slice40[slice40["num_replicas"] <= 8]
    runs = {
        mode: api.run(
            policy,
            small,
            profiles,
            ClusterSpec.uniform(2, 4),
            config=SimConfig(checkpoint_seconds=20.0, reallocation_checkpoint=mode),
            params=params,
        ).jobs
        for mode in ("free", "charged", "none")
    }
    free, charged, none = runs["free"], runs["charged"], runs["none"]
    assert free["restarts"].sum() > 10  # the case exercises reallocations
    assert free["lost_gpu_seconds"].sum() == 0 and charged["lost_gpu_seconds"].sum() == 0
    assert none["lost_gpu_seconds"].sum() > 0
    # charged: the periodic saves plus one per reallocation that stopped a running job.
    assert charged["saves"].sum() > free["saves"].sum()
    assert charged["jct"].mean() > free["jct"].mean()
    useful = none["train_gpu_seconds"] - none["lost_gpu_seconds"]
    assert (useful >= -1e-9).all() and none["finished"].all()


# ------------------------------------------------------------------------- node lifetimes
def test_weibull_of_shape_one_is_the_exponential_byte_for_byte(profiles, slice40):
    """Weibull(k=1) scaled to mean MTBF is the exponential: numpy draws both from one standard
    exponential, so the whole run is the same."""
    exponential = FailureModel(mtbf_hours=3.0, repair_hours=0.5, seed=4)
    weibull = dataclasses.replace(exponential, lifetime="weibull", weibull_shape=1.0)
    a = api.run("goodput", slice40, profiles, config=SimConfig(failures=exponential))
    b = api.run("goodput", slice40, profiles, config=SimConfig(failures=weibull))
    assert a.jobs["failures"].sum() > 0
    assert a.jobs.equals(b.jobs) and a.rounds.equals(b.rounds)


@pytest.mark.parametrize("shape", [0.5, 0.7, 2.0])
def test_weibull_lifetimes_have_the_mtbf_as_their_mean(shape):
    """Time between a repair and the next failure averages the MTBF at any shape; a shape
    below 1 has more short lifetimes than the exponential (coefficient of variation > 1)."""
    model = FailureModel(
        mtbf_hours=10.0, repair_hours=1e-3, seed=7, lifetime="weibull", weibull_shape=shape
    )
    stream = model.node_failures(0, 1)
    times = np.array([next(stream).time for _ in range(40_000)])
    gaps = np.diff(np.concatenate([[0.0], times])) - np.r_[0.0, np.full(len(times) - 1, 3.6)]
    assert gaps.mean() == pytest.approx(36_000.0, rel=0.03)
    cv = gaps.std() / gaps.mean()
    expected = math.sqrt(math.gamma(1 + 2 / shape) / math.gamma(1 + 1 / shape) ** 2 - 1)
    assert cv == pytest.approx(expected, rel=0.05)


def test_the_failure_free_twin_of_an_auto_interval_run_checkpoints_daily(profiles, slice40):
    """``compare`` (and ``run``) set a failing run against its twin with nothing failing; an
    auto interval there is Young/Daly's with an infinite MTBF, one day, not a refusal."""
    from goodput_sim.api import failure_free
    from goodput_sim.results.metrics import run_summary

    config = SimConfig(
        checkpoint_interval="auto",
        checkpoint_seconds=30.0,
        failures=FailureModel(mtbf_hours=6.0, seed=2),
    )
    plain, _ = failure_free(config, ClusterSpec.uniform(16, 4))
    assert plain.failures is None and plain.checkpoint_interval == 86400.0
    summary = api.compare(["goodput"], slice40, None, "16x4", config=config).summary
    twin = api.run("goodput", slice40, profiles, config=plain)
    assert summary.loc["goodput", "avg_jct_without_failures"] == run_summary(twin)["avg_jct"]


def test_a_crash_rate_that_never_fires_changes_nothing(profiles, slice40):
    """Metamorphic: crashes every ten years on average (none in this run) give the run without
    crashes, but for the crashes column (all zero)."""
    plain = api.run("goodput", slice40, profiles)
    rare = SimConfig(failures=FailureModel(job_crash_hours=87_600.0, seed=0))
    run = api.run("goodput", slice40, profiles, config=rare)
    assert (run.jobs["crashes"] == 0).all()
    assert run.jobs.drop(columns="crashes").equals(plain.jobs)
    assert run.rounds.equals(plain.rounds)
