"""The failure report: slowdowns paired by sample against the runs with nothing failing, exact on
a hand-made summary, no interval below five pairs, and one-line errors for folders it cannot
read; and the experiment file behind it is a valid grid."""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd
import pytest
from click.testing import CliRunner
from figure_layout import layout_problems

from goodput_sim.cli import main
from goodput_sim.experiments.failure_cost import (
    NONE,
    condition_label,
    read_failure_runs,
    slowdown_figure,
    slowdown_of,
    slowdown_table,
)
from goodput_sim.experiments.grid import load_experiment
from goodput_sim.experiments.intervals import NO_INTERVAL

ROOT = Path(__file__).resolve().parents[1]


def _row(policy: str, settings: dict, seed: int, jct: float, lost: float = 0.0) -> dict:
    return {
        "workload": "w",
        "load": 1.0,
        "cluster": "16x4",
        "interval": 60.0,
        "policy": policy,
        "agent": "fixed",
        "params": "{}",
        "seed": seed,
        "settings": json.dumps(settings, sort_keys=True),
        "avg_jct": jct,
        "lost_gpu_hours": lost,
        "node_failures": 3 if "mtbf" in settings else 0,
    }


def _summary(folder: Path, seeds: int) -> Path:
    """tiresias: 1000 + 10 s per seed without failures; MTBF 12 h adds exactly 20%, crashes
    5%. goodput: failures change nothing."""
    rows = []
    for seed in range(seeds):
        base = 1000.0 + 10 * seed
        rows.append(_row("tiresias", {}, seed, base))
        rows.append(_row("tiresias", {"mtbf": 12.0}, seed, 1.2 * base, lost=2.0))
        rows.append(_row("tiresias", {"job_crash_hours": 12.0}, seed, 1.05 * base))
        rows.append(_row("goodput", {}, seed, 500.0 + seed))
        rows.append(_row("goodput", {"mtbf": 12.0}, seed, 500.0 + seed))
    folder.mkdir(parents=True, exist_ok=True)
    pd.DataFrame(rows).to_csv(folder / "summary.csv", index=False, float_format="%.6f")
    return folder


def test_slowdowns_are_exact_on_the_hand_case(tmp_path):
    table = slowdown_table(read_failure_runs(_summary(tmp_path / "s", seeds=6)))
    assert slowdown_of(table, "tiresias", "MTBF 12 h") == pytest.approx(0.2, abs=1e-12)
    assert slowdown_of(table, "tiresias", "crashes every 12 h") == pytest.approx(0.05, abs=1e-12)
    assert slowdown_of(table, "goodput", "MTBF 12 h") == pytest.approx(0.0, abs=1e-12)
    row = table[(table["policy"] == "tiresias") & (table["condition"] == "MTBF 12 h")].iloc[0]
    assert row["pairs"] == 6 and row["lost_gpu_hours"] == 2.0 and row["node_failures"] == 3
    # Every sample slows by exactly 20%: every resample gives 20%.
    assert row["slowdown_ci_low"] == pytest.approx(0.2) and row["slowdown_ci_high"] == (
        pytest.approx(0.2)
    )
    assert layout_problems(slowdown_figure(table)) == []


def test_fewer_than_five_pairs_get_no_interval(tmp_path):
    folder = _summary(tmp_path / "s", seeds=3)
    result = CliRunner().invoke(main, ["experiment", "failures", str(folder)])
    assert result.exit_code == 0, result.output
    assert f"+20.0% (n=3; {NO_INTERVAL})" in result.output
    assert (folder / "report" / "failures.csv").is_file()
    assert (folder / "report" / "failures.png").is_file()


def test_condition_labels_name_the_failure_settings():
    assert condition_label({}) == NONE
    assert condition_label({"mtbf": 24.0, "job_crash_hours": 12.0}) == (
        "MTBF 24 h, crashes every 12 h"
    )
    assert condition_label({"checkpoint_seconds": 30.0}) == NONE


@pytest.mark.parametrize(
    "rows, message",
    [
        (None, "holds no summary.csv"),
        ([{"policy": "x"}], "lacks column(s)"),
        ([_row("tiresias", {"mtbf": 12.0}, 0, 1000.0)], "no run without failures"),
        (
            [_row("tiresias", {}, 0, 1000.0), _row("tiresias", {}, 0, 1001.0)],
            "more than one run",
        ),
    ],
)
def test_bad_folders_get_one_line(tmp_path, rows, message):
    folder = tmp_path / "s"
    folder.mkdir()
    if rows is not None:
        pd.DataFrame(rows).to_csv(folder / "summary.csv", index=False)
    result = CliRunner().invoke(main, ["experiment", "failures", str(folder)])
    assert result.exit_code != 0
    assert message in result.output and len(result.output.strip().splitlines()) == 1


def test_the_failure_experiment_file_is_the_issues_grid():
    """MTBF 12/24/72 h and crashes on and off against no failures, 3 seeds of 2 workloads
    (6 samples: enough for intervals), under tiresias, goodput and sia."""
    spec = load_experiment(ROOT / "configs" / "experiment-failures.yaml")
    assert [p[0] for p in spec.policies] == ["tiresias", "goodput", "sia"]
    assert spec.settings["mtbf"] == [None, 12.0, 24.0, 72.0]
    assert spec.settings["job_crash_hours"] == [None, 12.0]
    assert len(spec.seeds) == 3 and len(spec.workloads) * len(spec.seeds) >= 5
    assert spec.runs == 144


def test_profile_crashes_are_failures_and_crashes_false_is_the_baseline(tmp_path):
    """Jobs whose profiles set crash_hours crash with no failure setting: such runs are a
    condition of their own ("profile crashes"), set against runs with ``crashes: false``; a
    sweep with no run free of them is refused in one line saying how to make one."""
    rows = []
    for seed in range(6):
        crashed = _row("fifo", {}, seed, 1100.0 + seed) | {"job_crashes": 4}
        rows += [crashed, _row("fifo", {"crashes": False}, seed, 1000.0 + seed)]
    folder = tmp_path / "s"
    folder.mkdir()
    pd.DataFrame(rows).to_csv(folder / "summary.csv", index=False)
    runs = read_failure_runs(folder)
    assert set(runs["condition"]) == {"profile crashes", NONE}
    assert runs.loc[runs["condition"] == NONE, "settings"].str.contains("crashes").all()
    only_crashed = pd.DataFrame(rows[::2])
    only_crashed.to_csv(folder / "summary.csv", index=False)
    with pytest.raises(Exception, match="crashes: false"):
        read_failure_runs(folder)
