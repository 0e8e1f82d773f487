"""`goodput-sim experiment batch-rules`: the grid runs, the report's statistics are sound, and
an interrupted experiment resumes."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from click.testing import CliRunner
from conftest import bundled_slices
from figure_layout import layout_problems

from goodput_sim.cli import main
from goodput_sim.experiments.batch_rules import run_batch_rules, summarize_batch_rules
from goodput_sim.results.plots import batch_rules_figure
from goodput_sim.results.stats import bootstrap_mean_ci


@pytest.fixture(scope="module")
def small_workloads(tmp_path_factory) -> list[Path]:
    """Two 12-job slices of the bundled workload."""
    return bundled_slices(tmp_path_factory.mktemp("workloads"), 2, 12)


def test_bootstrap_interval_covers_the_mean_at_about_its_level():
    rng = np.random.default_rng(0)
    covered = 0
    for _ in range(200):
        sample = rng.normal(10.0, 2.0, 8)
        low, high = bootstrap_mean_ci(sample, rng, resamples=1000)
        assert low <= sample.mean() <= high
        covered += low <= 10.0 <= high
    assert 0.8 <= covered / 200 <= 1.0  # percentile intervals run a little narrow at n = 8
    assert all(np.isnan(bootstrap_mean_ci(np.array([1.0]), rng)))
    paired = np.array([[2.0, 1.0], [4.0, 2.0], [6.0, 3.0]])
    assert bootstrap_mean_ci(paired, rng) == pytest.approx((2.0, 2.0))  # every resample: 2


def test_batch_rules_reports_and_resumes(small_workloads, tmp_path):
    out = tmp_path / "br"
    agents = ("fixed", "critical-compute", "tail-blind", "tail-hindsight")
    args = dict(agents=agents, schedulers=("tiresias",), seeds=(0, 1))
    result = run_batch_rules(small_workloads, out, progress=False, **args)
    assert list(result.report["progress"].unique()) == ["noise", "lr-aware"]
    cases = result.report.groupby(["progress", "geometry"], sort=False)
    assert list(cases.groups) == [
        ("noise", "examples"),
        ("lr-aware", "examples"),
        ("lr-aware", "steps"),
    ]
    for (model, geometry), part in cases:
        report = part.set_index("agent")
        stepped = ("fixed", "tail-blind", "tail-hindsight")  # the tail arms and their baseline
        assert list(report.index) == list(agents if geometry == "examples" else stepped)
        assert (report["runs"] == 4).all()  # 2 workloads x 2 seeds, paired
        assert (report["avg_jct_ci_low_s"] <= report["avg_jct_s"]).all()
        assert (report["avg_jct_s"] <= report["avg_jct_ci_high_s"]).all()
        # the fixed batch is its own static batch: ratio 1 on every objective
        for key in ("jct", "lr_noise", "final_loss"):
            assert report.loc["fixed", f"{key}_vs_fixed"] == pytest.approx(1.0)
        assert report.loc["fixed", "lr_noise_vs_static"] == pytest.approx(1.0)
        # four pairs are below the minimum for an interval: none is printed
        assert np.isnan(report.loc["tail-blind", "jct_vs_fixed_ci_low"])
        runs = result.runs[
            (result.runs["progress"] == model) & (result.runs["geometry"] == geometry)
        ]
        for agent in report.index:
            mine = runs[runs["label"] == agent]
            assert report.loc[agent, "avg_jct_s"] == pytest.approx(mine["avg_jct"].mean())
            assert report.loc[agent, "final_loss_vs_static"] == pytest.approx(
                mine["avg_final_loss_vs_static"].mean()
            )
    # the fixed agent takes the same time under both models (its budget is its own), and in
    # both geometries; in the steps geometry the rate tuned per arm is the rate it had
    times = result.report.set_index(["agent", "progress", "geometry"])["avg_jct_s"]
    assert times["fixed", "noise", "examples"] == pytest.approx(
        times["fixed", "lr-aware", "examples"], rel=1e-9
    )
    assert times["fixed", "lr-aware", "steps"] == pytest.approx(
        times["fixed", "lr-aware", "examples"], rel=1e-9
    )
    # the examples rows are the rows the report had before the steps geometry
    examples = result.runs[result.runs["geometry"] == "examples"]
    before = summarize_batch_rules(examples, 0)
    now = result.report[result.report["geometry"] == "examples"].reset_index(drop=True)
    pd.testing.assert_frame_equal(now[before.columns], before)
    steps = result.report[result.report["geometry"] == "steps"]
    np.testing.assert_allclose(steps["final_loss_tuned_vs_fixed"], steps["final_loss_vs_fixed"])
    # on the jobs the rule changed its effect is the same sign and no smaller than on all jobs
    tail = result.report.set_index(["agent", "progress", "geometry"]).loc["tail-hindsight"]
    assert (tail["changed_share"] > 0).all() and (tail["changed_share"] < 1).all()
    for _, row in tail.iterrows():
        everyone, changed = row["lr_noise_vs_fixed"], row["lr_noise_changed_vs_fixed"]
        assert (everyone - 1) * (changed - 1) > 0 and abs(changed - 1) >= abs(everyone - 1)
    assert (out / "report.csv").is_file() and (out / "batch_rules.png").is_file()
    assert layout_problems(batch_rules_figure(result.report, None, ["slice-0", "slice-1"])) == []
    saved = json.loads((out / "report.json").read_text())
    assert saved["workloads"] == ["slice-0", "slice-1"] and len(saved["report"]) == 11
    assert {"lr_noise_vs_fixed", "final_loss_vs_fixed"} <= set(saved["report"][0])
    # Resume: finished runs are kept, not redone.
    folders = sorted(out.rglob("summary.json"))
    stamps = [p.stat().st_mtime_ns for p in folders]
    again = run_batch_rules(small_workloads, out, progress=False, **args)
    assert [p.stat().st_mtime_ns for p in folders] == stamps
    pd.testing.assert_frame_equal(again.report, result.report)


def test_batch_rules_cli(small_workloads, tmp_path):
    result = CliRunner().invoke(
        main,
        [
            "experiment",
            "batch-rules",
            "--workloads",
            str(small_workloads[0]),
            "--agents",
            "fixed,goodput",
            "--schedulers",
            "tiresias",
            "--out",
            str(tmp_path / "o"),
            "--workers",
            "1",
            "--seeds",
            "0",
        ],
    )
    assert result.exit_code == 0, result.output
    assert "tiresias    goodput" in result.output and "vs fixed" in result.output
    assert "lr-aware" in result.output and "(n<5)" in result.output
    bad = CliRunner().invoke(main, ["experiment", "batch-rules", "--agents", "magic"])
    assert bad.exit_code == 2 and "--agents" in bad.output


def test_limited_adaptivity_cli(small_workloads, tmp_path):
    out = tmp_path / "la"
    args = ["experiment", "limited-adaptivity", "--workloads", str(small_workloads[0])]
    args += ["--policies", "fifo,goodput", "--shares", "0,1", "--workers", "1"]
    result = CliRunner().invoke(main, [*args, "--out", str(out)])
    assert result.exit_code == 0, result.output
    report = pd.read_csv(out / "report.csv")
    assert len(report) == 4 and set(report["policy"]) == {"fifo", "goodput"}
    # fifo never adapts a job, so making every job rigid changes nothing for it
    fifo = report[report["policy"] == "fifo"].set_index("share")
    assert fifo.loc[1.0, "avg_jct_h"] == pytest.approx(fifo.loc[0.0, "avg_jct_h"])
    rigid = pd.read_csv(out / "workloads" / "slice-0-rigid100.csv")
    assert (rigid["category"] == "rigid").all()
