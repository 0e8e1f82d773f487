"""Event-driven rounds: a policy that says its answer stands until an event is not asked again
before one, and its results are those of asking every round, byte for byte (metamorphic:
the relation holds without knowing the answer)."""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import pytest

from goodput_sim.inputs.cluster import ClusterSpec
from goodput_sim.inputs.failures import FailureModel
from goodput_sim.policies import get_policy
from goodput_sim.profiles import load_profiles
from goodput_sim.sim.engine import Simulation
from goodput_sim.spec import SimConfig

ROOT = Path(__file__).resolve().parents[1]


def _every_round(policy):
    """The same policy, asked every round."""
    policy.quiet_until = lambda snapshot, rows: snapshot.time
    return policy


@pytest.fixture(scope="module")
def workload() -> pd.DataFrame:
    return pd.read_csv(ROOT / "traces" / "workloads" / "default.csv").head(60)


@pytest.mark.parametrize(
    ("policy", "params"),
    [("fifo", {}), ("tiresias", {}), ("tiresias", {"queue_threshold": 1800.0})],
)
@pytest.mark.parametrize("mtbf", [None, 20.0])
def test_event_driven_rounds_equal_asking_every_round(workload, policy, params, mtbf):
    profiles = load_profiles()
    config = SimConfig(failures=FailureModel(mtbf_hours=mtbf, seed=3) if mtbf else None)
    runs = []
    asked = []
    for make in (lambda p: p, _every_round):
        scheduler = make(get_policy(policy, params))
        calls = []
        allocate = scheduler.allocate
        scheduler.allocate = lambda snapshot, allocate=allocate, calls=calls: (
            calls.append(snapshot.time) or allocate(snapshot)
        )
        sim = Simulation(workload, profiles, scheduler, ClusterSpec.uniform(4, 4), config)
        runs.append(sim.run())
        asked.append(len(calls))
    event_driven, every = runs
    assert event_driven.jobs.equals(every.jobs)
    assert event_driven.rounds.equals(every.rounds)
    assert asked[1] == len(every.rounds)
    assert asked[0] < asked[1] / 2, asked  # the point: far fewer decisions


def _decision_times(policy, workload, params):
    """Run ``policy`` on 4x4 GPUs; its results and the times it was asked to decide."""
    scheduler = get_policy(policy, params)
    calls = []
    allocate = scheduler.allocate
    scheduler.allocate = lambda snapshot: calls.append(snapshot.time) or allocate(snapshot)
    sim = Simulation(workload, load_profiles(), scheduler, ClusterSpec.uniform(4, 4))
    return sim.run(), calls


@pytest.mark.parametrize("quiet", [30.0, 60.0])
def test_a_quiet_time_within_one_interval_changes_nothing(workload, quiet):
    """goodput's tolerance: an allocation that stands at most one interval (60 s) is
    re-decided every round, so results are the default's byte for byte."""
    exact, every = _decision_times("goodput", workload.head(20), {})
    quiet_run, asked = _decision_times("goodput", workload.head(20), {"quiet_seconds": quiet})
    assert quiet_run.jobs.equals(exact.jobs) and quiet_run.rounds.equals(exact.rounds)
    assert asked == every


def test_a_longer_quiet_time_decides_at_every_event_and_otherwise_on_schedule(workload):
    jobs = workload.head(20)
    result, asked = _decision_times("goodput", jobs, {"quiet_seconds": 300.0})
    assert result.jobs["finished"].all()
    rounds = result.rounds["time"].tolist()
    assert len(asked) < len(rounds) / 2
    arrivals = [min(t for t in rounds if t >= a) for a in jobs["time"]]
    assert set(arrivals) <= set(asked)  # an arrival is always decided at once
    since = [r - max(t for t in asked if t <= r) for r in rounds]  # since the last decision
    assert max(since) < 300.0 and max(since) >= 240.0
