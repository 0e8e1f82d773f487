"""Experiment files: a grid from one YAML (validated with one-line errors), load and seed axes
that resample the workload, and runs replayed from their manifests byte for byte."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from click.testing import CliRunner

from goodput_sim.api import bundled_workload
from goodput_sim.cli import main
from goodput_sim.experiments.grid import load_experiment
from goodput_sim.inputs import workload as wl

CONFIGS = Path(__file__).resolve().parents[1] / "configs"

SMALL = """
name: small
policies: [fifo, {policy: tiresias, params: {queue_threshold: 3600}}]
workloads:
  - {generate: {jobs: 16, hours: 2}, name: gen}
  - jobs.csv
loads: [0.5, 1.0]
seeds: [0, 1]
"""


@pytest.fixture(scope="module")
def small_sweep(tmp_path_factory) -> Path:
    """The SMALL experiment swept once through the CLI (2 workers): its results folder."""
    folder = tmp_path_factory.mktemp("experiment")
    pd.read_csv(bundled_workload()).iloc[:20].to_csv(folder / "jobs.csv", index=False)
    (folder / "small.yaml").write_text(SMALL)
    out = folder / "out"
    result = CliRunner().invoke(
        main, ["sweep", str(folder / "small.yaml"), "--workers", "2", "--out", str(out)]
    )
    assert result.exit_code == 0, result.output
    return out


def test_an_experiment_file_sweeps_its_whole_grid(small_sweep):
    summary = pd.read_csv(small_sweep / "summary.csv")
    assert len(summary) == 2 * 2 * 2 * 2
    assert list(summary.columns[:8]) == [
        "workload",
        "load",
        "cluster",
        "interval",
        "policy",
        "agent",
        "params",
        "seed",
    ]
    jobs = summary.set_index(["workload", "load", "policy", "seed"])["jobs"]
    assert jobs["gen", 1.0, "fifo", 0] == 16 and jobs["gen", 0.5, "fifo", 0] == 8
    assert jobs["jobs", 1.0, "fifo", 0] == 20 and jobs["jobs", 0.5, "fifo", 1] == 10


def test_the_seed_axis_resamples_the_workload(small_sweep):
    """Seeds 0 and 1 of a generated workload are different jobs, not one workload twice."""
    first = pd.read_csv(small_sweep / "gen" / "fifo-seed0" / "workload.csv")
    second = pd.read_csv(small_sweep / "gen" / "fifo-seed1" / "workload.csv")
    assert not first.equals(second)
    rows = pd.read_csv(small_sweep / "summary.csv").query("policy == 'fifo' and load == 1.0")
    assert rows.groupby("workload")["avg_jct"].nunique().min() == 2  # files resampled too


@pytest.mark.parametrize(
    "run", ["gen/fifo-seed1", "gen-load0.5/tiresias-p{}-seed0", "jobs/fifo-seed0"]
)
def test_a_run_replays_from_its_manifest_byte_for_byte(small_sweep, run, tmp_path):
    folder = next(small_sweep.glob(run.format("*")))
    result = CliRunner().invoke(
        main, ["run", "--manifest", str(folder / "manifest.json"), "--out", str(tmp_path / "r")]
    )
    assert result.exit_code == 0, result.output
    assert (tmp_path / "r" / "jobs.csv").read_bytes() == (folder / "jobs.csv").read_bytes()


def test_a_replay_refuses_changed_inputs_and_extra_options(small_sweep, tmp_path):
    folder = small_sweep / "gen" / "fifo-seed0"
    (tmp_path / "m").mkdir()
    manifest = tmp_path / "m" / "manifest.json"
    manifest.write_text((folder / "manifest.json").read_text())
    (tmp_path / "m" / "workload.csv").write_text(
        (folder / "workload.csv").read_text().replace(",1,", ",2,", 1)
    )
    result = CliRunner().invoke(main, ["run", "--manifest", str(manifest)])
    assert result.exit_code == 2 and "changed since the run" in result.output
    result = CliRunner().invoke(
        main, ["run", "--manifest", str(folder / "manifest.json"), "--seed", "4"]
    )
    assert result.exit_code == 2 and "--seed: cannot be set with --manifest" in result.output


def test_a_sweep_resumes_into_its_own_folder(small_sweep):
    before = (small_sweep / "summary.csv").read_bytes()
    result = CliRunner().invoke(
        main, ["sweep", str(small_sweep.parent / "small.yaml"), "--out", str(small_sweep)]
    )
    assert result.exit_code == 0, result.output
    assert (small_sweep / "summary.csv").read_bytes() == before


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("policies: [fifo]\nworkloads: [jobs.csv]\nload: [1]\n", "unknown key(s) ['load']"),
        ("policies: [fifo]\n", "key workloads: is required"),
        ("policies: []\nworkloads: [jobs.csv]\n", "key policies: is an empty axis"),
        ("policies: fifo\nworkloads: [jobs.csv]\n", "key policies: must be a list"),
        ("policies: [nope]\nworkloads: [jobs.csv]\n", "key policies[0]: unknown policy 'nope'"),
        ("policies: [fifo]\nworkloads: [gone.csv]\n", "key workloads[0]: no workload file"),
        ("policies: [fifo]\nworkloads: [jobs.csv]\nloads: [0]\n", "expected loads in (0, 16]"),
        (
            "policies: [fifo]\nworkloads: [jobs.csv]\nseeds: [x]\n",
            "key seeds: expected integers in [0, ",
        ),
        (
            "policies: [fifo]\nworkloads: [{generate: {jobz: 3}}]\n",
            "key workloads[0]: unknown setting(s) ['jobz']",
        ),
        (
            "policies: [fifo]\nworkloads: [jobs.csv]\nsettings: {restart_delay: -1}\n",
            "key settings",
        ),
        (
            "policies: [{policy: goodput, params: {p: 7}}]\nworkloads: [jobs.csv]\n",
            "key policies[0]",
        ),
    ],
)
def test_bad_experiment_files_get_one_line(tmp_path, text, message):
    pd.read_csv(bundled_workload()).iloc[:5].to_csv(tmp_path / "jobs.csv", index=False)
    path = tmp_path / "bad.yaml"
    path.write_text(text)
    result = CliRunner().invoke(main, ["sweep", str(path), "--out", str(tmp_path / "o")])
    assert result.exit_code == 2, result.output
    lines = result.output.strip().splitlines()
    assert len(lines) == 1 and str(path) in lines[0] and message in lines[0], lines
    assert not (tmp_path / "o").exists()


def test_the_generated_load_experiment_parses():
    experiment = load_experiment(CONFIGS / "experiment-pollux-load-generated.yaml")
    assert experiment.runs == 5 * 8 * 4 and experiment.loads == [0.5, 1.0, 1.5, 2.0]


def test_the_reference_load_experiment_parses(reference_dir):
    experiment = load_experiment(CONFIGS / "experiment-pollux-load.yaml")
    assert [w.name for w in experiment.workloads] == [f"workload-{k}" for k in range(1, 9)]
    assert experiment.runs == 5 * 8 * 4


def test_resampled_jobs_keep_the_window_and_are_seeded():
    jobs = wl.load_workload(bundled_workload())
    assert wl.resample_jobs(jobs, 1.0, 0) is jobs
    half = wl.resample_jobs(jobs, 0.5, 0)
    assert len(half) == 80 and set(half["time"]) <= set(jobs["time"])  # a subset, as the reference
    double = wl.resample_jobs(jobs, 2.0, 0)
    assert len(double) == 320 and double["time"].between(jobs.time.min(), jobs.time.max()).all()
    assert double["name"].is_unique and double["time"].is_monotonic_increasing
    fresh = wl.resample_jobs(jobs, 1.0, 3)
    assert len(fresh) == 160 and not fresh.equals(jobs)
    assert fresh.equals(wl.resample_jobs(jobs, 1.0, 3))  # the seed decides it all
    with pytest.raises(wl.InputError):
        wl.resample_jobs(jobs, 0.0)


@pytest.mark.parametrize("load", [0.5, 1.5, 2.0])
def test_resampled_reference_workloads_keep_their_mix_and_arrival_hours(load, reference_dir):
    """The eight reference workloads resampled to each load, against themselves: application mix
    and arrival-hour histogram homogeneous (chi-square p > 0.01)."""
    from scipy.stats import chi2_contingency

    files = sorted((reference_dir / "workloads").glob("workload-*.csv"))
    reference = pd.concat([pd.read_csv(p) for p in files])
    resampled = pd.concat(
        [wl.resample_jobs(wl.load_workload(p), load, seed) for p in files for seed in (0, 1)]
    )
    apps = sorted(set(reference["application"]))
    mix = [[int((f["application"] == a).sum()) for a in apps] for f in (reference, resampled)]
    hours = [
        np.bincount((f["time"] // 3600).astype(int), minlength=8) for f in (reference, resampled)
    ]
    assert chi2_contingency(mix)[1] > 0.01
    assert chi2_contingency(hours)[1] > 0.01


def test_an_experiment_on_a_local_dask_cluster_gives_the_serial_bytes(small_sweep, tmp_path):
    pytest.importorskip("distributed", reason="dask[distributed] is a dev extra")
    out = tmp_path / "dask"
    result = CliRunner().invoke(
        main,
        [
            "sweep",
            str(small_sweep.parent / "small.yaml"),
            "--scheduler",
            "local",
            "--workers",
            "2",
            "--out",
            str(out),
            "--quiet",
        ],
    )
    assert result.exit_code == 0, result.output
    assert (out / "summary.csv").read_bytes() == (small_sweep / "summary.csv").read_bytes()
    for jobs in small_sweep.glob("*/*/jobs.csv"):
        assert (out / jobs.relative_to(small_sweep)).read_bytes() == jobs.read_bytes()


def test_run_takes_its_options_from_a_config_file(tmp_path):
    config = tmp_path / "run.yaml"
    config.write_text(
        "policy: tiresias\nseed: 3\nrestart_delay: 10\nparams: {queue_threshold: 1800}\n"
    )
    out = tmp_path / "o"
    result = CliRunner().invoke(
        main, ["run", "--config", str(config), "--seed", "4", "--out", str(out), "--quiet"]
    )
    assert result.exit_code == 0, result.output
    manifest = json.loads((out / "manifest.json").read_text())
    assert manifest["policy"]["name"] == "tiresias" and manifest["seed"] == 4  # the flag wins
    assert manifest["config"]["restart_delay"] == 10.0
    assert manifest["policy"]["queue_threshold"] == 1800.0
    config.write_text("polcy: fifo\n")
    bad = CliRunner().invoke(main, ["run", "--config", str(config)])
    assert bad.exit_code == 2 and "unknown option 'polcy'" in bad.output
