"""The cost-versus-JCT report on a hand-made summary.csv: interpolation at equal node-hours,
bracket counting, no interval below 5 samples, the CLI's outputs (byte for byte the same on a
second run) and one-line errors."""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from click.testing import CliRunner
from figure_layout import layout_problems

from goodput_sim.cli import main
from goodput_sim.experiments.cost_jct import (
    cost_jct_figure,
    cost_jct_report,
    interpolate,
    read_runs,
)
from goodput_sim.experiments.intervals import NO_INTERVAL

AUTOSCALED = {"autoscaler": "queue", "max_nodes": 32, "min_nodes": 4, "node_price": 2.5}
UTILITY = {"max_nodes": 32, "min_nodes": 4, "node_price": 2.5}  # utility: the default rule


def _row(policy: str, variant: str, cluster: str, settings: dict, seed: int, hours, jct) -> dict:
    priced = "node_price" in settings
    return {
        "workload": "w",
        "load": 1.0,
        "cluster": cluster,
        "variant": variant,
        "interval": 60.0,
        "policy": policy,
        "agent": "fixed",
        "params": "{}",
        "seed": seed,
        "gpu_types": "T4",
        "settings": json.dumps(settings, sort_keys=True),
        "run_key": f"{policy}-{variant}-{seed}",
        "avg_jct": jct,
        "cost": hours * settings["node_price"] if priced else math.nan,
        "node_hours": hours,
        "unfinished": 0,
    }


def _summary(folder: Path, seeds: int, policies=("goodput",)) -> Path:
    """A sweep folder: fixed 8 (100 node-h, 4000 s) and 16 nodes (200 node-h, 2000 s) plus a
    little noise per seed; the utility rule at 150 node-h and 2700 s (10% below the fixed
    line's 3000 s there); the queue rule below, inside and above the bracket in turn."""
    rows = []
    for policy in policies:
        for seed in range(seeds):
            wiggle = seed * 0.5
            rows.append(_row(policy, "fixed-8", "8x4", {}, seed, 100 + wiggle, 4000 + seed))
            rows.append(_row(policy, "fixed-16", "16x4", {}, seed, 200 + wiggle, 2000 + seed))
            rows.append(_row(policy, "utility", "8x4", UTILITY, seed, 150 + wiggle, 2700 + seed))
            queue_hours = (50, 175, 260)[seed % 3] + wiggle
            rows.append(_row(policy, "queue", "8x4", AUTOSCALED, seed, queue_hours, 2500.0))
    folder.mkdir(parents=True, exist_ok=True)
    pd.DataFrame(rows).to_csv(folder / "summary.csv", index=False, float_format="%.6f")
    return folder


def test_interpolation_is_linear_in_node_hours_and_never_extrapolates():
    assert interpolate(np.array([200.0, 100.0]), np.array([2000.0, 4000.0]), 150.0) == 3000.0
    assert interpolate(np.array([100.0, 200.0, 300.0]), np.array([4e3, 2e3, 1e3]), 250.0) == 1500
    assert interpolate(np.array([100.0, 200.0]), np.array([4e3, 2e3]), 100.0) == 4000.0  # an end
    assert math.isnan(interpolate(np.array([100.0, 200.0]), np.array([4e3, 2e3]), 99.0))
    assert math.isnan(interpolate(np.array([100.0, 200.0]), np.array([4e3, 2e3]), 201.0))
    assert math.isnan(interpolate(np.array([100.0]), np.array([4e3]), 100.0))


def test_equal_node_hours_is_exact_on_the_hand_case_and_counts_the_bracket(tmp_path):
    report, pairs = cost_jct_report(read_runs(_summary(tmp_path / "s", seeds=6)))
    utility = pairs[pairs["rule"] == "utility"]
    # fixed line at seed k: (100+k/2, 4000+k) to (200+k/2, 2000+k); the rule sits at its middle
    expected = [3000.0 + k for k in range(6)]
    assert utility["fixed_avg_jct_s"].tolist() == pytest.approx(expected, abs=1e-9)
    row = report.equal.set_index("rule").loc["utility"]
    assert row["n"] == 6 and row["below"] == row["above"] == 0
    assert row["jct_change"] == pytest.approx(sum(2700 + k for k in range(6)) / sum(expected) - 1)
    assert row["jct_change_ci_low"] <= row["jct_change"] <= row["jct_change_ci_high"]
    queue = report.equal.set_index("rule").loc["queue"]
    assert (queue["samples"], queue["n"], queue["below"], queue["above"]) == (6, 2, 2, 2)
    assert math.isnan(queue["jct_change_ci_low"])  # 2 pairs: no interval


def test_the_tables_pair_by_sample_and_price_fixed_clusters_too(tmp_path):
    report, _ = cost_jct_report(read_runs(_summary(tmp_path / "s", seeds=6)))
    assert report.price == 2.5
    table = report.table.set_index("variant")
    assert list(table.index) == ["fixed-8", "fixed-16", "utility", "queue"]
    assert table.loc["fixed-8", "cost"] == pytest.approx(2.5 * table.loc["fixed-8", "node_hours"])
    assert table.loc["fixed-16", "kind"] == "fixed" and table.loc["fixed-16", "nodes"] == 16
    assert table.loc["utility", "rule"] == "utility" and table.loc["queue", "rule"] == "queue"
    assert (table["n"] == 6).all() and table["avg_jct_ci_low_s"].notna().all()
    paired = report.paired.set_index(["rule", "versus"])
    row = paired.loc[("utility", "fixed-16")]
    assert row["n"] == 6
    assert row["jct_change"] == pytest.approx(sum(2700 + k for k in range(6)) / 12015 - 1)
    assert row["node_hours_change"] == pytest.approx((150 * 6 + 7.5) / (200 * 6 + 7.5) - 1)


def test_fewer_than_five_samples_get_values_and_no_interval(tmp_path):
    report, _ = cost_jct_report(read_runs(_summary(tmp_path / "s", seeds=3)))
    assert report.table["n"].eq(3).all()
    assert report.table["avg_jct_ci_low_s"].isna().all()
    assert report.paired["jct_change_ci_low"].isna().all()
    assert report.table["avg_jct_s"].notna().all()
    text = report.markdown()
    assert f"(n=3; {NO_INTERVAL})" in text and ".." not in text.split("###")[1]


def test_the_cli_writes_tables_and_figures_the_same_bytes_twice(tmp_path):
    folder = _summary(tmp_path / "s", seeds=6, policies=("tiresias", "goodput"))
    outputs = []
    for name in ("a", "b"):
        out = tmp_path / name
        result = CliRunner().invoke(
            main,
            ["experiment", "cost-jct", str(folder), "-o", str(out), "--figure", "cost_jct.png"]
            + ["--figure", "cost_jct.pdf"],
        )
        assert result.exit_code == 0, result.output
        assert "| goodput | utility (utility rule, 4-32 nodes) |" in result.output
        assert "| goodput | utility | fixed-16 |" in result.output
        outputs.append(out)
    names = sorted(p.name for p in outputs[0].iterdir())
    assert names == [
        "cost_jct.md",
        "cost_jct.pdf",
        "cost_jct.png",
        "cost_jct_equal.csv",
        "cost_jct_equal_pairs.csv",
        "cost_jct_paired.csv",
        "cost_jct_table.csv",
    ]
    for name in names:
        assert (outputs[0] / name).read_bytes() == (outputs[1] / name).read_bytes(), name
    assert (outputs[0] / "cost_jct.png").read_bytes()[:4] == b"\x89PNG"
    assert (outputs[0] / "cost_jct.pdf").read_bytes()[:4] == b"%PDF"
    table = pd.read_csv(outputs[0] / "cost_jct_table.csv")
    assert len(table) == 8 and set(table["policy"]) == {"tiresias", "goodput"}
    report, _ = cost_jct_report(read_runs(folder))
    assert layout_problems(cost_jct_figure(report)) == []


def test_the_report_goes_to_results_report_by_default(tmp_path):
    folder = _summary(tmp_path / "s", seeds=5)
    result = CliRunner().invoke(main, ["experiment", "cost-jct", str(folder)])
    assert result.exit_code == 0, result.output
    assert (folder / "report" / "cost_jct.png").is_file()
    assert (folder / "report" / "cost_jct_table.csv").is_file()


@pytest.mark.parametrize(
    ("make", "message"),
    [
        (lambda p: p / "missing", "no such results folder"),
        (lambda p: p, "holds no summary.csv"),
        (
            lambda p: (p / "summary.csv").write_text("workload,policy\nw,fifo\n") and p,
            "the report needs a sweep of an experiment file with variants",
        ),
    ],
)
def test_a_bad_folder_gets_one_line_and_exit_2(tmp_path, make, message):
    folder = make(tmp_path)
    result = CliRunner().invoke(main, ["experiment", "cost-jct", str(folder)])
    assert result.exit_code == 2, result.output
    lines = result.output.strip().splitlines()
    assert len(lines) == 1 and message in lines[0] and "Traceback" not in result.output


def test_a_bad_figure_suffix_is_refused(tmp_path):
    folder = _summary(tmp_path / "s", seeds=5)
    result = CliRunner().invoke(
        main, ["experiment", "cost-jct", str(folder), "--figure", "plot.jpg"]
    )
    assert result.exit_code == 2 and "--figure: expected a .png, .pdf or .svg" in result.output


@pytest.mark.parametrize(
    "name, runs, rules",
    [
        ("experiment-cost-jct.yaml", 144, {"utility", "queue"}),
        ("experiment-autoscale-search.yaml", 72, {"utility", "search"}),
    ],
)
def test_the_shipped_cost_experiments_are_valid_grids(name, runs, rules):
    """Fixed clusters of 8, 12, 16 and 24 nodes beside the rules, 4 workloads x 3 seeds."""
    from goodput_sim.experiments.grid import load_experiment

    spec = load_experiment(Path(__file__).resolve().parents[1] / "configs" / name)
    assert spec.runs == runs and len(spec.workloads) * len(spec.seeds) == 12
    fixed = sorted(v.cluster.nodes for v in spec.variants if not dict(v.settings))
    assert fixed == [8, 12, 16, 24]
    assert {dict(v.settings).get("autoscaler") for v in spec.variants} - {None} == rules
