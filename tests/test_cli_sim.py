"""`goodput-sim run | compare | validate`: results folders, JSON output, one-line input errors."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pandas as pd
import pytest
from click.testing import CliRunner

from goodput_sim.cli import main

HEADER = "name,time,application,num_replicas,batch_size\n"
SMALL = HEADER + "ncf-0,0,ncf,1,32768\ncifar10-1,30,cifar10,4,2048\nncf-2,60,ncf,1,32768\n"
JOB_COLUMNS = [
    "arrival",
    "start",
    "finish",
    "jct",
    "queueing",
    "restarts",
    "gpu_seconds",
    "final_batch_size",
    "finished",
]


def invoke(*args: str):
    return CliRunner().invoke(main, [str(a) for a in args])


@pytest.fixture
def small_csv(tmp_path: Path) -> Path:
    path = tmp_path / "small.csv"
    path.write_text(SMALL)
    return path


def test_run_writes_a_results_folder(small_csv, tmp_path):
    out = tmp_path / "out"
    result = invoke(
        "run", "--policy", "fifo", "--workload", small_csv, "--cluster", "2x4", "--out", out,
        "--plot",
    )
    assert result.exit_code == 0, result.output
    assert "3/3 jobs finished" in result.output
    for name in ("jobs.csv", "rounds.csv", "manifest.json", "jct_cdf.png"):
        assert (out / name).is_file() and (out / name).stat().st_size > 0, name
    assert (out / "jct_cdf.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"

    jobs = pd.read_csv(out / "jobs.csv")
    assert set(JOB_COLUMNS) <= set(jobs.columns)
    assert len(jobs) == 3 and jobs["finished"].all()
    assert jobs["jct"].to_numpy() == pytest.approx(
        (jobs["finish"] - jobs["arrival"]).to_numpy(), abs=2e-6
    )
    assert (jobs["restarts"] == 0).all() and (jobs["gpu_seconds"] > 0).all()
    rounds = pd.read_csv(out / "rounds.csv")
    assert {"time", "allocations"} <= set(rounds.columns)

    manifest = json.loads((out / "manifest.json").read_text())
    assert manifest["goodput_sim_version"]
    assert manifest["seed"] == 0
    assert manifest["config"]["interval"] == 60.0 and manifest["config"]["restart_delay"] == 30.0
    assert manifest["cluster"]["nodes"] == 2 and manifest["cluster"]["gpus_per_node"] == 4
    assert manifest["policy"]["name"] == "fifo"
    hashes = manifest["input_sha256"]
    assert set(hashes) == {"workload", "profiles"}
    assert all(re.fullmatch(r"[0-9a-f]{64}", h) for h in hashes.values())
    assert manifest["wall_seconds"] > 0


def test_run_without_the_plot_writes_the_same_tables(small_csv, tmp_path):
    """The figure is drawn on request (--plot); by default, as with --no-plot, it is not."""
    plotted, bare, default = tmp_path / "plotted", tmp_path / "bare", tmp_path / "default"
    for out, flag in ((plotted, ("--plot",)), (bare, ("--no-plot",)), (default, ())):
        result = invoke("run", "--policy", "fifo", "--workload", small_csv, "--out", out, *flag)
        assert result.exit_code == 0, result.output
    assert (plotted / "jct_cdf.png").is_file() and not (bare / "jct_cdf.png").exists()
    assert not (default / "jct_cdf.png").exists()
    for name in ("jobs.csv", "rounds.csv"):
        assert (plotted / name).read_bytes() == (bare / name).read_bytes()


def test_run_options_reach_the_config(small_csv, tmp_path):
    out = tmp_path / "out"
    result = invoke(
        "run",
        "--policy",
        "goodput",
        "--workload",
        small_csv,
        "--cluster",
        "2x4",
        "--seed",
        5,
        "--interval",
        120,
        "--restart-delay",
        10,
        "--interference",
        0.25,
        "--horizon",
        900,
        "--oracle",
        "--placement-order",
        "node",
        "--out",
        out,
    )
    assert result.exit_code == 0, result.output
    manifest = json.loads((out / "manifest.json").read_text())
    assert manifest["seed"] == 5
    assert manifest["complete"] is True and manifest["stopped"] is None
    assert manifest["config"] == {
        "max_wall": None,
        "stall_hours": 24.0,
        "max_events": 20_000_000,
        "placement_order": "node",
        "interval": 120.0,
        "restart_delay": 10.0,
        "interference": 0.25,
        "horizon": 900.0,
        "oracle": True,
        "failures": None,
        "checkpoint_interval": None,
        "autoscale": None,
        "checkpoint_seconds": None,
        "reallocation_checkpoint": "free",
        "progress": "noise",
        "lr_schedule": None,
        "lr_descent": 5.0,
        "seed_objective": False,
        "tail_geometry": "examples",
        "crashes": True,
    }
    rounds = pd.read_csv(out / "rounds.csv")
    assert rounds["time"].max() < 900 and (rounds["time"] % 120 == 0).all()


def test_compare_json(small_csv, tmp_path):
    out = tmp_path / "cmp"
    result = invoke(
        "compare",
        "--policies",
        "fifo,goodput",
        "--workload",
        small_csv,
        "--cluster",
        "2x4",
        "--format",
        "json",
        "--out",
        out,
    )
    assert result.exit_code == 0, result.output
    data = json.loads(result.stdout)
    assert set(data["policies"]) == {"fifo", "goodput"}
    for stats in data["policies"].values():
        for key in ("avg_jct", "median_jct", "p95_jct", "makespan", "unfinished"):
            assert key in stats
        assert stats["unfinished"] == 0
        assert 0 < stats["median_jct"] <= stats["p95_jct"] <= stats["makespan"] + 60
    claim = data["claim"]
    assert claim["reference"] == "goodput" and claim["available"]
    assert set(claim["versus"]) == {"fifo"}
    expected = 1 - data["policies"]["goodput"]["avg_jct"] / data["policies"]["fifo"]["avg_jct"]
    assert claim["versus"]["fifo"]["reduction"] == pytest.approx(expected)
    for name in ("jct_cdf.png", "avg_jct.png"):
        assert (out / name).is_file() and (out / name).stat().st_size > 0
    for policy in ("fifo", "goodput"):
        assert (out / policy / "jobs.csv").is_file()


# ------------------------------------------------------------------------------ bad input
def _one_line_error(result) -> str:
    assert result.exit_code == 2, (result.exit_code, result.output)
    assert "Traceback" not in result.output
    assert result.exception is None or isinstance(result.exception, SystemExit)
    lines = [line for line in result.stderr.splitlines() if line.strip()]
    assert len(lines) == 1, result.stderr
    assert result.stdout.strip() == ""
    return lines[0]


BAD_WORKLOADS = {
    "unknown_app": (HEADER + "a,0,ncf,1,32768\nb,10,resnet,1,64\n", 3, "unknown application"),
    "negative_time": (HEADER + "a,-5,ncf,1,32768\n", 2, "time '-5'"),
    "non_numeric_time": (HEADER + "a,0,ncf,1,32768\nb,soon,ncf,1,32768\n", 3, "not a number"),
    "duplicate_names": (HEADER + "a,0,ncf,1,32768\na,10,ncf,1,32768\n", 3, "duplicate job name"),
    "missing_columns": ("name,time,application\na,0,ncf\n", 1, "missing column"),
    "too_many_gpus": (HEADER + "a,0,ncf,1,32768\nbig,0,cifar10,16,4096\n", 3, "16 GPUs"),
}


@pytest.mark.parametrize("case", sorted(BAD_WORKLOADS))
@pytest.mark.parametrize("command", ["run", "compare"])
def test_bad_workload_is_one_line_naming_file_and_line(case, command, tmp_path):
    text, line, problem = BAD_WORKLOADS[case]
    path = tmp_path / f"{case}.csv"
    path.write_text(text)
    args = ["--policy", "fifo"] if command == "run" else ["--policies", "fifo,goodput"]
    result = invoke(
        command, *args, "--workload", path, "--cluster", "2x4", "--out", tmp_path / "out"
    )
    message = _one_line_error(result)
    assert f"{case}.csv" in message
    assert f"line {line}" in message
    assert problem in message
    assert not (tmp_path / "out").exists()


def test_empty_workload(tmp_path):
    path = tmp_path / "empty.csv"
    path.write_text(HEADER)
    message = _one_line_error(
        invoke("run", "--policy", "fifo", "--workload", path, "--out", tmp_path / "out")
    )
    assert "empty.csv" in message and "no jobs" in message


def test_unknown_policy(small_csv, tmp_path):
    message = _one_line_error(
        invoke("run", "--policy", "sjf", "--workload", small_csv, "--out", tmp_path / "out")
    )
    assert "sjf" in message and "--policy" in message
    for known in ("fifo", "goodput", "optimus", "throughput", "tiresias"):
        assert known in message
    message = _one_line_error(
        invoke(
            "compare", "--policies", "fifo,sjf", "--workload", small_csv, "--out", tmp_path / "out"
        )
    )
    assert "sjf" in message


def _fifo_run_error(small_csv, tmp_path, *options) -> str:
    """The one-line error of `run --policy fifo` on ``small_csv`` with extra ``options``."""
    return _one_line_error(
        invoke(
            "run", "--policy", "fifo", "--workload", small_csv, *options, "--out", tmp_path / "out"
        )
    )


def test_malformed_cluster_yaml(small_csv, tmp_path):
    cluster = tmp_path / "cluster.yaml"
    cluster.write_text("nodes: 2\ngpus_per_node: [4\n")
    message = _fifo_run_error(small_csv, tmp_path, "--cluster", cluster)
    assert "cluster.yaml" in message and "malformed YAML" in message
    assert re.search(r"line \d+", message)


def test_cluster_yaml_with_bad_value(small_csv, tmp_path):
    cluster = tmp_path / "cluster.yaml"
    cluster.write_text("nodes: 0\ngpus_per_node: 4\n")
    message = _fifo_run_error(small_csv, tmp_path, "--cluster", cluster)
    assert "cluster.yaml" in message and "nodes" in message


def test_cluster_yaml_is_used(small_csv, tmp_path):
    cluster = tmp_path / "cluster.yaml"
    cluster.write_text("nodes: 3\ngpus_per_node: 2\n")
    out = tmp_path / "out"
    result = invoke(
        "run", "--policy", "fifo", "--workload", small_csv, "--cluster", cluster, "--out", out
    )
    assert result.exit_code == 0, result.output
    manifest = json.loads((out / "manifest.json").read_text())
    assert (manifest["cluster"]["nodes"], manifest["cluster"]["gpus_per_node"]) == (3, 2)


@pytest.mark.parametrize(
    ("option", "value"), [("--interval", "0"), ("--interference", "1.5"), ("--horizon", "-1")]
)
def test_bad_engine_option(option, value, small_csv, tmp_path):
    message = _fifo_run_error(small_csv, tmp_path, option, value)
    assert option in message


def test_validate_without_reference_skips():
    result = invoke("validate", "--reference", "/nonexistent")
    assert result.exit_code == 0
    assert "SKIPPED" in result.output


def test_policies_lists_every_policy():
    from goodput_sim.policies import policy_names

    result = invoke("policies")
    assert result.exit_code == 0
    lines = result.output.splitlines()
    agents = lines.index("agents:")
    listed = [
        line.split()[0].rstrip(":")
        for line in lines[1:agents]
        if line.startswith("  ") and not line.startswith("    ")
    ]
    assert listed == policy_names()
    assert "  goodput (aliases: pollux): " in result.output
    assert "    --param p=-1.0  (float in [-10, 1])" in result.output
    from goodput_sim.agents import agent_names

    scalers = lines.index(next(line for line in lines if line.startswith("autoscalers")))
    listed_agents = [
        line.split(":")[0].strip()
        for line in lines[agents + 1 : scalers]
        if line.startswith("  ") and not line.startswith("    ")
    ]
    assert listed_agents == agent_names()
    assert "    --param autoscaler.low=0.5  (float in [0, 1])" in result.output
    assert "    --param mode=compute  (one of compute, time)" in result.output
    data = json.loads(invoke("policies", "--format", "json").output)
    assert data["policies"]["tiresias"]["default_agent"] == "fixed"
    assert data["policies"]["goodput"]["default_agent"] == "goodput"
    assert {p["name"] for p in data["policies"]["goodput"]["params"]} == {
        "p",
        "restart_penalty",
        "interference_avoidance",
        "candidates",
        "quiet_seconds",
        "max_gpus",
        "restart_seconds",
        "virtual_node_gpus",
    }


# ------------------------------------------------------------------ clusters as node groups
TWO_GROUPS = """cluster:
  groups:
    - {nodes: 2, gpus_per_node: 4, gpu_type: T4}
    - {nodes: 1, gpus_per_node: 4}
"""


@pytest.mark.parametrize("policy", ["tiresias", "goodput"])
def test_two_node_groups_equal_the_shorthand(policy, small_csv, tmp_path):
    cluster = tmp_path / "groups.yaml"
    cluster.write_text(TWO_GROUPS)
    outs = []
    for spec in (cluster, "3x4"):
        out = tmp_path / f"out-{len(outs)}"
        result = invoke(
            "run", "--policy", policy, "--workload", small_csv, "--cluster", spec, "--out", out
        )
        assert result.exit_code == 0, result.output
        outs.append(out)
    for name in ("jobs.csv", "rounds.csv"):
        assert (outs[0] / name).read_bytes() == (outs[1] / name).read_bytes()
    groups = json.loads((outs[0] / "manifest.json").read_text())["cluster"]["groups"]
    assert [g["nodes"] for g in groups] == [2, 1]


def test_node_groups_of_different_sizes_run(small_csv, tmp_path):
    cluster = tmp_path / "mixed.yaml"
    cluster.write_text(
        "groups:\n  - {nodes: 1, gpus_per_node: 8}\n  - {nodes: 2, gpus_per_node: 2}\n"
    )
    for policy in ("fifo", "goodput"):
        result = invoke(
            "run",
            "--policy",
            policy,
            "--workload",
            small_csv,
            "--cluster",
            cluster,
            "--out",
            tmp_path / policy,
        )
        assert result.exit_code == 0, result.output
        assert "3/3 jobs finished" in result.output


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        (
            "groups:\n  - {nodes: 2, gpus_per_node: 4, gpu_type: T4}\n"
            "  - {nodes: 2, gpus_per_node: 4, gpu_type: A100}\n",
            "mixes GPU types ['A100', 'T4'], but the 'cifar10' profile is of one type (T4)",
        ),
        ("nodes: 2\ngpus_per_node: 4\ngpu_type: A100\n", "GPU type 'A100' has no profiles for"),
        ("groups: []\n", "field groups: must be a non-empty list"),
        ("groups:\n  - {nodes: 2}\n", "field groups[0].gpus_per_node: is required"),
        ("groups:\n  - {nodes: 2, gpus_per_node: 4, racks: 3}\n", "unknown field(s) ['racks']"),
        ("groups:\n  - [2, 4]\n", "expected a mapping"),
        ("groups:\n  - {nodes: 2, gpus_per_node: 4}\nnodes: 3\n", "unknown field(s) ['nodes']"),
        ("nodes: 2\ngpus_per_node: 99999\n", "at most 1024 supported"),
        ("cluster: 5\n", "expected a mapping"),
    ],
)
def test_bad_cluster_groups_get_one_line(text, expected, small_csv, tmp_path):
    cluster = tmp_path / "cluster.yaml"
    cluster.write_text(text)
    message = _fifo_run_error(small_csv, tmp_path, "--cluster", cluster)
    assert "cluster.yaml" in message and expected in message, message


def test_cluster_yaml_not_utf8(small_csv, tmp_path):
    cluster = tmp_path / "cluster.yaml"
    cluster.write_bytes(b"nodes: 2\ngpus_per_node: \xff\xfe\n")
    assert "is not UTF-8 text" in _fifo_run_error(small_csv, tmp_path, "--cluster", cluster)


def test_shipped_cluster_configs_parse():
    from goodput_sim.inputs.cluster import parse_cluster

    configs = Path(__file__).resolve().parents[1] / "configs"
    assert str(parse_cluster(configs / "cluster-16x4.yaml")) == "16x4"
    assert parse_cluster(configs / "cluster-256x4.yaml").total_gpus == 1024


# ------------------------------------------------------------------- agents and parameters
def test_agent_and_params_reach_the_manifest(small_csv, tmp_path):
    out = tmp_path / "out"
    result = invoke(
        "run",
        "--policy",
        "tiresias",
        "--agent",
        "goodput",
        "--workload",
        small_csv,
        "--param",
        "queue_threshold=3600",
        "--out",
        out,
    )
    assert result.exit_code == 0, result.output
    manifest = json.loads((out / "manifest.json").read_text())
    assert manifest["agent"] == {"name": "goodput"}
    assert manifest["policy"]["queue_threshold"] == 3600.0


@pytest.mark.parametrize(
    ("options", "expected"),
    [
        (("--agent", "psychic"), "--agent: unknown agent 'psychic'; known: critical-batch, fixed"),
        (
            ("--agent", "critical-batch", "--param", "mode=fast"),
            "agent critical-batch parameter mode='fast': expected one of compute, time",
        ),
        (("--param", "nope=1"), "policy fifo has no parameter 'nope'"),
        (("--param", "queue_threshold"), "expected KEY=VALUE"),
        (("--param", "agent.x=1"), "agent fixed has no parameter 'x'"),
    ],
)
def test_bad_agent_or_param_gets_one_line(options, expected, small_csv, tmp_path):
    assert expected in _fifo_run_error(small_csv, tmp_path, *options)


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        ("p=2", "policy goodput parameter p='2': expected float in [-10, 1]"),
        ("p=nan", "expected float in [-10, 1]"),
        ("restart_penalty=maybe", "expected true or false"),
        ("p=-1", None),
    ],
)
def test_policy_params_are_validated(value, expected, small_csv, tmp_path):
    result = invoke(
        "compare",
        "--policies",
        "goodput",
        "--workload",
        small_csv,
        "--param",
        value,
        "--out",
        tmp_path / "out",
    )
    if expected is None:
        assert result.exit_code == 0, result.output
    else:
        assert expected in _one_line_error(result)


def test_claim_check_sets_goodput_against_baselines_only(small_csv, tmp_path):
    from goodput_sim.api import baselines
    from goodput_sim.results.metrics import claim_check

    assert baselines(["goodput", "goodput-ga", "tiresias", "fifo"]) == ["tiresias", "fifo"]
    summaries = {
        "goodput": {"avg_jct": 50.0},
        "goodput-ga": {"avg_jct": 40.0},
        "tiresias": {"avg_jct": 100.0},
    }
    claim = claim_check(summaries, baselines=["tiresias"])
    assert list(claim["versus"]) == ["tiresias"] and claim["versus"]["tiresias"]["reduction"] == 0.5
    result = invoke(
        "compare", "--policies", "goodput", "--workload", small_csv, "--out", tmp_path / "o"
    )
    assert result.exit_code == 0, result.output
    assert "claim check: no baseline in the comparison" in result.output
    header = (tmp_path / "o" / "summary.csv").read_text().splitlines()[0]
    assert header.startswith("policy,")


def test_run_says_when_the_average_covers_finished_jobs_only(small_csv, tmp_path):
    result = invoke(
        "run",
        "--policy",
        "fifo",
        "--workload",
        small_csv,
        "--horizon",
        "120",
        "--out",
        tmp_path / "o",
    )
    assert result.exit_code == 0, result.output
    assert "jobs finished" in result.output
    assert "(over the" in result.output or "average JCT -" in result.output


def test_manifest_states_the_unit_of_every_column(small_csv, tmp_path):
    out = tmp_path / "o"
    assert invoke("run", "--policy", "fifo", "--workload", small_csv, "--out", out).exit_code == 0
    units = json.loads((out / "manifest.json").read_text())["units"]
    jobs = pd.read_csv(out / "jobs.csv")
    rounds = pd.read_csv(out / "rounds.csv")
    summary = json.loads((out / "manifest.json").read_text())["summary"]
    typed_only = {"gpu_types", "gpu_hours_by_type"}  # columns of runs on several GPU types
    counters = {"crashes", "saves", "preemptions"}  # runs with crashes, costly saves, spot nodes
    assert set(units["jobs.csv"]) - typed_only - counters == set(jobs.columns)
    several_shapes_only = {"gpus_up"}  # recorded on clusters of several node shapes
    assert set(units["rounds.csv"]) - several_shapes_only == set(rounds.columns)
    assert set(units["fairness.csv"]) == set(pd.read_csv(out / "fairness.csv").columns)
    per_application = {
        k for k in summary if k.startswith("avg_jct_") and k != "avg_jct_without_failures"
    }
    assert per_application and set(summary) - per_application <= set(units["summary"])
    assert "avg_jct_<application>" in units["summary"]


@pytest.mark.parametrize("kind", ["cdf", "bars", "apps", "utilization", "timeline", "jobs"])
def test_plot_redraws_figures_from_saved_results_alone(kind, small_csv, tmp_path, monkeypatch):
    out = tmp_path / "cmp"
    result = invoke("compare", "--policies", "fifo,goodput", "--workload", small_csv, "--out", out)
    assert result.exit_code == 0, result.output
    from goodput_sim import api

    def no_runs(*args, **kwargs):
        raise AssertionError("plot must not simulate")

    monkeypatch.setattr(api, "run", no_runs)
    extra = ("--policy", "goodput", "--jobs", "cifar10-1") if kind == "jobs" else ()
    drawn = invoke("plot", out, "--kind", kind, *extra, "-o", tmp_path / f"{kind}.svg")
    assert drawn.exit_code == 0, drawn.output
    text = (tmp_path / f"{kind}.svg").read_text()
    assert text.lstrip().startswith("<?xml") and "<svg" in text
    from goodput_sim.results.report import load_results

    caption = load_results(out).caption()
    assert caption == "small at load 1, 16x4 GPUs, fifo, goodput"  # workload, cluster, policies


def test_plot_timeline_and_errors(small_csv, tmp_path):
    out = tmp_path / "run"
    assert (
        invoke("run", "--policy", "goodput", "--workload", small_csv, "--out", out).exit_code == 0
    )
    drawn = invoke("plot", out, "--kind", "timeline")
    assert drawn.exit_code == 0 and (out / "timeline.png").read_bytes()[:4] == b"\x89PNG"
    empty = tmp_path / "empty"
    empty.mkdir()
    assert "holds no results" in _one_line_error(invoke("plot", empty))
    assert "expected a .png, .svg, .pdf file" in _one_line_error(
        invoke("plot", out, "-o", tmp_path / "x.gif")
    )
    pdf = invoke("plot", out, "--kind", "cdf", "-o", tmp_path / "cdf.pdf")
    assert pdf.exit_code == 0 and (tmp_path / "cdf.pdf").read_bytes()[:4] == b"%PDF"
    again = tmp_path / "again.pdf"
    assert invoke("plot", out, "--kind", "cdf", "-o", again).exit_code == 0
    assert again.read_bytes() == (tmp_path / "cdf.pdf").read_bytes()  # no dates inside
    jobs = invoke("plot", out, "--kind", "jobs")  # the three longest jobs by default
    assert jobs.exit_code == 0 and (out / "jobs.png").is_file()
    unknown = _one_line_error(invoke("plot", out, "--kind", "jobs", "--jobs", "nope"))
    assert "unknown job(s) nope; the run has " in unknown
