"""Scheduling policies: the registry, baseline behaviour from SPEC 7 (Tiresias, FIFO, Optimus),
the elastic greedy optimiser, and goodput versus throughput-only on a contended workload."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest
from round_records import allocation_entries

from goodput_sim import api
from goodput_sim.errors import InputError
from goodput_sim.inputs.cluster import ClusterSpec
from goodput_sim.policies import Decision, JobView, Snapshot, get_policy, policy_names
from goodput_sim.policies.elastic import Goodput, ThroughputOnly
from goodput_sim.policies.fifo import Fifo
from goodput_sim.policies.greedy import solve_greedy
from goodput_sim.policies.optimus import Optimus
from goodput_sim.policies.problem import AllocationProblem, speedup_table
from goodput_sim.policies.tiresias import QUEUE_THRESHOLD, Tiresias
from goodput_sim.profiles import load_profiles
from goodput_sim.results.metrics import summarize
from goodput_sim.sim.engine import Simulation
from goodput_sim.sim.jobs import JobBelief
from goodput_sim.spec import SimConfig

COLUMNS = ["name", "time", "application", "num_replicas", "batch_size"]


@pytest.fixture(scope="module")
def profiles():
    return load_profiles()


def fixed_total_batch(batch: int, replicas: int, lim) -> int:
    """SPEC 5.3 by hand: the total batch a fixed-batch job really runs on ``replicas`` GPUs."""
    local = math.ceil(batch / replicas - 1e-8)
    accum = math.ceil(local / lim.max_local_bsz - 1e-8) - 1
    if replicas == 1 and batch > lim.init_batch_size:
        accum = max(accum, 1)
    b = math.ceil(local / (accum + 1) - 1e-8)
    b = min(b, lim.max_batch_size // (replicas * (accum + 1)))
    return replicas * b * (accum + 1)


class Views:
    """Builds snapshots for a fixed set of jobs, feeding decisions back as allocations."""

    def __init__(self, cluster: ClusterSpec, profiles, jobs, beliefs=None, truth=False):
        self.cluster = cluster
        self.profiles = profiles
        self.jobs = {j[0]: j for j in jobs}  # name -> (name, app, arrival, replicas, batch)
        self.alloc = {name: np.zeros(cluster.nodes, dtype=np.int64) for name in self.jobs}
        self.service = dict.fromkeys(self.jobs, 0.0)
        self.restarts = dict.fromkeys(self.jobs, 0)
        self.beliefs = beliefs or {
            name: JobBelief(profiles[app].limits) for name, app, *_ in self.jobs.values()
        }
        self.truth = truth

    def snapshot(self, now: float, names=None) -> Snapshot:
        names = names if names is not None else list(self.jobs)
        views = []
        for name in sorted(names, key=lambda n: (self.jobs[n][2], n)):
            _, app, arrival, replicas, batch = self.jobs[name]
            profile = self.profiles[app]
            views.append(
                JobView(
                    name=name,
                    application=app,
                    arrival=arrival,
                    age=now - arrival,
                    attained_service=self.service[name],
                    num_restarts=self.restarts[name],
                    allocation=self.alloc[name].copy(),
                    requested_replicas=replicas,
                    requested_batch=batch,
                    limits=profile.limits,
                    epoch=0,
                    belief=self._frozen_belief(name),
                    truth=profile if self.truth else None,
                )
            )
        return Snapshot(now, self.cluster, tuple(views), 30.0)

    def _frozen_belief(self, name: str):
        """The belief as the engine hands it over: refreshed, then frozen."""
        self.beliefs[name].refresh()
        return self.beliefs[name].view()

    def apply(self, decision, snapshot: Snapshot, interval: float = 60.0) -> None:
        """Take a decision as the engine would; check it fits the cluster."""
        assert isinstance(decision, Decision)
        decision = decision.allocations
        names = [v.name for v in snapshot.jobs]
        assert set(decision) <= set(names)
        zeros = np.zeros(self.cluster.nodes, dtype=np.int64)
        rows = {n: np.asarray(decision.get(n, zeros), dtype=np.int64) for n in names}
        matrix = np.array(list(rows.values()))
        assert (matrix >= 0).all()
        assert (matrix.sum(axis=0) <= self.cluster.gpus_per_node).all()
        for name, row in rows.items():
            if not np.array_equal(row, self.alloc[name]) and row.sum() > 0:
                self.restarts[name] += 1
            self.alloc[name] = row
            self.service[name] += row.sum() * interval

    def replicas(self, name: str) -> int:
        return int(self.alloc[name].sum())


# --------------------------------------------------------------------------------- registry
@pytest.mark.parametrize("name", policy_names())
def test_every_registered_policy_instantiates(name):
    policy = get_policy(name, seed=3)
    assert policy.name == name
    assert policy.seed == 3
    assert policy.describe()["name"] == name


@pytest.mark.parametrize(
    ("alias", "cls"),
    [
        ("fixed-batch", Tiresias),
        ("pollux", Goodput),
        ("throughput-only", ThroughputOnly),
        ("optimus+oracle", Optimus),
        ("tiresias", Tiresias),
        ("goodput", Goodput),
        ("throughput", ThroughputOnly),
        ("optimus", Optimus),
        ("fifo", Fifo),
    ],
)
def test_aliases(alias, cls):
    assert type(get_policy(alias)) is cls


def test_unknown_policy_names_the_known_ones():
    with pytest.raises(InputError) as info:
        get_policy("no-such-policy")
    message = str(info.value)
    assert "no-such-policy" in message
    for name in ["fifo", "tiresias", "optimus", "goodput", "throughput", "pollux", "fixed-batch"]:
        assert name in message


def test_only_optimus_needs_the_oracle():
    # Optimus+Oracle and Gavel (which profiles jobs offline) read true throughput.
    assert {n for n in policy_names() if get_policy(n).needs_oracle} == {"optimus", "gavel"}


# --------------------------------------------------------------------------------- tiresias
def test_tiresias_gang_schedules_with_skip_ahead(profiles):
    cluster = ClusterSpec.uniform(2, 4)
    views = Views(
        cluster,
        profiles,
        [
            ("a", "cifar10", 0.0, 6, 2048),
            ("b", "cifar10", 1.0, 4, 2048),  # does not fit after a
            ("c", "cifar10", 2.0, 2, 2048),  # skips ahead of b
        ],
    )
    policy = Tiresias()
    snap = views.snapshot(0.0)
    views.apply(policy.allocate(snap), snap)
    assert views.replicas("a") == 6
    assert views.replicas("b") == 0
    assert views.replicas("c") == 2
    # Running jobs keep their placement next round.
    rows = {n: views.alloc[n].copy() for n in "ac"}
    snap = views.snapshot(60.0)
    views.apply(policy.allocate(snap), snap)
    for n in "ac":
        assert np.array_equal(views.alloc[n], rows[n])


def test_tiresias_demotes_after_16_gpu_hours(profiles):
    assert QUEUE_THRESHOLD == 57_600
    cluster = ClusterSpec.uniform(1, 4)
    views = Views(
        cluster,
        profiles,
        [("a", "cifar10", 0.0, 4, 2048), ("b", "cifar10", 600.0, 4, 2048)],
    )
    policy = Tiresias()
    for now in np.arange(0.0, 14_401.0, 60.0):
        names = [n for n in "ab" if views.jobs[n][2] <= now]
        snap = views.snapshot(now, names)
        views.apply(policy.allocate(snap), snap)
        if now < 14_400:  # a has run < 57,600 GPU-seconds: stays in Q0, b waits
            assert views.replicas("a") == 4, now
            assert views.replicas("b") == 0, now
    # At t = 14,400 s a has 4 x 14,400 = 57,600 GPU-seconds: demoted, b (Q0) preempts it.
    assert views.replicas("a") == 0
    assert views.replicas("b") == 4
    assert policy.queues == (["b"], ["a"])
    # No promotion: once b is gone a runs again, but a newcomer in Q0 still preempts it.
    snap = views.snapshot(14_460.0, ["a"])
    views.apply(policy.allocate(snap), snap)
    assert views.replicas("a") == 4
    views.jobs["c"] = ("c", "cifar10", 14_500.0, 4, 2048)
    views.alloc["c"] = np.zeros(1, dtype=np.int64)
    views.service["c"], views.restarts["c"] = 0.0, 0
    views.beliefs["c"] = JobBelief(profiles["cifar10"].limits)
    snap = views.snapshot(14_520.0, ["a", "c"])
    views.apply(policy.allocate(snap), snap)
    assert views.replicas("c") == 4 and views.replicas("a") == 0
    assert "a" in policy.queues[1] and "a" not in policy.queues[0]


def test_tiresias_gangs_in_the_engine(profiles):
    wl = pd.DataFrame(
        [
            ("c1", 0, "cifar10", 4, 2048),
            ("b1", 10, "bert", 6, 384),
            ("n1", 20, "ncf", 1, 32768),
            ("c2", 30, "cifar10", 8, 2048),
        ],
        columns=COLUMNS,
    )
    result = api.run("tiresias", wl, profiles, cluster="2x4", config=SimConfig(horizon=7200))
    spec = wl.set_index("name")
    seen = set()
    for text in result.rounds["allocations"]:
        for name, gpus, batch in allocation_entries(text):
            job = spec.loc[name]
            assert gpus == job["num_replicas"]  # exactly the requested GPUs, never fewer
            lim = profiles[job["application"]].limits
            assert batch == fixed_total_batch(job["batch_size"], gpus, lim)
            seen.add(name)
    assert seen == set(wl["name"])


# ------------------------------------------------------------------------------------- fifo
def test_fifo_is_non_preemptive_and_backfills(profiles):
    cluster = ClusterSpec.uniform(1, 4)
    views = Views(
        cluster,
        profiles,
        [
            ("big", "cifar10", 0.0, 4, 2048),
            ("small", "cifar10", 10.0, 2, 2048),
            ("late", "ncf", 20.0, 2, 32768),
        ],
    )
    views.alloc["small"] = np.array([2])  # already running (e.g. big arrived while it started)
    policy = Fifo()
    for now in (60.0, 120.0):
        snap = views.snapshot(now)
        views.apply(policy.allocate(snap), snap)
        assert views.replicas("small") == 2  # keeps its GPUs although big is older
        assert views.replicas("big") == 0  # waits: only 2 GPUs free
        assert views.replicas("late") == 2  # a later job that fits starts ahead (backfill)
    assert views.restarts["small"] == 0


def test_fifo_never_restarts_in_the_engine(profiles):
    wl = pd.DataFrame(
        [
            ("c1", 0, "cifar10", 6, 2048),
            ("c2", 10, "cifar10", 4, 2048),
            ("n1", 20, "ncf", 1, 32768),
            ("n2", 30, "ncf", 1, 32768),
        ],
        columns=COLUMNS,
    )
    jobs = api.run("fifo", wl, profiles, cluster="2x4").jobs.set_index("name")
    assert (jobs["restarts"] == 0).all()
    # Backfill: the ncf jobs start long before c2, which waits for c1's GPUs.
    assert jobs.loc["n1", "start"] < jobs.loc["c2", "start"]
    assert jobs.loc["c2", "start"] >= jobs.loc["c1", "finish"]
    for row in wl.itertuples():
        lim = profiles[row.application].limits
        expected = fixed_total_batch(row.batch_size, row.num_replicas, lim)
        assert jobs.loc[row.name, "final_batch_size"] == expected


# ---------------------------------------------------------------------------------- optimus
def _mixed_jobs(count: int):
    apps = [("cifar10", 4, 2048), ("ncf", 1, 32768), ("bert", 6, 384), ("deepspeech2", 6, 320)]
    return [(f"j{i}", *apps[i % 4][:1], float(i), *apps[i % 4][1:]) for i in range(count)]


@pytest.mark.parametrize("count", [1, 5, 8])
def test_optimus_gives_every_job_a_gpu_when_they_suffice(count, profiles):
    cluster = ClusterSpec.uniform(2, 4)
    views = Views(cluster, profiles, _mixed_jobs(count), truth=True)
    policy = Optimus()
    for now in (0.0, 60.0, 120.0):
        snap = views.snapshot(now)
        views.apply(policy.allocate(snap), snap)
        counts = [views.replicas(n) for n in views.jobs]
        assert min(counts) >= 1
        assert sum(counts) <= cluster.total_gpus
    if count < cluster.total_gpus:  # spare GPUs go to jobs that speed up
        assert sum(counts) > count


def test_optimus_short_of_gpus_serves_arrival_order(profiles):
    cluster = ClusterSpec.uniform(2, 4)
    views = Views(cluster, profiles, _mixed_jobs(11), truth=True)
    snap = views.snapshot(0.0)
    views.apply(Optimus().allocate(snap), snap)
    assert [views.replicas(f"j{i}") for i in range(11)] == [1] * 8 + [0] * 3


# ---------------------------------------------------------------------------------- elastic
@pytest.fixture(scope="module")
def oracle_beliefs(profiles):
    """True throughput parameters per application, as oracle-mode beliefs would hold."""
    wl = pd.DataFrame(
        [(a, 0, a, 1, 64) for a in ("cifar10", "ncf", "bert", "deepspeech2")], columns=COLUMNS
    )
    sim = Simulation(wl, profiles, Fifo(), ClusterSpec.uniform(4, 4), SimConfig(oracle=True))
    return {job.spec.application: job.belief.params for job in sim.jobs}


def _elastic_views(profiles, oracle_beliefs, count: int, cluster: ClusterSpec) -> Views:
    jobs = _mixed_jobs(count)
    beliefs = {}
    for k, (name, app, *_rest) in enumerate(jobs):
        lim = profiles[app].limits
        # Every other job is profiled (oracle parameters), the others are new.
        beliefs[name] = JobBelief(lim, oracle_beliefs[app] if k % 2 == 0 else None)
        sqr, var = profiles[app].grad_stats(lim.init_batch_size, lim.max_epochs // 2)
        beliefs[name].set_grad_stats(float(sqr), float(var))
    return Views(cluster, profiles, jobs, beliefs=beliefs)


@pytest.mark.parametrize("cls", [Goodput, ThroughputOnly])
@pytest.mark.parametrize("count", [3, 6, 12])
def test_elastic_greedy_is_feasible_and_deterministic(cls, count, profiles, oracle_beliefs):
    cluster = ClusterSpec.uniform(4, 4)
    views = _elastic_views(profiles, oracle_beliefs, count, cluster)
    policy = cls()
    for now in (120.0, 180.0, 240.0):
        snap = views.snapshot(now)
        problem = policy.problem(snap)
        allocation = solve_greedy(problem, cluster.total_gpus)
        assert problem.feasible(allocation)
        decision = policy.allocate(snap).allocations
        again = cls().allocate(snap).allocations
        assert decision.keys() == again.keys()
        for name in decision:
            assert np.array_equal(decision[name], again[name])
        assert np.array_equal(np.array([decision[n] for n in problem.names]), allocation)
        views.apply(Decision(decision), snap)
        if count < cluster.total_gpus:
            assert all(views.replicas(n) >= 1 for n in views.jobs), now
    # Profiled jobs grow beyond one GPU when GPUs are plentiful.
    if count <= 6:
        assert max(views.replicas(n) for n in views.jobs) > 1


@pytest.mark.parametrize("seed", range(6))
def test_greedy_is_feasible_on_synthetic_problems(seed):
    """Near-linear speedups and odd caps push several jobs across nodes: placement must keep
    at most one distributed job per node and respect caps and capacity."""
    rng = np.random.default_rng(seed)
    nodes, gpus = 4, 4
    jobs = int(rng.integers(2, 7))
    caps = rng.integers(1, 9, size=jobs)
    exponents = rng.uniform(0.7, 1.0, size=jobs)
    tables = [
        speedup_table(lambda n, r, a=a: r**a / n**0.05, int(c), nodes, gpus)
        for a, c in zip(exponents, caps, strict=True)
    ]
    current = np.zeros((jobs, nodes), dtype=np.int64)
    for _ in range(3):
        penalties = rng.uniform(0.2, 1.0, size=jobs)
        problem = AllocationProblem(
            [f"j{k}" for k in range(jobs)], caps, penalties, current, gpus, tables
        )
        allocation = solve_greedy(problem, nodes * gpus)
        assert problem.feasible(allocation), allocation
        assert np.array_equal(allocation, solve_greedy(problem, nodes * gpus))
        if jobs <= nodes * gpus:
            assert (allocation.sum(axis=1) >= 1).all()
        current = allocation


@pytest.mark.parametrize("caps", [[6, 6, 6], [5, 5, 5], [5, 5, 5, 1], [7, 7]])
def test_greedy_avoids_interference_when_it_binds(caps):
    """Linear speedups make every job want more than a node; only one distributed job may use
    each node, so some jobs must stay on one node."""
    caps = np.array(caps)
    tables = [speedup_table(lambda n, r: r, int(c), 4, 4) for c in caps]
    problem = AllocationProblem(
        [f"j{k}" for k in range(len(caps))],
        caps,
        np.ones(len(caps)),
        np.zeros((len(caps), 4), dtype=np.int64),
        4,
        tables,
    )
    allocation = solve_greedy(problem, 16)
    assert problem.feasible(allocation), allocation
    assert (allocation.sum(axis=1) >= 1).all()
    assert allocation.sum() >= 12  # and it still uses most of the cluster


# ----------------------------------------------------------------- goodput vs throughput
CONTENDED = pd.DataFrame(
    [
        (f"{app}-{i}", i * 120, app, r, b)
        for i, (app, r, b) in enumerate(
            [
                ("cifar10", 4, 2048),
                ("ncf", 1, 32768),
                ("bert", 6, 384),
                ("cifar10", 8, 2048),
                ("ncf", 1, 32768),
                ("cifar10", 6, 2048),
                ("bert", 8, 384),
                ("cifar10", 12, 4096),
                ("ncf", 1, 32768),
                ("cifar10", 6, 2048),
                ("deepspeech2", 6, 320),
                ("ncf", 1, 32768),
            ]
        )
    ],
    columns=COLUMNS,
)


def test_goodput_beats_throughput_only_on_jct_but_processes_fewer_examples(profiles):
    """Measured on this workload (4x4): goodput avg JCT ~1961 s vs ~2547 s; throughput-only
    processes ~244.4M examples vs ~231.2M, trading statistical efficiency for raw speed."""
    jobs = {
        p: api.run(p, CONTENDED, profiles, cluster="4x4").jobs for p in ("goodput", "throughput")
    }
    stats = {p: summarize(j, 16) for p, j in jobs.items()}
    assert stats["goodput"]["unfinished"] == stats["throughput"]["unfinished"] == 0
    assert stats["goodput"]["avg_jct"] < 0.9 * stats["throughput"]["avg_jct"]
    assert jobs["throughput"]["examples"].sum() > jobs["goodput"]["examples"].sum()
