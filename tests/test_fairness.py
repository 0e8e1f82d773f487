"""Finish-time fairness: rho = JCT / JCT alone on an equal share of the cluster."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from goodput_sim import api
from goodput_sim.inputs.workload import load_workload
from goodput_sim.profiles import load_profiles
from goodput_sim.results.fairness import contention, fairness_summary
from goodput_sim.results.metrics import run_summary
from goodput_sim.sim.fairness import isolated_seconds

DEFAULT = api.bundled_workload()


def _jobs(arrival, jct, finished=None) -> pd.DataFrame:
    n = len(arrival)
    return pd.DataFrame(
        {
            "name": [f"j{k}" for k in range(n)],
            "application": ["cifar10"] * n,
            "arrival": arrival,
            "jct": jct,
            "finished": [True] * n if finished is None else finished,
        }
    )


def test_contention_is_the_time_average_of_active_jobs():
    # j0 alone for 10 s, then with j1 for 10 s; j1 then alone for 20 s.
    n_avg = contention(_jobs([0.0, 10.0], [20.0, 30.0]))
    np.testing.assert_allclose(n_avg, [1.5, (10 * 2 + 20 * 1) / 30])
    assert contention(_jobs([0.0], [5.0]))[0] == 1.0
    # an unfinished job counts until the end of the run
    n_avg = contention(_jobs([0.0, 0.0], [10.0, np.nan], [True, False]))
    np.testing.assert_allclose(n_avg, [2.0, 2.0])


def test_a_lone_job_on_exactly_its_gpus_is_fair():
    """Metamorphic: one job alone on a cluster of exactly its GPUs, at its batch (fifo), takes
    what the equal share (all of it) promises: rho is 1 up to the round it waits for."""
    frame = load_workload(DEFAULT)
    frame = frame[frame["application"] == "cifar10"].iloc[:1].assign(time=0.0, num_replicas=4)
    result = api.run("fifo", frame, cluster="1x4")
    table = result.fairness
    assert table["n_avg"].iloc[0] == 1.0 and table["share_gpus"].iloc[0] == 4.0
    assert table["rho"].iloc[0] == pytest.approx(1.0, abs=0.02)


def test_isolated_time_falls_with_more_gpus_and_an_adaptive_batch():
    cifar = load_profiles(None)["cifar10"]
    layout = lambda g: (g,)  # noqa: E731 - one node holds them
    fixed = [isolated_seconds(cifar, layout, g, 512) for g in (1, 2, 4)]
    assert fixed[0] > fixed[1] > fixed[2]
    best = isolated_seconds(cifar, layout, 4, None)
    assert best <= fixed[2]  # the best batch per epoch is at least as good as one batch


def test_summaries_report_fairness_without_touching_the_jobs_table(tmp_path):
    frame = load_workload(DEFAULT).iloc[:30]
    result = api.run("tiresias", frame, cluster="4x4")
    summary = run_summary(result)
    assert summary["ftf_rho_max"] >= summary["ftf_rho_median"] > 0
    assert 0 <= summary["ftf_unfair_fraction"] <= 1
    for key, value in fairness_summary(result.fairness).items():
        assert summary[key] == value
    assert "rho" not in result.jobs.columns
    api.write_run(result, tmp_path / "run", {"workload": None}, 0, figure=False)
    written = pd.read_csv(tmp_path / "run" / "fairness.csv")
    assert list(written.columns) == ["name", "n_avg", "share_gpus", "isolated_jct", "rho"]
    assert list(written["name"]) == list(result.jobs["name"])


def test_a_fairer_share_of_the_same_jobs_gives_lower_rho():
    """Metamorphic: the same jobs on a cluster twice as large wait less, so the worst rho of
    a queueing policy does not grow (each job's share doubles, its JCT shrinks more)."""
    frame = load_workload(DEFAULT).iloc[:40]
    small = run_summary(api.run("fifo", frame, cluster="4x4"))
    large = run_summary(api.run("fifo", frame, cluster="8x4"))
    assert large["avg_jct"] < small["avg_jct"]
    assert large["ftf_rho_median"] <= small["ftf_rho_median"] * 1.05
