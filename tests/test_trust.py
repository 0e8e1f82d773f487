"""Results to trust when the axes meet: batch agents bound to the GPU type a job runs on and
checked, simulations that never change their inputs, one meaning of the restart delay, an
explicit order of events due at one instant, and failure traces checked however they come.

Each test reproduces a silent error of an earlier version (the figures are in its docstring)."""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import pytest

from goodput_sim import api
from goodput_sim.agents import get_agent
from goodput_sim.agents.base import BatchAgent
from goodput_sim.autoscale import AutoscaleConfig
from goodput_sim.errors import InputError
from goodput_sim.inputs.cluster import ClusterSpec, parse_cluster
from goodput_sim.inputs.failures import Failure, FailureModel
from goodput_sim.policies import get_policy
from goodput_sim.profiles import bundled_profiles_path, load_profiles
from goodput_sim.sim.clock import ORDER, PRIORITY, Cause
from goodput_sim.sim.engine import Simulation
from goodput_sim.sim.observe import RoundRecord
from goodput_sim.spec import SimConfig

ROOT = Path(__file__).resolve().parents[1]
SIA_MIX = ROOT / "configs" / "cluster-sia-default.yaml"
POLICIES = ("fifo", "tiresias", "optimus", "throughput", "goodput", "goodput-ga", "sia", "gavel")
AGENTS = ("fixed", "goodput", "throughput", "critical-batch", "tail-weighted")
TINY = {"goodput-ga": {"population": 10, "generations": 5}}


@pytest.fixture(scope="module")
def typed_profiles():
    return load_profiles(ROOT / "traces" / "profiles-sia")


@pytest.fixture(scope="module")
def sia_slice() -> pd.DataFrame:
    """The first job of each application of the bundled heterogeneous workload."""
    jobs = pd.read_csv(ROOT / "traces" / "workloads" / "heterogeneous.csv")
    return jobs.groupby("application", sort=False).head(1).reset_index(drop=True)


# ------------------------------------------------------------- agents bound to the GPU type
@pytest.mark.parametrize("policy", POLICIES)
def test_no_agent_runs_a_per_gpu_batch_above_its_gpu_types_limit(policy, typed_profiles, sia_slice):
    """On the Sia mix the type-blind belief carried the first type's limits: yolov3 ran 16
    per GPU on rtx (limit 8), deepspeech2 80 (limit 57); on this slice 3-45 job-rounds over
    the limit under goodput and gavel with adaptive agents. Every round of every policy x agent
    is watched here."""
    over: list[tuple] = []
    ran: list[int] = []

    def watch(record: RoundRecord) -> None:
        for job in record.running:
            limits = typed_profiles[job.application].for_type(job.gpu_type).limits
            ran.append(job.local_bsz)
            if not 1 <= job.local_bsz <= limits.max_local_bsz:
                over.append((job.name, job.gpu_type, job.local_bsz, limits.max_local_bsz))

    cluster = parse_cluster(SIA_MIX)
    for agent in AGENTS:
        result = api.run(
            policy,
            sia_slice,
            typed_profiles,
            cluster,
            agent=agent,
            params=TINY.get(policy),
            observers=[watch],
        )
        assert result.jobs["finished"].all(), (policy, agent)
    assert ran and not over, over[:5]


class _Scaled(BatchAgent):
    """A broken agent: its fixed plan times ``factor`` per GPU."""

    name = "scaled"

    def __init__(self, factor: float):
        super().__init__()
        self.factor = factor
        self.inner = get_agent("fixed")

    def configs(self, belief, requested_batch, nodes, replicas, grad_sqr, grad_var, hint=None):
        local, accum = self.inner.configs(
            belief, requested_batch, nodes, replicas, grad_sqr, grad_var, hint
        )
        return (local * self.factor).astype(local.dtype), accum


@pytest.mark.parametrize("factor", [10, 0])
def test_an_agent_beyond_the_limit_or_at_zero_is_an_error(factor):
    """An agent returning 10x the per-GPU limit finished jobs at a total batch of 327,680; one
    returning zero gave 488 numpy warnings and no progress. Both now stop the run, naming the
    agent, the job and the value."""
    profiles = load_profiles(bundled_profiles_path())
    jobs = pd.DataFrame(
        {
            "name": ["c"],
            "time": [0],
            "application": ["cifar10"],
            "num_replicas": [2],
            "batch_size": [512],
        }
    )
    sim = Simulation(
        jobs, profiles, get_policy("fifo"), ClusterSpec.uniform(1, 4), agent=_Scaled(factor)
    )
    limit = profiles["cifar10"].limits.max_local_bsz
    expected = rf"agent scaled gave job 'c' per-GPU batch \d+ .*integer in \[1, {limit}\]"
    with pytest.raises(RuntimeError, match=expected):
        sim.run()


# ------------------------------------------------------------------------------ isolation
def test_a_simulation_never_changes_the_profiles_it_is_given(typed_profiles, sia_slice):
    """Mixing typed and untyped profiles in one workload used to rewrite the untyped profile's
    restart delay and calibration (99 s and 1.7 became None and 1.0)."""
    plain = load_profiles(bundled_profiles_path())["cifar10"]
    plain.restart_delay, plain.slowdown = 99.0, 1.7
    profiles = {**typed_profiles, "cifar10": plain}
    jobs = sia_slice[sia_slice["application"].isin(["cifar10", "bert"])]
    cluster = ClusterSpec.uniform(4, 4, "aws")
    Simulation(jobs, profiles, get_policy("goodput"), cluster).run()
    assert (plain.restart_delay, plain.slowdown) == (99.0, 1.7)


def _writes(job) -> list[str]:
    """Try to write into each part of a job's view a policy can reach; what happened to each."""
    outcomes = []
    targets = [(job.type_speeds, "aws", 1e9), (job.type_beliefs, "aws", None)]
    for mapping, key, value in targets:
        assert mapping is not None
        try:
            mapping[key] = value
            outcomes.append("written")
        except TypeError:
            outcomes.append("refused")
    for truth in (job.truth, *(job.type_truths or {}).values()):
        assert truth is not None
        try:
            truth.restart_delay = 0.0
            outcomes.append("written")
        except AttributeError:
            outcomes.append("refused")
    return outcomes


def test_views_refuse_writes_from_policies(typed_profiles, sia_slice):
    """``JobView.type_speeds`` was the engine's own dict, and oracle views handed out the live
    ground truth: a policy's write persisted into the run."""
    outcomes: list[str] = []

    class Meddler(type(get_policy("sia"))):
        needs_oracle = True  # to be handed the ground truth too

        def allocate(self, snapshot):
            for job in snapshot.jobs:
                outcomes.extend(_writes(job))
            return super().allocate(snapshot)

    Simulation(sia_slice.iloc[:2], typed_profiles, Meddler(), parse_cluster(SIA_MIX)).run()
    assert len(outcomes) > 10 and set(outcomes) == {"refused"}


def test_views_are_made_with_every_field_and_stay_frozen(typed_profiles, sia_slice):
    """The engine makes views without the dataclass's own ``__init__`` (for speed): each has
    every field, equals the view the dataclass makes of the same values, and refuses writes."""
    from dataclasses import FrozenInstanceError, fields

    from goodput_sim.policies.base import JobView

    names = {f.name for f in fields(JobView)}
    seen: list = []

    class Watcher(type(get_policy("sia"))):
        def allocate(self, snapshot):
            seen.extend(snapshot.jobs)
            return super().allocate(snapshot)

    Simulation(sia_slice.iloc[:3], typed_profiles, Watcher(), parse_cluster(SIA_MIX)).run()
    assert seen
    for view in seen:
        assert set(view.__dict__) - {"_replicas"} == names
        assert view == JobView(**{name: getattr(view, name) for name in names})
        assert view.replicas == int(view.allocation.sum())
        with pytest.raises(FrozenInstanceError):
            view.epoch = 0


# ------------------------------------------------------------------- one restart delay
@pytest.mark.parametrize("policy", ["goodput", "sia"])
def test_the_run_restart_setting_does_not_move_typed_applications(
    policy, typed_profiles, sia_slice
):
    """On typed profiles every restart is charged the application's own delay, so the run's
    ``restart_delay`` setting cannot matter; goodput's penalty read the setting instead (on
    the Sia mix 3435 s at 30 vs 3972 s at 600)."""
    cluster = parse_cluster(SIA_MIX)
    short, long = (
        api.run(policy, sia_slice, typed_profiles, cluster, config=SimConfig(restart_delay=d))
        for d in (30.0, 600.0)
    )
    assert short.jobs.equals(long.jobs) and short.rounds.equals(long.rounds)
    assert short.jobs["restarts"].sum() > 0  # restarts happened: the delay was read


# -------------------------------------------------------------------------- event order
def test_the_tie_order_is_explicit_and_total():
    assert ORDER == (
        Cause.FAILURE,
        Cause.CRASH,
        Cause.REPAIR,
        Cause.NODE_READY,
        Cause.ARRIVAL,
        Cause.ROUND,
    )
    assert sorted(PRIORITY.values()) == [PRIORITY[c] for c in ORDER]
    assert min(PRIORITY.values()) > 1  # after simpy's own URGENT and NORMAL events


def _one_node_run(trace=(), arrival=0.0, config=None, cluster=None) -> list[RoundRecord]:
    """Rounds of one 4-GPU cifar10 job under fifo on a 1x4 cluster (or ``cluster``)."""
    records: list[RoundRecord] = []
    jobs = pd.DataFrame(
        {
            "name": ["c"],
            "time": [arrival],
            "application": ["cifar10"],
            "num_replicas": [4],
            "batch_size": [512],
        }
    )
    failures = FailureModel(trace=tuple(Failure(*f) for f in trace)) if trace else None
    config = config or SimConfig(failures=failures)
    api.run("fifo", jobs, None, cluster or "1x4", config=config, observers=[records.append])
    return records


def _round(records: list[RoundRecord], time: float) -> RoundRecord:
    return next(r for r in records if r.time == time)


@pytest.mark.parametrize("failed_at", [500.0, 540.0, 590.0])
def test_a_node_repaired_at_a_round_time_is_usable_in_that_round(failed_at):
    """The round at 600 s used a node repaired at 600 s if it had failed at 500 or 540 s,
    but not at 590 s (its repair event was created after the round's)."""
    records = _one_node_run(trace=[(failed_at, 0, 600.0 - failed_at)])
    assert bool(_round(records, 540.0).running) == (failed_at > 540.0)
    at_600 = _round(records, 600.0)
    assert not at_600.offline_nodes and [j.name for j in at_600.running] == ["c"]


def test_a_node_failing_at_a_round_time_is_down_in_that_round():
    records = _one_node_run(trace=[(600.0, 0, 120.0)])
    assert _round(records, 540.0).running
    at_600 = _round(records, 600.0)
    assert at_600.offline_nodes == {0} and not at_600.running
    assert _round(records, 720.0).running  # repaired at 720 s, a round time


def test_a_job_arriving_at_a_round_time_is_scheduled_in_that_round():
    records = _one_node_run(arrival=600.0)
    assert records[0].time == 600.0 and records[0].running


def test_a_node_booting_until_a_round_time_is_usable_in_that_round():
    """The autoscaler starts the second node at the first round (0 s); it boots for 120 s
    and the 8-GPU job runs from the round at 120 s."""
    scale = AutoscaleConfig(min_nodes=1, max_nodes=2, rule="queue", startup_delay=120.0)
    jobs_gpus = 8
    records: list[RoundRecord] = []
    jobs = pd.DataFrame(
        {
            "name": ["c"],
            "time": [0.0],
            "application": ["cifar10"],
            "num_replicas": [jobs_gpus],
            "batch_size": [512],
        }
    )
    api.run(
        "fifo", jobs, None, "2x4", config=SimConfig(autoscale=scale), observers=[records.append]
    )
    first = next(r for r in records if r.running)
    assert first.time == 120.0 and first.running[0].replicas == jobs_gpus


# ------------------------------------------------------------------------ failure traces
@pytest.mark.parametrize(
    ("trace", "message"),
    [
        ([(100.0, 0, 200.0), (200.0, 0, 10.0)], "node 0 fails again before its repair"),
        ([(200.0, 0, 10.0), (100.0, 1, 10.0)], "time order"),
        ([(-1.0, 0, 10.0)], "failure time"),
        ([(10.0, 0, 0.0)], "repair duration"),
    ],
)
def test_a_failure_trace_from_python_is_checked_like_one_from_a_file(trace, message):
    """The CLI's reader refused overlapping failures of a node; the Python API accepted them."""
    with pytest.raises(InputError, match=message):
        FailureModel(trace=tuple(Failure(*f) for f in trace))


def test_a_failure_trace_naming_a_missing_node_is_refused():
    failures = FailureModel(trace=(Failure(10.0, 5, 10.0),))
    with pytest.raises(InputError, match="node 5 does not exist"):
        _one_node_run(config=SimConfig(failures=failures))
