"""Round-by-round tracing of sia against an allocation trace (goodput_sim.experiments.sia_trace):
the trace format, the reference log reader, the comparison, and a replay that follows a trace."""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd
import pytest

from goodput_sim.experiments.sia_trace import (
    compare_traces,
    job_histories,
    jobs_from_reference_log,
    read_trace,
    replay_disagreements,
    replay_sia,
    trace_from_reference_log,
    trace_sia,
)
from goodput_sim.inputs.cluster import parse_cluster
from goodput_sim.profiles import load_profiles

ROOT = Path(__file__).resolve().parents[1]
DEFAULT_MIX = ROOT / "configs" / "cluster-sia-default.yaml"
SHIPPED = ROOT / "traces" / "profiles-sia"


def _trace(rows):
    return pd.DataFrame(rows, columns=["time", "job", "gpu_type", "gpus"])


def test_csv_form_round_trips_and_drops_empty_rows(tmp_path):
    path = tmp_path / "t.csv"
    path.write_text("time,job,gpu_type,gpus\n60,b,rtx,2\n60,a,aws,1\n120,a,aws,0\n")
    trace = read_trace(path)
    assert trace.to_dict("records") == [
        {"time": 60.0, "job": "a", "gpu_type": "aws", "gpus": 1},
        {"time": 60.0, "job": "b", "gpu_type": "rtx", "gpus": 2},
    ]
    (tmp_path / "bad.csv").write_text("time,job,gpus\n60,a,1\n")
    with pytest.raises(ValueError, match="gpu_type"):
        read_trace(tmp_path / "bad.csv")


def test_reference_log_gives_trace_and_jobs():
    records = [
        {
            "timestamp": 60,
            "submitted_jobs": [
                {
                    "name": "a",
                    "allocation": ["rtx", [0, 0]],
                    "cluster": "rtx",
                    "submission_time": 10,
                    "completion_time": None,
                    "num_restarts": 0,
                },
                {
                    "name": "b",
                    "allocation": [],
                    "submission_time": 50,
                    "completion_time": None,
                    "num_restarts": None,
                },
            ],
        },
        {
            "timestamp": 120,
            "submitted_jobs": [
                {
                    "name": "a",
                    "allocation": [],
                    "submission_time": 10,
                    "completion_time": 100,
                    "num_restarts": 0,
                },
                {
                    "name": "b",
                    "allocation": ["dgx-ext", [1, 1, 1, 1]],
                    "submission_time": 50,
                    "completion_time": None,
                    "num_restarts": 0,
                },
            ],
        },
    ]
    lines = [json.dumps(r) for r in records]
    trace = trace_from_reference_log(lines)
    assert trace.values.tolist() == [[60.0, "a", "rtx", 2], [120.0, "b", "dgx-ext", 4]]
    jobs = jobs_from_reference_log(lines)
    assert jobs.to_dict("records") == [
        {
            "name": "a",
            "submission_time": 10,
            "completion_time": 100,
            "jct": 90,
            "restarts": 0,
            "gpu_types": "rtx",
        }
    ]


def test_histories_count_restarts_and_type_moves():
    trace = _trace(
        [
            (60, "a", "rtx", 1),
            (120, "a", "dgx-ext", 2),  # restart, type move
            (180, "a", "dgx-ext", 2),
            (240, "a", "dgx-ext", 4),  # restart
            (360, "a", "dgx-ext", 4),  # back after a round without GPUs: restart
            (60, "b", "aws", 1),
        ]
    )
    histories = job_histories(trace).set_index("job")
    assert histories.loc["a"].tolist() == ["rtx", 3, 1]
    assert histories.loc["b"].tolist() == ["aws", 0, 0]


def test_comparison_finds_the_first_round_they_part():
    ours = _trace([(60, "a", "aws", 1), (60, "b", "rtx", 1), (120, "a", "rtx", 2)])
    theirs = _trace([(60, "a", "aws", 1), (60, "b", "rtx", 1), (120, "a", "dgx-ext", 2)])
    result = compare_traces(ours, theirs)
    assert result.divergence.time == 120.0
    assert result.divergence.jobs == (("a", "rtx:2", "dgx-ext:2"),)
    assert result.rounds_agreeing == pytest.approx(2 / 3)
    assert result.first_type_agreeing == 1.0
    assert result.restarts == (1, 1) and result.type_moves == (1, 1)
    same = compare_traces(ours, ours)
    assert same.divergence is None and same.rounds_agreeing == 1.0


def test_a_replay_of_sias_own_trace_agrees_with_it():
    """Replaying sia's own allocations, sia chooses what it chose: every round's own choice is
    the imposed one, and the run ends as the free run did (a small typed workload)."""
    profiles = load_profiles(SHIPPED)
    jobs = pd.read_csv(ROOT / "traces" / "workloads" / "heterogeneous.csv").iloc[:12]
    cluster = parse_cluster(DEFAULT_MIX)
    free_jobs, trace = trace_sia(jobs, profiles, cluster)
    assert len(trace) and set(trace["gpu_type"]) <= {"aws", "dgx-ext", "rtx"}
    replayed, rounds = replay_sia(trace, jobs, profiles, cluster)
    assert replay_disagreements(rounds).empty
    assert replayed["jct"].tolist() == pytest.approx(free_jobs["jct"].tolist())
    # Made to follow another trace, sia's own choices are reported where they differ.
    other = trace.copy()
    first = other.index[0]
    other.loc[first, "gpu_type"] = "aws" if other.loc[first, "gpu_type"] != "aws" else "rtx"
    _, rounds = replay_sia(other, jobs, profiles, cluster)
    differ = replay_disagreements(rounds)
    assert not differ.empty and differ.iloc[0]["time"] == other.loc[first, "time"]
