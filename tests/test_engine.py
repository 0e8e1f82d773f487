"""The discrete-event engine: per-round invariants for every policy, exact small scenarios,
restart delays, the horizon, determinism, beliefs versus ground truth, interference, oracle mode."""

from __future__ import annotations

import dataclasses
import math
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from round_records import allocation_entries

from goodput_sim import api
from goodput_sim.errors import InputError
from goodput_sim.inputs.cluster import ClusterSpec
from goodput_sim.models.throughput import ThroughputModel
from goodput_sim.policies import base as policy_base
from goodput_sim.policies import get_policy, policy_names, register
from goodput_sim.policies.base import Decision, Policy
from goodput_sim.policies.elastic import Goodput
from goodput_sim.policies.fifo import Fifo
from goodput_sim.profiles import load_profiles
from goodput_sim.sim.engine import Simulation
from goodput_sim.sim.jobs import BeliefView, FitMemo, JobBelief
from goodput_sim.spec import SimConfig

COLUMNS = ["name", "time", "application", "num_replicas", "batch_size"]

# A small mixed workload that fits a 2x4 cluster (no job asks for more than 8 GPUs).
MIXED = pd.DataFrame(
    [
        ("cifar10-a", 0, "cifar10", 4, 2048),
        ("ncf-a", 30, "ncf", 1, 32768),
        ("bert-a", 100, "bert", 6, 384),
        ("cifar10-b", 200, "cifar10", 8, 2048),
        ("ncf-b", 250, "ncf", 1, 32768),
        ("cifar10-c", 400, "cifar10", 6, 2048),
        ("ncf-c", 500, "ncf", 1, 32768),
        ("bert-b", 700, "bert", 8, 384),
    ],
    columns=COLUMNS,
)
SMALL_CLUSTER = ClusterSpec.uniform(2, 4)


@pytest.fixture(scope="module")
def profiles():
    return load_profiles()


def workload(*rows) -> pd.DataFrame:
    return pd.DataFrame(list(rows), columns=COLUMNS)


@pytest.fixture
def registered():
    """Register test policies and remove them from the registry afterwards."""
    added: list[str] = []

    def add(cls):
        register()(cls)
        added.append(cls.name)
        return cls

    yield add
    for name in added:
        policy_base._REGISTRY.pop(name, None)


def held_gpu_seconds(rounds: pd.DataFrame, jobs: pd.DataFrame, end: float) -> dict[str, float]:
    """GPU-seconds per job rebuilt from rounds.csv: a job holds the GPUs listed in a round's
    ``allocations`` (``name=g1.g2@batch;...``) until the next round, its finish or ``end``."""
    finish = {r.name: (r.finish if pd.notna(r.finish) else math.inf) for r in jobs.itertuples()}
    times = rounds["time"].astype(float).tolist()
    held = dict.fromkeys(jobs["name"], 0.0)
    for i, (now, text) in enumerate(zip(times, rounds["allocations"], strict=True)):
        until = times[i + 1] if i + 1 < len(times) else end
        for name, gpus, _ in allocation_entries(text):
            held[name] += gpus * max(min(until, finish[name]) - now, 0.0)
    return held


def rounds_csv(result, tmp_path: Path) -> pd.DataFrame:
    """The rounds table as written to and read back from rounds.csv."""
    path = tmp_path / "rounds.csv"
    result.rounds.to_csv(path, index=False)
    return pd.read_csv(path, keep_default_na=False, dtype={"allocations": str})


# ------------------------------------------------------------------------------- invariants
@pytest.mark.parametrize("policy", policy_names())
def test_every_round_respects_the_cluster_and_accounting(policy, profiles, monkeypatch, tmp_path):
    decisions, decided_at = [], []
    original = Decision.validated
    decide = Simulation._decide

    def deciding(self, now, active, offline):
        decided_at.append(now)
        return decide(self, now, active, offline)

    def checked(self, policy_name, names, capacity, node_types=None, rules=None):
        rows = original(self, policy_name, names, capacity, node_types, rules)
        matrix = np.array([rows[name] for name in names])
        assert matrix.shape == (len(names), SMALL_CLUSTER.nodes)
        assert (matrix >= 0).all()
        assert (matrix.sum(axis=0) <= SMALL_CLUSTER.capacity).all()
        for name, row in self.allocations.items():
            assert row is not None and (np.asarray(row) >= 0).all(), name
        decisions.append(matrix)
        return rows

    monkeypatch.setattr(Decision, "validated", checked)
    monkeypatch.setattr(Simulation, "_decide", deciding)
    horizon = 3600.0
    config = SimConfig(horizon=horizon)
    sim = Simulation(MIXED, profiles, get_policy(policy), SMALL_CLUSTER, config)
    result = sim.run()
    jobs = result.jobs

    # One decision per round, or fewer for event-driven policies: each round runs the last.
    assert decisions and len(decisions) == len(decided_at) <= len(result.rounds)
    latest = np.searchsorted(decided_at, result.rounds["time"], side="right") - 1
    assert (latest >= 0).all()
    # What the engine applied and recorded also fits the cluster.
    assert (result.rounds["gpus_in_use"] <= SMALL_CLUSTER.total_gpus).all()
    in_use = [int(decisions[k].sum()) for k in latest]
    assert in_use == result.rounds["gpus_in_use"].tolist()
    assert result.rounds["time"].max() < horizon

    # Never dropped: every workload job is reported, finished or not.
    assert len(jobs) == len(MIXED)
    assert sorted(jobs["name"]) == sorted(MIXED["name"])
    done = jobs[jobs["finished"].astype(bool)]
    open_ = jobs[~jobs["finished"].astype(bool)]
    assert len(done) > 0
    for row in done.itertuples():
        assert pd.notna(row.finish) and row.finish <= horizon
        assert row.jct == pytest.approx(row.finish - row.arrival, abs=1e-9)
        assert row.jct > 0
    for row in open_.itertuples():
        assert pd.isna(row.finish) and pd.isna(row.jct)

    # GPU-seconds accounted = GPUs x time held, rebuilt from rounds.csv.
    held = held_gpu_seconds(rounds_csv(result, tmp_path), jobs, horizon)
    for row in jobs.itertuples():
        assert row.gpu_seconds == pytest.approx(held[row.name], rel=1e-6, abs=1e-6), row.name


# --------------------------------------------------------------------------- exact scenario
def test_single_fifo_job_matches_hand_computation(profiles, tmp_path):
    profile = profiles["cifar10"]
    batch, replicas = 2048, 4
    result = api.run(
        "fifo", workload(("c", 0, "cifar10", replicas, batch)), profiles, cluster="16x4"
    )
    job = result.jobs.iloc[0]

    # By hand: 512 per GPU (<= max_local 1024, no accumulation) on one node with 4 GPUs.
    local = batch // replicas
    step, _sync = profile.step_sync((4,), np.array([float(local)]))
    lim = profile.limits
    seconds = 0.0
    for epoch in range(lim.max_epochs):
        sqr, var = profile.grad_stats(batch, epoch)
        scale = batch / lim.init_batch_size
        gain = (var + sqr) / (var / scale + sqr)
        per_epoch = profile.progress_thresholds[epoch + 1] - profile.progress_thresholds[epoch]
        seconds += float(per_epoch / (gain / step[0]))
    expected = seconds + 30.0

    assert job["start"] == 0.0 and job["queueing"] == 0.0
    assert job["restarts"] == 0
    assert job["finish"] == pytest.approx(expected, abs=1e-6)
    assert job["jct"] == pytest.approx(expected, abs=1e-6)
    assert job["gpu_seconds"] == pytest.approx(replicas * expected, rel=1e-9)
    assert job["final_batch_size"] == batch
    assert bool(job["finished"])
    # All rounds hold the same 4 GPUs on one node.
    assert set(result.rounds["allocations"]) == {f"c=4@{batch}"}


def test_restart_delay_is_paid_on_every_allocation_change(profiles, monkeypatch, tmp_path):
    """With the delay equal to the round interval, every change costs one whole round of
    no progress, still billed in GPU-seconds."""
    states = []
    original = Simulation._record_round

    def spy(self, now, active):
        for job in active:
            states.append((now, tuple(job.allocation), job.progress, job.restart_remaining))
        original(self, now, active)

    monkeypatch.setattr(Simulation, "_record_round", spy)
    config = SimConfig(interval=60.0, restart_delay=60.0)
    sim = Simulation(
        workload(("c", 0, "cifar10", 4, 2048)),
        profiles,
        get_policy("goodput"),
        ClusterSpec.uniform(16, 4),
        config,
    )
    result = sim.run()
    job = result.jobs.iloc[0]
    assert bool(job["finished"])
    assert job["restarts"] >= 1

    running = [s for s in states if sum(s[1]) > 0]
    changes = [
        i for i, s in enumerate(states) if sum(s[1]) > 0 and (i == 0 or s[1] != states[i - 1][1])
    ]
    assert len(changes) == job["restarts"] + 1
    for i in changes:
        assert states[i][3] == 60.0  # the full delay is armed at the change
        if i + 1 < len(states):  # and nothing is learned during it
            assert states[i + 1][2] == states[i][2]
    # GPU-seconds include the delay rounds: GPUs x time held from the first allocation on.
    held = held_gpu_seconds(rounds_csv(result, tmp_path), result.jobs, math.inf)
    assert job["gpu_seconds"] == pytest.approx(held["c"], rel=1e-6)
    delays = sum(sum(states[i][1]) * 60.0 for i in changes)
    assert job["gpu_seconds"] > delays
    assert running


def test_restart_delay_default_is_armed_on_growth(profiles, monkeypatch):
    armed = []
    original = Simulation._reallocate

    def spy(self, job, row, now, node_order):
        original(self, job, row, now, node_order)
        if job.replicas:
            armed.append(job.restart_remaining)

    monkeypatch.setattr(Simulation, "_reallocate", spy)
    sim = Simulation(
        workload(("c", 0, "cifar10", 4, 2048)), profiles, get_policy("goodput"), ClusterSpec()
    )
    job = sim.run().jobs.iloc[0]
    assert job["restarts"] >= 1
    assert armed == [30.0] * (job["restarts"] + 1)


# -------------------------------------------------------------------------------- horizon
@pytest.mark.parametrize("horizon", [600.0, 630.0])
def test_horizon_reports_unfinished_jobs(horizon, profiles, tmp_path):
    wl = workload(("long", 0, "cifar10", 4, 2048), ("late", 1000, "ncf", 1, 32768))
    result = api.run("fifo", wl, profiles, cluster="2x4", config=SimConfig(horizon=horizon))
    jobs = result.jobs.set_index("name")
    assert len(jobs) == 2
    assert not jobs["finished"].any()
    assert jobs["jct"].isna().all() and jobs["finish"].isna().all()
    assert jobs.loc["long", "start"] == 0.0
    assert pd.isna(jobs.loc["late", "start"])
    # The run stopped exactly at the horizon: 4 GPUs held until it, no round at or after it.
    assert jobs.loc["long", "gpu_seconds"] == pytest.approx(4 * horizon, rel=1e-12)
    assert jobs.loc["late", "gpu_seconds"] == 0.0
    assert result.rounds["time"].max() == 60.0 * math.ceil(horizon / 60.0 - 1)
    api.write_run(result, tmp_path / "out", {}, 0)
    written = pd.read_csv(tmp_path / "out" / "jobs.csv")
    assert len(written) == 2 and written["jct"].isna().all()


def test_dataframe_job_larger_than_the_cluster_is_rejected(profiles):
    """A gang job that can never be placed would keep fifo/tiresias waiting forever."""
    wl = workload(("ok", 0, "ncf", 1, 32768), ("big", 0, "cifar10", 16, 4096))
    with pytest.raises(InputError, match="'big' asks for 16 GPUs"):
        api.run("fifo", wl, profiles, cluster="2x4")


# ---------------------------------------------------------------------------- determinism
@pytest.mark.parametrize("policy", ["goodput", "tiresias"])
def test_same_inputs_give_identical_results(policy, profiles, tmp_path):
    outs = []
    for k in range(2):
        result = api.run(policy, MIXED, profiles, cluster="2x4", seed=7)
        outs.append(api.write_run(result, tmp_path / str(k), {}, 7))
    for name in ("jobs.csv", "rounds.csv"):
        assert (outs[0] / name).read_bytes() == (outs[1] / name).read_bytes()


# ---------------------------------------------------------------------- beliefs and truth
class _Recorder:
    """Mixin recording what the policy saw: truth and belief per job per round."""

    seen: list

    def allocate(self, snapshot):
        for view in snapshot.jobs:
            type(self).seen.append(
                (snapshot.time, view.name, view.truth, view.belief, view.belief.params)
            )
        return super().allocate(snapshot)


class SpyGoodput(_Recorder, Goodput):
    name = "test-spy-goodput"
    seen: list = []


class SpyFifo(_Recorder, Fifo):
    name = "test-spy-fifo"
    seen: list = []


class SpyOracle(_Recorder, Fifo):
    name = "test-spy-oracle"
    needs_oracle = True
    seen: list = []


def test_beliefs_start_unprofiled_and_are_refitted(profiles, registered):
    registered(SpyGoodput)
    SpyGoodput.seen = []
    result = api.run("test-spy-goodput", MIXED.iloc[:4], profiles, cluster="2x4")
    assert result.jobs["finished"].all()
    views: dict[str, list] = {}
    for _, name, truth, belief, params in SpyGoodput.seen:
        assert truth is None
        assert isinstance(belief, BeliefView) and belief.params is params
        views.setdefault(name, []).append(belief)
    assert set(views) == set(MIXED["name"].iloc[:4])
    for seen in views.values():
        first, last = seen[0], seen[-1]
        assert first.params is None and first.fits == 0  # unprofiled at its first round
        assert not first.oracle
        assert last.fits > 0 and last.params is not None  # refitted from what it ran
        # Frozen: the view a policy saw in its first round still says what it said then.
        assert first.params is None and first.goodput_model is None
        with pytest.raises(dataclasses.FrozenInstanceError):
            first.params = last.params


def test_identical_observation_histories_share_one_fit(profiles):
    """Jobs of one application that ran the same configurations get the same parameters, the
    second from the fit memo, which equals a fresh fit from the same warm start."""
    limits = profiles["cifar10"].limits
    history = [(1, 1, 128.0, 0.10, 0.10), (1, 2, 128.0, 0.10, 0.12), (2, 4, 128.0, 0.10, 0.16)]
    memo = FitMemo()
    first, second = JobBelief(limits, memo=memo), JobBelief(limits, memo=memo)
    for nodes, replicas, b, step, sync in history:
        for belief in (first, second):
            belief.observe(nodes, replicas, b, step, sync)
            belief.refresh()
    assert first.params == second.params
    assert memo.fitted.cache_info().hits == len(history)
    assert memo.fitted.cache_info().misses == len(history)
    # Another simulation's memo shares nothing with this one.
    assert FitMemo().fitted.cache_info().currsize == 0
    warm = JobBelief(limits)
    for nodes, replicas, b, step, sync in history[:2]:
        warm.observe(nodes, replicas, b, step, sync)
        warm.refresh()
    keys = np.array(list(first.observations), dtype=float)
    times = np.array(list(first.observations.values()))
    fresh = ThroughputModel(warm_start=warm.params).fit(*keys.T, *times.T).params_
    assert fresh == first.params


def test_policies_without_oracle_never_see_truth(profiles, registered):
    registered(SpyFifo)
    registered(SpyOracle)
    SpyFifo.seen, SpyOracle.seen = [], []
    api.run("test-spy-fifo", MIXED.iloc[:3], profiles, cluster="2x4")
    api.run("test-spy-oracle", MIXED.iloc[:3], profiles, cluster="2x4")
    assert SpyFifo.seen and all(truth is None for _, _, truth, _, _ in SpyFifo.seen)
    assert SpyOracle.seen
    for _, name, truth, _, _ in SpyOracle.seen:
        app = MIXED.set_index("name").loc[name, "application"]
        assert truth._profile is profiles[app]  # the truth, behind a read-only view
        with pytest.raises(AttributeError, match="read-only"):
            truth.restart_delay = 1.0
        with pytest.raises(ValueError, match="read-only"):
            truth.progress_thresholds[0] = 1.0
    assert "test-spy-fifo" in policy_names()  # registered for the test; removed afterwards


def test_registry_is_clean_after_spy_tests():
    assert not [n for n in policy_names() if n.startswith("test-spy")]


# ---------------------------------------------------------------------------- interference
class Pinned(Policy):
    """Fixed rows: a and b split 2+2 over nodes 0-1 (sharing both), c alone on node 2,
    d split 2+2 over nodes 3-4 (distributed but alone)."""

    name = "test-pinned"
    ROWS = {
        "a": [2, 2, 0, 0, 0],
        "b": [2, 2, 0, 0, 0],
        "c": [0, 0, 4, 0, 0],
        "d": [0, 0, 0, 2, 2],
    }

    def allocate(self, snapshot):
        return Decision(
            {v.name: np.array(self.ROWS[v.name], dtype=np.int64) for v in snapshot.jobs}
        )


def test_interference_slows_only_distributed_jobs_sharing_a_node(profiles):
    wl = workload(*[(n, 0, "cifar10", 4, 2048) for n in "abcd"])
    finish = {}
    for level in (0.0, 0.5):
        sim = Simulation(
            wl, profiles, Pinned(), ClusterSpec.uniform(5, 4), SimConfig(interference=level)
        )
        jobs = sim.run().jobs.set_index("name")
        assert jobs["finished"].all()
        finish[level] = jobs["finish"]
    for name in "ab":  # slowed by half: twice as long after the 30 s restart
        assert finish[0.5][name] > finish[0.0][name]
        assert finish[0.5][name] - 30 == pytest.approx(2 * (finish[0.0][name] - 30), rel=1e-9)
    for name in "cd":  # single-node, or distributed on nodes nobody else spans
        assert finish[0.5][name] == pytest.approx(finish[0.0][name], rel=1e-12)


# ------------------------------------------------------------------------------ oracle mode
@pytest.mark.parametrize("policy", ["goodput", "throughput"])
def test_oracle_mode_runs(policy, profiles):
    sim = Simulation(
        MIXED.iloc[:5], profiles, get_policy(policy), SMALL_CLUSTER, SimConfig(oracle=True)
    )
    jobs = sim.run().jobs
    assert jobs["finished"].all()
    jct = jobs["jct"].to_numpy(dtype=float)
    assert np.isfinite(jct).all() and (jct > 0).all()
    for job in sim.jobs:  # beliefs are the truth from the start and never refitted
        assert job.belief.oracle and job.belief.params is not None and job.belief.fits == 0


def test_oracle_changes_goodput_decisions(profiles):
    """The first round differs: an oracle belief lets a new job take more than one GPU."""
    runs = {}
    for oracle in (False, True):
        result = api.run(
            "goodput", MIXED.iloc[:1], profiles, cluster="2x4", config=SimConfig(oracle=oracle)
        )
        runs[oracle] = result.rounds
    first_alloc = {k: r.loc[r["gpus_in_use"] > 0, "gpus_in_use"].iloc[0] for k, r in runs.items()}
    assert first_alloc[False] == 1
    assert first_alloc[True] > 1


def blas_threads() -> set[int]:
    """Threads of every BLAS library loaded (empty if none reports)."""
    from threadpoolctl import threadpool_info

    return {info["num_threads"] for info in threadpool_info() if info["user_api"] == "blas"}


def test_fairness_and_cli_commands_run_on_one_blas_thread(monkeypatch):
    """Outside the run itself, too: OpenBLAS's threads spin on the other cores when the
    machine is busy (a workload-6 command took up to 23 s of CPU instead of 5)."""
    from click.testing import CliRunner
    from threadpoolctl import threadpool_limits

    from goodput_sim import cli

    result = api.run("fifo", pd.read_csv(api.bundled_workload()).head(2))
    result.fairness_source = blas_threads
    seen = []
    command = cli.main.get_command(None, "run")
    monkeypatch.setattr(command, "callback", lambda **kwargs: seen.append(blas_threads()))
    with threadpool_limits(limits=2, user_api="blas"):  # the tests themselves run on one
        if blas_threads() != {2}:
            pytest.skip("no BLAS library here takes a thread count")
        assert result.fairness == {1}
        outcome = CliRunner().invoke(cli.main, ["run", "--policy", "fifo"])
    assert outcome.exit_code == 0, outcome.output
    assert seen == [{1}]


def test_building_a_simulation_runs_on_one_blas_thread(monkeypatch):
    """The finishability check interpolates each profile first when the simulation is built,
    before the run; on a busy machine two spinning OpenBLAS threads made a workload-6 run's
    check take 7.3 s of CPU instead of 0.02 s."""
    from threadpoolctl import threadpool_limits

    seen = []
    monkeypatch.setattr(Simulation, "_check_finishable", lambda self: seen.append(blas_threads()))
    with threadpool_limits(limits=2, user_api="blas"):
        if blas_threads() != {2}:
            pytest.skip("no BLAS library here takes a thread count")
        Simulation(pd.read_csv(api.bundled_workload()).head(2), load_profiles(), Fifo())
    assert seen == [{1}]
