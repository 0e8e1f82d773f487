"""The engine-policy-agent contract: every policy with every agent keeps the invariants, policies
and agents see frozen beliefs only, decisions are validated in one place, and batch agents run
on fixed allocators."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from round_records import allocation_entries
from test_engine import COLUMNS, MIXED

from goodput_sim import api
from goodput_sim.agents import agent_names, get_agent
from goodput_sim.inputs.cluster import ClusterSpec
from goodput_sim.policies import Decision, get_policy, policy_names
from goodput_sim.profiles import load_profiles
from goodput_sim.sim.clock import Cause
from goodput_sim.sim.engine import Simulation
from goodput_sim.sim.jobs import BeliefView
from goodput_sim.spec import SimConfig

SMALL = MIXED.iloc[:5].reset_index(drop=True)  # five jobs that fit a 2x4 cluster
CLUSTER = ClusterSpec.uniform(2, 4)
FAST = {"goodput-ga": {"population": 10, "generations": 3}}  # the GA at reference size is slow


@pytest.fixture(scope="module")
def profiles():
    return load_profiles()


class Watched:
    """Wraps a policy and an agent, checking at every call what each may see and change."""

    def __init__(self, sim: Simulation):
        self.sim = sim
        self.allocations: list[np.ndarray] = []
        self.agent_calls = 0
        policy_allocate, agent_configs = sim.policy.allocate, sim.agent.configs

        def allocate(snapshot):
            assert all(isinstance(view.belief, BeliefView) for view in snapshot.jobs)
            before = self._engine_state()
            decision = policy_allocate(snapshot)
            assert self._engine_state() == before, "the policy changed engine or job state"
            assert isinstance(decision, Decision)
            names = [view.name for view in snapshot.jobs]
            rows = decision.validated(sim.policy.name, names, snapshot.cluster.capacity)
            self.allocations.append(np.array([rows[n] for n in names]))
            return decision

        def configs(belief, *args, **kwargs):
            assert isinstance(belief, BeliefView)
            before = self._engine_state()
            out = agent_configs(belief, *args, **kwargs)
            assert self._engine_state() == before, "the agent changed engine or job state"
            self.agent_calls += 1
            return out

        sim.policy.allocate, sim.agent.configs = allocate, configs

    def _engine_state(self) -> list:
        return [
            (
                j.belief.version,
                j.belief.fits,
                len(j.belief.observations),
                j.allocation.tobytes(),
                j.progress,
                j.epoch,
            )
            for j in self.sim.jobs
        ]


@pytest.mark.parametrize("agent", agent_names())
@pytest.mark.parametrize("policy", policy_names())
def test_every_policy_with_every_agent_keeps_the_invariants(policy, agent, profiles):
    sim = Simulation(
        SMALL,
        profiles,
        get_policy(policy, FAST.get(policy)),
        CLUSTER,
        SimConfig(horizon=4 * 3600.0),
        get_agent(agent),
    )
    watched = Watched(sim)
    result = sim.run()
    assert watched.allocations and watched.agent_calls > 0
    for matrix in watched.allocations:  # no node over capacity, ever
        assert (matrix.sum(axis=0) <= CLUSTER.capacity).all()
    jobs = result.jobs
    assert sorted(jobs["name"]) == sorted(SMALL["name"])  # every job accounted for
    assert jobs["finished"].any()
    assert result.agent["name"] == agent
    done = jobs[jobs["finished"].astype(bool)]
    assert (done["finish"] >= done["arrival"]).all()
    # Each finished job's completion event fired with its exact finish time.
    for row in done.itertuples():
        event = sim.completions[row.name]
        assert event.triggered and event.value.cause is Cause.COMPLETION
        assert event.value.time == row.finish


@pytest.mark.parametrize(
    ("policy", "agent"),
    [
        ("fifo", "fixed"),
        ("tiresias", "fixed"),
        ("optimus", "fixed"),
        ("goodput", "goodput"),
        ("throughput", "throughput"),
    ],
)
def test_a_policy_runs_its_named_default_agent(policy, agent, profiles):
    """Leaving the agent out runs the agent the policy names, and gives that agent's results."""
    implicit = api.run(policy, SMALL, profiles, cluster="2x4")
    explicit = api.run(policy, SMALL, profiles, cluster="2x4", agent=agent)
    assert get_policy(policy).default_agent == agent == implicit.agent["name"]
    pd.testing.assert_frame_equal(implicit.jobs, explicit.jobs)


def _batches_per_job(rounds: pd.DataFrame) -> dict[str, set[int]]:
    out: dict[str, set[int]] = {}
    for text in rounds["allocations"]:
        for name, _, batch in allocation_entries(text):
            out.setdefault(name, set()).add(batch)
    return out


def test_tiresias_with_goodput_agent_adapts_batch_sizes(profiles):
    """Tiresias's GPUs with goodput-chosen batches: batch sizes change over a job's life (the
    beliefs are refreshed before the plan is made), where the fixed agent keeps them."""
    workload = api.bundled_workload()
    fixed = api.run("tiresias", workload, profiles)
    adaptive = api.run("tiresias", workload, profiles, agent="goodput")
    fixed_batches = _batches_per_job(fixed.rounds)
    assert all(len(b) == 1 for b in fixed_batches.values())
    adaptive_batches = _batches_per_job(adaptive.rounds)
    changed = [name for name, b in adaptive_batches.items() if len(b) > 1]
    assert len(changed) >= 10, changed
    assert adaptive.agent == {"name": "goodput"} and fixed.agent == {"name": "fixed"}
    # Same GPUs per job rule, but adaptive batches finish jobs sooner.
    assert adaptive.jobs["jct"].mean() < fixed.jobs["jct"].mean()


class _Bad:
    """Policies returning illegal decisions, one kind each."""

    @staticmethod
    def run(profiles, allocate):
        policy = get_policy("fifo")
        policy.allocate = allocate
        return Simulation(SMALL.iloc[:2], profiles, policy, CLUSTER).run()


@pytest.mark.parametrize(
    ("make", "message"),
    [
        (lambda s: {v.name: np.array([1, 0]) for v in s.jobs}, "returned dict"),
        (lambda s: Decision({"ghost": np.array([1, 0])}), "allocated unknown job 'ghost'"),
        (lambda s: Decision({s.jobs[0].name: np.array([1, 0, 0])}), "malformed row"),
        (lambda s: Decision({s.jobs[0].name: np.array([1.5, 0])}), "malformed row"),
        (lambda s: Decision({s.jobs[0].name: np.array([-1, 0])}), "negative GPUs"),
        (lambda s: Decision({s.jobs[0].name: np.array([5, 0])}), "over-subscribed node(s) [0]"),
        (
            lambda s: Decision({}, agent_hints={"ghost": {"batch": 1}}),
            "hinted unknown job 'ghost'",
        ),
        (
            lambda s: Decision(
                {s.jobs[0].name: np.array([1, 0])}, node_orders={s.jobs[0].name: (1,)}
            ),
            "a node order [1] that is not its used nodes",
        ),
    ],
)
def test_illegal_decisions_are_refused_naming_the_policy(make, message, profiles):
    with pytest.raises(RuntimeError) as err:
        _Bad.run(profiles, make)
    assert "policy fifo" in str(err.value) and message in str(err.value)


def test_two_simulations_share_no_memo(profiles):
    first = Simulation(SMALL, profiles, get_policy("goodput"), CLUSTER)
    second = Simulation(SMALL, profiles, get_policy("goodput"), CLUSTER)
    assert first.book.fit_memo is not second.book.fit_memo
    first.run()
    assert first.book.fit_memo.fitted.cache_info().currsize > 0
    assert second.book.fit_memo.fitted.cache_info().currsize == 0
    assert first.policy._best_goodputs is not second.policy._best_goodputs


def test_fairness_exponent_minus_one_is_the_default(profiles):
    default = api.run("goodput", SMALL, profiles, cluster="2x4")
    explicit = api.run("goodput", SMALL, profiles, cluster="2x4", params={"p": -1})
    pd.testing.assert_frame_equal(default.jobs, explicit.jobs)
    assert explicit.policy["p"] == -1.0


def test_the_fairness_exponent_is_read(profiles):
    """Different exponents give different allocations (p = -3, -1 and 0 differ pairwise on
    these five jobs); each run records its exponent."""
    jcts = {}
    for p in (-3.0, -1.0, 0.0, 1.0):
        result = api.run("goodput", SMALL, profiles, cluster="2x4", params={"p": p})
        assert result.jobs["finished"].all() and result.policy["p"] == p
        jcts[p] = tuple(result.jobs["jct"])
    assert len({jcts[-3.0], jcts[-1.0], jcts[0.0]}) == 3


def test_interference_avoidance_can_be_switched_off(profiles):
    result = api.run(
        "goodput", SMALL, profiles, cluster="2x4", params={"interference_avoidance": "false"}
    )
    assert result.jobs["finished"].all()
    assert result.policy["interference_avoidance"] is False


def test_baselines_record_the_order_they_fill_nodes():
    """Most-free-first filling visits nodes in its own order, which the reference reads a split
    job's measured step time in (SPEC 5.9); node-id order reads another layout."""
    from goodput_sim.policies.placement import keep_or_fill
    from goodput_sim.sim.jobs import Job, JobBelief, JobSpec

    cluster = ClusterSpec.uniform(4, 4)

    class View:
        name, replicas, allocation = "big", 0, np.zeros(4, dtype=np.int64)

    # Nodes 1 and 2 are partly busy: 9 GPUs go to node 0 (4), node 3 (4), then node 2 (1).
    free_before = cluster.capacity.copy()
    occupied = Decision({})
    assert not occupied.node_orders
    busy = type("Busy", (), {"name": "busy", "replicas": 5, "allocation": np.array([0, 3, 2, 0])})
    decision = keep_or_fill([busy, View], {"busy": 5, "big": 9}, cluster)
    assert decision.allocations["big"].tolist() == [4, 0, 1, 4]
    assert decision.node_orders["big"] == (0, 3, 2)
    assert (cluster.capacity == free_before).all()  # the cluster's vector is never written
    job = Job(JobSpec("big", "cifar10", 0.0, 9, 2048), None, JobBelief(None), 4)
    job.assign(decision.allocations["big"], decision.node_orders["big"])
    assert job.placement == (4, 1, 4) and job.layout == (4, 4, 1)
    job.assign(decision.allocations["big"])
    assert job.layout == job.placement


@pytest.mark.parametrize("policy", ["goodput", "throughput", "optimus"])
def test_ncf_keeps_one_gpu_and_its_batch_where_the_reference_fixes_them(policy, profiles):
    """SPEC 5.5, 6.2, 7.1: the Pollux artifact caps ncf at one GPU under Pollux and Optimus and
    trains it at a fixed 32768 under Pollux; the bundled ncf profile carries both rules."""
    limits = profiles["ncf"].limits
    assert (limits.max_replicas, limits.fixed_batch_size) == (1, 32768)
    workload = pd.DataFrame(
        [(f"ncf-{k}", 60 * k, "ncf", 1, 32768) for k in range(3)]
        + [("cifar10-a", 0, "cifar10", 4, 2048)],
        columns=COLUMNS,
    )
    result = api.run(policy, workload, profiles, cluster="2x4")
    seen = {}
    for text in result.rounds["allocations"]:
        for name, gpus, batch in allocation_entries(text):
            seen.setdefault(name, set()).add((gpus, batch))
    for name in ("ncf-0", "ncf-1", "ncf-2"):
        assert seen[name] == {(1, 32768)}, (name, seen[name])
    assert max(g for g, _ in seen["cifar10-a"]) > 1  # other applications still scale
