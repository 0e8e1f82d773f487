"""Regressions of the experiment surfaces, one test (or a few) per defect class: GPU types are
part of a condition's identity (report, sweep table, failure report); a run stopped before its
first round writes a rounds table with its header, read back as an empty table; names used as
file or folder names are bounded (a hashed tail) or refused in one line; a mean's count is the
values it averages; autoscaler settings without node bounds are refused; limited-adaptivity
leaves nothing behind when it refuses."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pandas as pd
import pytest
from click.testing import CliRunner

from goodput_sim.cli import main
from goodput_sim.errors import InputError, argument_name
from goodput_sim.experiments.cost_jct import cost_jct_report, read_runs
from goodput_sim.experiments.failure_cost import read_failure_runs, slowdown_table
from goodput_sim.experiments.sweep import MAX_NAME_BYTES, bounded_name, sweep_table
from goodput_sim.results.report import load_results, policy_table, report_text
from goodput_sim.results.saved import ROUND_COLUMNS, read_table
from goodput_sim.spec import build_config

ROOT = Path(__file__).resolve().parents[1]
TYPED = ROOT / "traces" / "profiles-sia"
WORKLOAD = (
    "name,time,application,num_replicas,batch_size\n"
    "ncf-0,0,ncf,1,32768\ncifar10-1,30,cifar10,4,2048\nbert-2,90,bert,2,384\n"
    "yolov3-3,200,yolov3,4,64\n"
)


def _cli(args: list[str], folder: Path):
    """The CLI's result for ``args``, run in ``folder``."""
    runner = CliRunner()
    here = Path.cwd()
    try:
        import os

        os.chdir(folder)
        return runner.invoke(main, args, catch_exceptions=True)
    finally:
        os.chdir(here)


def _one_line_error(result, code: int = 2) -> str:
    assert result.exit_code == code, result.output
    assert result.exception is None or isinstance(result.exception, SystemExit), result.exception
    lines = [line for line in result.stderr.splitlines() if line.strip()]
    assert len(lines) == 1, lines
    return lines[0]


# ------------------------------------------------------------------- GPU types in conditions
def _typed_sweep(tmp_path: Path) -> Path:
    (tmp_path / "w.csv").write_text(WORKLOAD)
    for name in ("aws", "rtx"):
        (tmp_path / f"{name}.yaml").write_text(
            f"cluster:\n  groups:\n    - {{nodes: 2, gpus_per_node: 4, gpu_type: {name}}}\n"
        )
    (tmp_path / "e.yaml").write_text(
        "name: typed\npolicies: [fifo]\nworkloads: [w.csv]\nclusters: [aws.yaml, rtx.yaml]\n"
        f"profiles: {TYPED}\n"
    )
    result = _cli(["sweep", "e.yaml", "--out", "s", "--quiet"], tmp_path)
    assert result.exit_code == 0, result.output
    return tmp_path / "s"


def test_two_typed_clusters_of_one_shape_are_two_conditions(tmp_path):
    folder = _typed_sweep(tmp_path)
    summary = pd.read_csv(folder / "summary.csv")
    assert list(summary["cluster"]) == ["2x4", "2x4"]
    assert list(summary["gpu_types"]) == ["aws", "rtx"]
    results = load_results(folder)
    assert results.labels == ["fifo gpu_types=aws", "fifo gpu_types=rtx"]
    table = policy_table(results)
    assert list(table["runs"]) == [1, 1]
    assert sorted(table["avg_jct_s"]) == sorted(summary["avg_jct"])  # nothing pooled
    assert "2x4 aws/2x4 rtx" in report_text(results, lambda names: [])
    pivot = sweep_table(summary)
    assert list(pivot.index) == [("w", "aws"), ("w", "rtx")]
    assert sorted(pivot["fifo"] * 3600) == pytest.approx(sorted(summary["avg_jct"]))


def test_the_sweep_prints_a_row_per_gpu_type(tmp_path):
    (tmp_path / "out").mkdir()
    folder = _typed_sweep(tmp_path / "out")
    assert folder.is_dir()
    result = _cli(["sweep", "e.yaml", "--out", "s", "--quiet"], tmp_path / "out")  # resumed
    assert result.exit_code == 0, result.output
    rows = result.stdout.split("\n")
    assert any(r.split()[-2:-1] == ["aws"] for r in rows if r.strip()), result.stdout
    assert any(r.split()[:1] == ["rtx"] for r in rows if r.strip()), result.stdout


def test_a_comparison_of_two_typed_runs_of_one_shape_names_them_apart(tmp_path):
    folder = _typed_sweep(tmp_path)
    both = tmp_path / "both"
    both.mkdir()
    for run in sorted(folder.glob("*/fifo-seed0")):
        target = both / run.parent.name
        target.mkdir()
        for file in ("manifest.json", "jobs.csv", "rounds.csv"):
            (target / file).write_bytes((run / file).read_bytes())
    results = load_results(both)
    assert results.labels == ["fifo gpu_types=aws", "fifo gpu_types=rtx"]


def test_the_failure_report_keeps_typed_clusters_of_one_shape_apart(tmp_path):
    rows = []
    for types, jct in (("aws", 100.0), ("rtx", 300.0)):
        for seed in range(2):
            for mtbf in (None, 12.0):
                settings = {} if mtbf is None else {"mtbf": mtbf}
                rows.append(
                    {
                        "workload": "w",
                        "load": 1.0,
                        "cluster": "2x4",
                        "interval": 60.0,
                        "policy": "fifo",
                        "agent": "fixed",
                        "params": "{}",
                        "seed": seed,
                        "gpu_types": types,
                        "settings": json.dumps(settings),
                        "avg_jct": jct * (2 if mtbf else 1),
                        "lost_gpu_hours": 0.0,
                        "node_failures": 0,
                    }
                )
    pd.DataFrame(rows).to_csv(tmp_path / "summary.csv", index=False)
    table = slowdown_table(read_failure_runs(tmp_path))
    assert table["context"].nunique() == 2 and (table["n"] == 2).all()
    assert sorted(table["avg_jct_s"]) == [100.0, 200.0, 300.0, 600.0]


# ------------------------------------------------------- a guard stop before the first round
def test_a_compare_stopped_before_its_first_round_is_a_guard_stop(tmp_path):
    (tmp_path / "w.csv").write_text(WORKLOAD)
    args = ["compare", "--policies", "fifo,goodput", "--workload", "w.csv", "--cluster", "2x4"]
    result = _cli([*args, "--max-wall", "1e-9", "--quiet", "--out", "c"], tmp_path)
    _one_line_error(result, 3)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["c", "w.csv"]  # no c.partial
    header = (tmp_path / "c" / "fifo" / "rounds.csv").read_text()
    assert header.startswith("time,") and header.count("\n") == 1
    rounds = read_table(tmp_path / "c" / "fifo" / "rounds.csv", ROUND_COLUMNS, "rounds table")
    assert rounds.empty and set(ROUND_COLUMNS) <= set(rounds.columns)
    report = _cli(["report", "c"], tmp_path)
    assert report.exit_code == 0, report.output
    assert "nan" not in report.stdout.lower() and "(stopped early)" in report.stdout
    for kind in ("utilization", "timeline", "bars"):
        drawn = _cli(["plot", "c", "--kind", kind, "-o", f"{kind}.png"], tmp_path)
        assert drawn.exit_code == 0, drawn.output


# -------------------------------------------------------------- names as file and folder names
def test_bounded_names_fit_and_stay_apart():
    assert bounded_name("short") == "short"
    assert bounded_name("x" * MAX_NAME_BYTES) == "x" * MAX_NAME_BYTES  # fits: unchanged
    a, b = bounded_name("y" * 300 + "a"), bounded_name("y" * 300 + "b")
    assert a != b and len(a.encode()) == len(b.encode()) == MAX_NAME_BYTES
    assert a.startswith("y" * 200) and "~" in a
    wide = bounded_name("é" * 200, suffix=".csv")  # 400 bytes: cut on a character boundary
    assert wide.endswith(".csv") and len(wide.encode()) <= MAX_NAME_BYTES
    wide.encode().decode()


def test_a_long_variant_label_is_refused_in_one_line(tmp_path):
    (tmp_path / "w.csv").write_text(WORKLOAD)
    label = "v" * 101
    (tmp_path / "e.yaml").write_text(
        f"policies: [fifo]\nworkloads: [w.csv]\nvariants:\n  {label}: {{cluster: 2x4}}\n"
    )
    line = _one_line_error(_cli(["sweep", "e.yaml", "--out", "s", "--quiet"], tmp_path))
    assert "1-100" in line and len(line) < 300
    assert sorted(p.name for p in tmp_path.iterdir()) == ["e.yaml", "w.csv"]


def test_long_workload_and_variant_names_make_a_bounded_folder(tmp_path):
    stem = "w" * 200
    (tmp_path / f"{stem}.csv").write_text(WORKLOAD)
    label = "v" * 100
    (tmp_path / "e.yaml").write_text(
        f"policies: [fifo]\nworkloads: [{stem}.csv]\n"
        f"variants:\n  {label}: {{cluster: 2x4, restart_delay: 10}}\n"
    )
    result = _cli(["sweep", "e.yaml", "--out", "s", "--quiet"], tmp_path)
    assert result.exit_code == 0, result.output
    (group,) = [p for p in (tmp_path / "s").iterdir() if p.is_dir()]
    assert len(group.name.encode()) == MAX_NAME_BYTES and group.name.startswith(stem + "-vvv")
    assert (group / "fifo-seed0" / "summary.json").is_file()
    again = _cli(["sweep", "e.yaml", "--out", "s", "--quiet"], tmp_path)  # resumed: reused
    assert again.exit_code == 0, again.output
    assert [p for p in (tmp_path / "s").iterdir() if p.is_dir()] == [group]
    summary = pd.read_csv(tmp_path / "s" / "summary.csv")
    assert list(summary["variant"]) == [label]  # the label itself, whole, in the tables


def test_a_sweep_whose_run_folders_would_be_too_long_is_refused(tmp_path):
    (tmp_path / "w.csv").write_text(WORKLOAD)
    out = "/".join(["d" * 254] * 15 + ["d" * 246])  # 4,071 bytes: valid, no room for the runs
    args = ["sweep", "--policies", "fifo", "--workloads", "w.csv", "--cluster", "2x4"]
    line = _one_line_error(_cli([*args, "--out", out, "--quiet"], tmp_path))
    assert "shorter --out" in line
    assert sorted(p.name for p in tmp_path.iterdir()) == ["w.csv"]


def test_a_default_results_folder_of_a_long_workload_name_is_bounded(tmp_path):
    stem = "w" * 240
    (tmp_path / f"{stem}.csv").write_text(WORKLOAD)
    args = ["run", "--policy", "fifo", "--workload", f"{stem}.csv", "--cluster", "2x4"]
    result = _cli([*args, "--quiet", "--no-plot"], tmp_path)
    assert result.exit_code == 0, result.output
    (folder,) = (tmp_path / "results").iterdir()
    assert folder.name.startswith("fifo-www") and len(folder.name.encode()) < 240


# ------------------------------------------------------------------- a mean's count (cost-jct)
def test_cost_jct_counts_the_runs_a_mean_is_over(tmp_path):
    rows = []
    for variant, settings, nodes in (
        ("fixed-2", {}, "2x4"),
        ("utility", {"max_nodes": 4, "min_nodes": 1}, "2x4"),
    ):
        for seed, jct in ((0, 100.0), (1, math.nan)):  # seed 1 finished no job
            rows.append(
                {
                    "workload": "w",
                    "load": 1.0,
                    "cluster": nodes,
                    "variant": variant,
                    "interval": 60.0,
                    "policy": "fifo",
                    "agent": "fixed",
                    "params": "{}",
                    "seed": seed,
                    "settings": json.dumps(settings),
                    "avg_jct": jct,
                    "node_hours": 2.0 + seed,
                    "unfinished": 4 * seed,
                }
            )
    pd.DataFrame(rows).to_csv(tmp_path / "summary.csv", index=False)
    report, _ = cost_jct_report(read_runs(tmp_path))
    assert list(report.table["avg_jct_n"]) == [1, 1]
    assert list(report.table["node_hours_n"]) == [2, 2]
    text = report.markdown()
    assert "100.0 (n=1;" in text and "100.0 (n=2;" not in text
    assert "2.5 (n=2;" in text  # node-hours: both runs


# --------------------------------------------------------- autoscaler settings without bounds
@pytest.mark.parametrize(
    ("values", "option"),
    [
        ({"autoscaler": "search"}, "--autoscaler"),
        ({"autoscaler": "queue"}, "--autoscaler"),
        ({"startup_delay": 5.0}, "--startup-delay"),
        ({"node_price": 2.0}, "--node-price"),
        ({"autoscaler": "utility", "autoscaler_params": {"low": 0.5}}, "--param"),
    ],
)
def test_autoscaler_settings_without_node_bounds_are_refused(values, option):
    with pytest.raises(InputError, match="need --min-nodes and --max-nodes") as error:
        build_config(values)
    assert error.value.cli_text().startswith(option)  # the CLI names the flag
    assert str(error.value).startswith(argument_name(option))  # Python, the argument
    bounded = build_config({**values, "min_nodes": 1, "max_nodes": 2})
    assert bounded.autoscale is not None
    assert build_config({"autoscaler": "utility"}).autoscale is None  # the default: no setting


def test_run_refuses_the_search_autoscaler_without_bounds(tmp_path):
    (tmp_path / "w.csv").write_text(WORKLOAD)
    args = ["run", "--policy", "goodput", "--workload", "w.csv", "--cluster", "2x4", "--quiet"]
    line = _one_line_error(_cli([*args, "--autoscaler", "search", "--out", "o"], tmp_path))
    assert "--min-nodes" in line and "fixed" in line
    assert sorted(p.name for p in tmp_path.iterdir()) == ["w.csv"]


# ------------------------------------------------------ limited-adaptivity refuses, then is gone
LIMITED = ["experiment", "limited-adaptivity", "--workloads", "w.csv", "--workers", "1"]
MANY = ",".join(f"{k / 1000:g}" for k in range(400))  # 3 policies x 400 mixes: over the budget


@pytest.mark.parametrize(
    ("extra", "names"),
    [
        (["--cluster", "1x1", "--policies", "fifo"], "w.csv"),  # the user's file, not a mix
        (["--cluster", "2x4", "--policies", "goodput", "--profiles", str(TYPED)], "--cluster"),
        (["--cluster", "2x4", "--policies", "fifo", "--shares", "0.1234567,0.1234568"], "--shares"),
        (["--cluster", "2x4", "--policies", "fifo,goodput,tiresias", "--shares", MANY], "--shares"),
    ],
)
def test_limited_adaptivity_refuses_before_writing(tmp_path, extra, names):
    (tmp_path / "w.csv").write_text(WORKLOAD)
    line = _one_line_error(_cli([*LIMITED, *extra, "--out", "la"], tmp_path))
    assert line.startswith(f"error: {names}"), line
    assert sorted(p.name for p in tmp_path.iterdir()) == ["w.csv"]


def test_limited_adaptivity_removes_its_mixes_when_the_sweep_refuses(tmp_path, monkeypatch):
    from goodput_sim.experiments import limited_adaptivity, sweep

    (tmp_path / "w.csv").write_text(WORKLOAD)
    (tmp_path / "la").mkdir()
    (tmp_path / "la" / "keep.txt").write_text("earlier")

    def refuse(*args, **kwargs):
        assert any((tmp_path / "la" / "workloads").iterdir())  # the mixes were written
        raise InputError("--policies", "refused by the sweep")

    monkeypatch.setattr(sweep, "sweep", refuse)
    with pytest.raises(InputError, match="refused by the sweep"):
        limited_adaptivity.run_limited_adaptivity(
            [tmp_path / "w.csv"], tmp_path / "la", None, "2x4", ("fifo",), workers=1
        )
    assert sorted(p.name for p in (tmp_path / "la").iterdir()) == ["keep.txt"]


# ------------------------------------------------------------ a key written twice is refused
@pytest.mark.parametrize(
    ("text", "where"),
    [
        ("policies: [fifo]\nworkloads: [w.csv]\npolicies: [goodput]\n", "'policies'"),
        ("policies: [fifo]\nworkloads: [w.csv]\nsettings: {oracle: no, oracle: yes}\n", "'oracle'"),
        ("policies: [{policy: goodput, params: {p: 1, p: 2}}]\nworkloads: [w.csv]\n", "'p'"),
        ("policies: [fifo]\nworkloads: [{generate: {jobs: 3, jobs: 4}}]\n", "'jobs'"),
        ("policies: [fifo]\nworkloads: [w.csv]\nvariants: {a: {}, a: {}}\n", "'a'"),
    ],
)
def test_a_key_written_twice_in_an_experiment_file_is_refused(tmp_path, text, where):
    (tmp_path / "w.csv").write_text(WORKLOAD)
    (tmp_path / "e.yaml").write_text(text)
    line = _one_line_error(_cli(["sweep", "e.yaml", "--out", "s", "--quiet"], tmp_path))
    assert where in line and "twice" in line, line
    assert sorted(p.name for p in tmp_path.iterdir()) == ["e.yaml", "w.csv"]


# ------------------------------------------- nested settings are checked even when unused
@pytest.mark.parametrize(
    ("values", "option"),
    [
        ({"repair_hours": -1.0}, "--repair-hours"),  # no failure model: never built
        ({"weibull_shape": 100.0}, "--weibull-shape"),
        ({"repair_hours": math.nan}, "--repair-hours"),
        ({"startup_delay": -5.0, "min_nodes": 1, "max_nodes": 2}, "--startup-delay"),
        ({"autoscaler_params": [[1]]}, "--autoscaler-params"),  # was a TypeError
        ({"autoscaler_params": [1, 2]}, "--autoscaler-params"),
    ],
)
def test_a_nested_setting_out_of_range_is_refused_without_its_group(values, option):
    with pytest.raises(InputError) as error:
        build_config(values)
    assert str(error.value).startswith(argument_name(option)), error.value  # Python's name
    assert error.value.cli_text().startswith(option), error.value  # the CLI's flag


def test_yaml_numbers_read_as_text_get_a_hint(tmp_path):
    (tmp_path / "w.csv").write_text(WORKLOAD)
    (tmp_path / "e.yaml").write_text(
        "policies: [fifo]\nworkloads: [w.csv]\nsettings: {max_wall: 1e-9}\n"
    )
    line = _one_line_error(_cli(["sweep", "e.yaml", "--out", "s", "--quiet"], tmp_path))
    assert "write 1.0e-9" in line, line
    (tmp_path / "e.yaml").write_text("policies: [fifo]\nworkloads: [w.csv]\nprofiles: ''\n")
    line = _one_line_error(_cli(["sweep", "e.yaml", "--out", "s", "--quiet"], tmp_path))
    assert "key profiles: no profiles at ''" in line, line


def test_plot_takes_the_policy_name_of_a_run_stopped_early(tmp_path):
    (tmp_path / "w.csv").write_text(WORKLOAD)
    args = ["compare", "--policies", "fifo,tiresias", "--workload", "w.csv", "--cluster", "2x4"]
    _one_line_error(_cli([*args, "--max-events", "10", "--quiet", "--out", "c"], tmp_path), 3)
    for kind in ("timeline", "jobs"):
        plot = ["plot", "c", "--kind", kind, "--policy", "tiresias", "-o", f"{kind}.png"]
        drawn = _cli(plot, tmp_path)
        assert drawn.exit_code == 0, drawn.output
