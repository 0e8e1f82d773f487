"""A sweep reuses a finished run only under the content hash of the whole run: GPU types,
engine settings and profile contents are part of it, so a resumed sweep recomputes exactly the
runs whose inputs changed and keeps every other one."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pandas as pd
import pytest
from click.testing import CliRunner

from goodput_sim.api import bundled_workload
from goodput_sim.cli import main
from goodput_sim.experiments import sweep as sweep_module
from goodput_sim.experiments.sweep import sweep
from goodput_sim.spec import SimConfig

REPO = Path(__file__).resolve().parents[1]
TYPES = ("aws", "rtx", "dgx-ext")


@pytest.fixture(scope="module")
def typed(tmp_path_factory) -> Path:
    """A folder with 12 jobs of the heterogeneous workload, a copy of the typed Sia profiles
    and one 4x4 cluster file per GPU type."""
    folder = tmp_path_factory.mktemp("typed")
    jobs = pd.read_csv(REPO / "traces" / "workloads" / "heterogeneous.csv")
    jobs[jobs["num_replicas"] <= 16].iloc[::8].head(12).to_csv(folder / "het.csv", index=False)
    shutil.copytree(REPO / "traces" / "profiles-sia", folder / "profiles")
    for gpu_type in TYPES:
        (folder / f"{gpu_type}.yaml").write_text(
            f"nodes: 4\ngpus_per_node: 4\ngpu_type: {gpu_type}\n"
        )
    return folder


def _typed_sweep(folder: Path, out: Path, types=("aws", "rtx"), **kwargs) -> pd.DataFrame:
    """fifo on the typed jobs, one run per cluster type (and per value of swept settings)."""
    return sweep(
        ["fifo"],
        [folder / "het.csv"],
        out,
        profiles=str(kwargs.pop("profiles", folder / "profiles")),
        clusters=[str(folder / f"{t}.yaml") for t in types],
        progress=False,
        **kwargs,
    )


@pytest.fixture
def executed(monkeypatch) -> list[Path]:
    """The folders of the runs a (serial) sweep actually executes, in order."""
    done: list[Path] = []
    real = sweep_module.run_task

    def counting(task, *args):
        out = args[-1]
        done.append(task.folder(out).relative_to(out))
        return real(task, *args)

    monkeypatch.setattr(sweep_module, "run_task", counting)
    return done


def _stamps(out: Path) -> dict[Path, int]:
    return {p.parent.relative_to(out): p.stat().st_mtime_ns for p in out.rglob("summary.json")}


def test_clusters_of_one_shape_and_different_gpu_types_keep_their_own_results(typed, tmp_path):
    """Before, 4x4 aws and 4x4 rtx wrote one folder: on resume both rows read rtx's result."""
    out = tmp_path / "s"
    first = _typed_sweep(typed, out)
    assert sorted(str(p) for p in _stamps(out)) == [
        "het-4x4-aws/fifo-seed0",
        "het-4x4-rtx/fifo-seed0",
    ]
    aws, rtx = first["avg_jct"]
    assert aws != pytest.approx(rtx)  # the rtx GPUs are faster for these jobs
    assert list(first["gpu_types"]) == ["aws", "rtx"]
    before = (out / "summary.csv").read_bytes()
    again = _typed_sweep(typed, out)
    assert list(again["avg_jct"]) == [aws, rtx]
    assert (out / "summary.csv").read_bytes() == before


def test_a_sweep_resumed_with_another_restart_delay_recomputes(tmp_path, executed):
    """Before, a sweep run with restart_delay 30 and resumed with 600 returned the 30 s results
    (660.2 s against a fresh 2539.2 s for goodput on these 20 jobs)."""
    jobs = tmp_path / "jobs.csv"
    pd.read_csv(bundled_workload()).iloc[:20].to_csv(jobs, index=False)

    def run(out: Path, delay: float) -> pd.DataFrame:
        config = SimConfig(restart_delay=delay)
        return sweep(["goodput"], [jobs], out, cluster="4x4", config=config, progress=False)

    short = run(tmp_path / "s", 30.0)
    resumed = run(tmp_path / "s", 600.0)
    assert len(executed) == 2  # the run was done again, not reused
    fresh = run(tmp_path / "fresh", 600.0)
    assert (tmp_path / "s" / "summary.csv").read_bytes() == (
        tmp_path / "fresh" / "summary.csv"
    ).read_bytes()
    assert resumed["avg_jct"].iloc[0] == fresh["avg_jct"].iloc[0]
    assert resumed["avg_jct"].iloc[0] > 2 * short["avg_jct"].iloc[0]


def test_a_changed_profile_recomputes_and_unchanged_runs_are_reused(typed, tmp_path, executed):
    """Before, editing a profile file and resuming returned the results of the old profile."""
    profiles = tmp_path / "profiles"
    shutil.copytree(typed / "profiles", profiles)
    out = tmp_path / "s"
    before = _typed_sweep(typed, out, profiles=profiles)
    stamps = _stamps(out)
    executed.clear()
    _typed_sweep(typed, out, profiles=profiles)
    assert executed == [] and _stamps(out) == stamps  # nothing changed: everything reused
    cifar = profiles / "cifar10.yaml"
    cifar.write_text(cifar.read_text().replace("restart_delay: 50.0", "restart_delay: 500.0"))
    resumed = _typed_sweep(typed, out, profiles=profiles)
    assert len(executed) == 2
    fresh = _typed_sweep(typed, tmp_path / "fresh", profiles=profiles)
    assert list(resumed["avg_jct"]) == list(fresh["avg_jct"])
    assert (out / "summary.csv").read_bytes() == (tmp_path / "fresh" / "summary.csv").read_bytes()
    assert list(resumed["run_key"]) != list(before["run_key"])


GRID = {"settings": {"mtbf": [None, 2.0]}, "types": ("aws", "rtx")}
CHANGES = {
    "nothing": ({}, set()),
    "a value of a setting axis": (
        {"settings": {"mtbf": [None, 3.0]}},
        {"het-4x4-aws-mtbf=3/fifo-seed0", "het-4x4-rtx-mtbf=3/fifo-seed0"},
    ),
    "a setting of every run": (
        {"settings": {"mtbf": [None, 2.0], "checkpoint_interval": [600.0]}},
        {
            f"het-4x4-{t}{m}-checkpoint_interval=600/fifo-seed0"
            for t in ("aws", "rtx")
            for m in ("", "-mtbf=2")
        },
    ),
    "the GPU type of one cluster": (
        {"types": ("aws", "dgx-ext")},
        {"het-4x4-dgx-ext/fifo-seed0", "het-4x4-dgx-ext-mtbf=2/fifo-seed0"},
    ),
    "the content of a profile": (
        {"profile": True},
        {f"het-4x4-{t}{m}/fifo-seed0" for t in ("aws", "rtx") for m in ("", "-mtbf=2")},
    ),
}


@pytest.fixture(scope="module")
def grid_sweep(typed, tmp_path_factory) -> Path:
    """The GRID swept once: 2 cluster types x 2 MTBFs."""
    out = tmp_path_factory.mktemp("grid") / "out"
    _typed_sweep(typed, out, types=GRID["types"], settings=GRID["settings"])
    return out


@pytest.mark.parametrize("change", list(CHANGES))
def test_a_resumed_sweep_recomputes_exactly_the_changed_runs(
    change, typed, grid_sweep, tmp_path, executed
):
    """Metamorphic: after any one change, the resumed sweep runs exactly the runs whose inputs
    changed (named in advance), keeps the files of every other run, and ends with the summary a
    fresh sweep of the changed grid writes."""
    edit, expected = CHANGES[change]
    out = tmp_path / "out"
    shutil.copytree(grid_sweep, out)
    profiles = tmp_path / "profiles"
    shutil.copytree(typed / "profiles", profiles)
    if edit.get("profile"):
        bert = profiles / "bert.yaml"
        bert.write_text(bert.read_text().replace("restart_delay:", "restart_delay: 1 #", 1))
    settings = edit.get("settings", GRID["settings"])
    types = edit.get("types", GRID["types"])
    stamps = _stamps(out)
    executed.clear()
    _typed_sweep(typed, out, types=types, settings=settings, profiles=profiles)
    assert {str(p) for p in executed} == expected
    kept = {p: t for p, t in _stamps(out).items() if str(p) not in expected}
    assert all(stamps[p] == t for p, t in kept.items() if p in stamps)
    fresh = tmp_path / "fresh"
    _typed_sweep(typed, fresh, types=types, settings=settings, profiles=profiles)
    assert (out / "summary.csv").read_bytes() == (fresh / "summary.csv").read_bytes()


EXPERIMENT = """
policies: [fifo]
workloads: [het.csv]
clusters: [aws.yaml]
profiles: profiles
seeds: [1]
settings:
  restart_delay: 60
  mtbf: [null, 2]
  autoscaler_params: {{}}
  {extra}
"""


def test_failures_and_autoscaling_are_axes_of_an_experiment_file(typed, tmp_path):
    """Every engine setting is an experiment-file key and a list is an axis; a swept failure
    run is the run of ``goodput-sim run`` with the same options (failures seeded by the run's
    seed), and it replays from its manifest."""
    path = typed / "exp.yaml"
    path.write_text(EXPERIMENT.format(extra="min_nodes: [1]\n  max_nodes: [4]"))
    out = tmp_path / "out"
    result = CliRunner().invoke(main, ["sweep", str(path), "--out", str(out), "--quiet"])
    assert result.exit_code == 0, result.output
    summary = pd.read_csv(out / "summary.csv")
    assert len(summary) == 2
    assert [json.loads(s) for s in summary["settings"]] == [
        {"restart_delay": 60.0, "min_nodes": 1, "max_nodes": 4},
        {"restart_delay": 60.0, "mtbf": 2.0, "min_nodes": 1, "max_nodes": 4},
    ]
    failing = next(out.glob("*mtbf=2*/fifo-seed1"))
    manifest = json.loads((failing / "manifest.json").read_text())
    assert manifest["config"]["failures"]["seed"] == 1
    assert manifest["config"]["autoscale"]["max_nodes"] == 4
    assert summary["node_failures"].tolist()[0] == 0 < summary["node_failures"].tolist()[1]
    single = tmp_path / "single"
    options = ["--restart-delay", "60", "--mtbf", "2", "--min-nodes", "1", "--max-nodes", "4"]
    result = CliRunner().invoke(
        main,
        [
            "run",
            "--policy",
            "fifo",
            "--workload",
            str(failing / "workload.csv"),  # seed 1 resampled the file
            "--profiles",
            str(typed / "profiles"),
            "--cluster",
            str(typed / "aws.yaml"),
            "--seed",
            "1",
            *options,
            "--out",
            str(single),
            "--quiet",
        ],
    )
    assert result.exit_code == 0, result.output
    assert (single / "jobs.csv").read_bytes() == (failing / "jobs.csv").read_bytes()
    replay = tmp_path / "replay"
    result = CliRunner().invoke(
        main, ["run", "--manifest", str(failing / "manifest.json"), "--out", str(replay)]
    )
    assert result.exit_code == 0, result.output
    assert (replay / "jobs.csv").read_bytes() == (failing / "jobs.csv").read_bytes()


@pytest.mark.parametrize(
    ("extra", "message"),
    [
        ("interval: 30", "the interval is swept by the intervals key"),
        ("mtbf: -3", "key settings: mtbf: must be positive hours"),  # the file's key
        ("restart_delay: [30, 30]", "key settings.restart_delay: lists a value twice"),
        ("max_nodes: [4]", "key settings: min_nodes: give both or neither"),
        ("failure_trace: gone.csv", "key settings.failure_trace: no failure trace at"),
        ("placement_order: [node, sideways]", "expected allocation or node"),
    ],
)
def test_bad_settings_of_an_experiment_file_get_one_line(typed, tmp_path, extra, message):
    key = extra.split(":")[0]
    own = [line for line in EXPERIMENT.splitlines() if not line.startswith(f"  {key}:")]
    path = typed / "bad.yaml"  # the setting replaces the file's own (a key twice is refused)
    path.write_text("\n".join(own).format(extra=extra))
    result = CliRunner().invoke(main, ["sweep", str(path), "--out", str(tmp_path / "o")])
    assert result.exit_code == 2, result.output
    lines = result.output.strip().splitlines()
    assert len(lines) == 1 and str(path) in lines[0] and message in lines[0], lines
    assert not (tmp_path / "o").exists()


def test_the_run_budget_refuses_a_bigger_grid_before_any_run_and_can_be_raised(tmp_path):
    """``max_runs`` (``--max-runs``) is a budget, not a result: a grid over it is refused with
    nothing written, and the same grid under a raised budget runs every run."""
    from goodput_sim.errors import InputError

    jobs = tmp_path / "w.csv"
    pd.read_csv(bundled_workload()).iloc[:3].to_csv(jobs, index=False)
    out = tmp_path / "s"
    grid = {"policies": ["fifo"], "workloads": [jobs], "seeds": (0, 1), "progress": False}
    with pytest.raises(InputError, match="^max_runs: "):  # in Python: the argument's name
        sweep(out=out, max_runs=1, cluster="2x4", **grid)
    assert not out.exists()
    assert len(sweep(out=out, max_runs=2, cluster="2x4", **grid)) == 2
