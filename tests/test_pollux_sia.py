"""The pollux-sia experiment: its grid file, and the ratio table read from a sweep's summary."""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd
import pytest
from click.testing import CliRunner

from goodput_sim.cli import main
from goodput_sim.experiments.grid import load_experiment
from goodput_sim.experiments.pollux_sia import ARTIFACT, configuration, markdown, ratio_table

ROOT = Path(__file__).resolve().parents[1]
SIA = ROOT.parent / "shared" / "reference" / "sia-sosp23"


def _runs() -> pd.DataFrame:
    rows = [("sia", {}, "workload-1", 100.0), ("sia", {}, "workload-10", 300.0)]
    rows += [("sia", {}, "workload-2", 200.0)]
    rows += [("goodput", {}, w, 1.5 * j) for w, j in (("workload-1", 100), ("workload-2", 200))]
    rows += [("goodput", {}, "workload-10", 390.0)]
    rows += [("goodput", {"max_gpus": 16}, "workload-2", 400.0)]
    artifact = {"restart_seconds": "30", "max_gpus": "16", "virtual_node_gpus": "4"}  # as swept
    assert configuration(artifact) == configuration(ARTIFACT)
    for w, j in (("workload-1", 150.0), ("workload-2", 300.0), ("workload-10", 450.0)):
        rows.append(("goodput", artifact, w, j))
    return pd.DataFrame(
        [(p, json.dumps(q), w, j) for p, q, w, j in rows],
        columns=["policy", "params", "workload", "avg_jct"],
    )


def test_configurations_are_named_whatever_the_number_types():
    assert configuration({}) == "ours"
    assert configuration({"max_gpus": 16.0, "restart_seconds": 30, "virtual_node_gpus": 4}) == (
        "artifact (all three)"
    )
    assert configuration({"max_gpus": "16"}) == "at most 16 GPUs"
    assert configuration({"p": -0.5}) == '{"p": -0.5}'


def test_ratios_per_workload_and_of_the_means():
    table = ratio_table(_runs()).set_index("configuration")
    assert list(table.columns) == ["workload-1", "workload-2", "workload-10", "all", "workloads"]
    assert list(table.index) == ["ours", "artifact (all three)", "at most 16 GPUs"]
    assert table.loc["ours", "workload-2"] == pytest.approx(1.5)
    assert table.loc["ours", "all"] == pytest.approx((150 + 300 + 390) / 600)
    assert table.loc["artifact (all three)", "all"] == pytest.approx(1.5)
    capped = table.loc["at most 16 GPUs"]
    assert capped["workloads"] == 1 and capped["all"] == pytest.approx(2.0)
    assert pd.isna(capped["workload-1"])
    text = markdown(table.reset_index())
    assert "| goodput | 1 | 2 | 10 | all |" in text
    assert "| at most 16 GPUs | - | 2.00 | - | 2.00 (1) |" in text


def test_the_command_prints_the_table_of_a_sweep(tmp_path):
    _runs().to_csv(tmp_path / "summary.csv", index=False)
    result = CliRunner().invoke(main, ["experiment", "pollux-sia", str(tmp_path)])
    assert result.exit_code == 0, result.output
    assert "| ours | 1.50 | 1.50 | 1.30 | 1.40 |" in result.output
    missing = CliRunner().invoke(main, ["experiment", "pollux-sia", str(tmp_path / "none")])
    assert missing.exit_code == 2 and "no such results folder" in missing.output


def test_the_experiment_file_names_the_artifact_configuration_and_each_option():
    if not (SIA / "workloads" / "philly").is_dir():
        pytest.skip(f"Sia reference data not found at {SIA}; place the Sia SOSP'23 folder there")
    experiment = load_experiment(ROOT / "configs" / "experiment-pollux-sia.yaml")
    assert [w.name for w in experiment.workloads] == [f"workload-{k}" for k in range(1, 9)]
    labels = [configuration(params) for policy, _, params in experiment.policies[1:]]
    assert labels == [
        "ours",
        "artifact (all three)",
        "virtual 4-GPU nodes",
        "at most 16 GPUs",
        "flat 30-s restart",
    ]
    assert experiment.runs == 6 * 8
