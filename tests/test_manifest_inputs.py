"""How a results manifest names its inputs: bundled data as ``bundled:<name>``, other files by
their path from the results folder where the two share a folder, so a results folder copied
with its inputs beside it replays from the copy; absolute paths (older manifests) still read."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from click.testing import CliRunner

from goodput_sim import bundled
from goodput_sim.api import bundled_profiles_path, bundled_workload
from goodput_sim.cli import main
from goodput_sim.errors import InputError
from goodput_sim.results.saved import recorded_input

THREE_JOBS = (
    "name,time,application,num_replicas,batch_size\n"
    "ncf-0,0,ncf,1,32768\ncifar10-1,30,cifar10,4,2048\nncf-2,60,ncf,1,32768\n"
)


def invoke(*args) -> str:
    result = CliRunner().invoke(main, [str(a) for a in args])
    assert result.exit_code == 0, result.output
    return result.output


def inputs_of(folder: Path) -> dict:
    return json.loads((folder / "manifest.json").read_text())["inputs"]


def test_bundled_inputs_are_recorded_by_their_bundled_name(tmp_path):
    """The default workload and profiles are named as shipped data, not by the folder the
    package happens to be installed in, and replay finds them again."""
    assert recorded_input(bundled_workload(), tmp_path) == "bundled:traces/workloads/default.csv"
    assert recorded_input(bundled_profiles_path(), tmp_path) == "bundled:traces/profiles"
    assert bundled.unmarked("bundled:traces/profiles") == bundled_profiles_path()
    assert bundled.unmarked("traces/profiles") is None
    with pytest.raises(InputError, match="not a bundled name"):
        bundled.path("traces/../pyproject.toml")


def test_other_inputs_are_relative_to_the_results_folder_where_they_can_be(tmp_path):
    """A path from the results folder when both lie below a common folder; absolute when only
    the file system's root joins them."""
    out = tmp_path / "results" / "a"
    assert recorded_input(tmp_path / "inputs" / "w.csv", out) == "../../inputs/w.csv"
    assert recorded_input(out / "workload.csv", out) == "workload.csv"
    elsewhere = Path(tmp_path.anchor) / "no-such-folder-here" / "w.csv"
    assert recorded_input(elsewhere, out) == str(elsewhere)


def test_a_copied_results_folder_replays_with_its_inputs_beside_it(tmp_path, monkeypatch):
    """Run into project/results/a with the workload in project/inputs; move the whole project
    elsewhere and replay from another working folder: the same jobs.csv, byte for byte."""
    project = tmp_path / "project"
    (project / "inputs").mkdir(parents=True)
    (project / "inputs" / "w.csv").write_text(THREE_JOBS)
    monkeypatch.chdir(project)
    quick = ("--no-plot", "--quiet")
    invoke("run", "--policy", "fifo", "--workload", "inputs/w.csv", "--out", "results/a", *quick)
    assert inputs_of(project / "results" / "a") == {
        "workload": "../../inputs/w.csv",
        "profiles": "bundled:traces/profiles",
    }
    manifest = json.loads((project / "results" / "a" / "manifest.json").read_text())
    where = str((project / "inputs" / "w.csv").resolve())
    assert manifest["inputs_absolute"] == {"workload": where}
    moved = tmp_path / "elsewhere" / "copy"
    shutil.copytree(project, moved)
    shutil.rmtree(project)
    monkeypatch.chdir(tmp_path)
    manifest = moved / "results" / "a" / "manifest.json"
    invoke("run", "--manifest", manifest, "--out", "replayed", *quick)
    original = (moved / "results" / "a" / "jobs.csv").read_bytes()
    assert (tmp_path / "replayed" / "jobs.csv").read_bytes() == original
    report = CliRunner().invoke(main, ["report", str(moved / "results" / "a")])
    assert report.exit_code == 0, report.output


def test_a_results_folder_moved_without_its_inputs_replays_from_where_they_were(tmp_path):
    """Moved alone on the same machine, a run's inputs are found where they were."""
    (tmp_path / "inputs").mkdir()
    workload = tmp_path / "inputs" / "w.csv"
    workload.write_text(THREE_JOBS)
    out = tmp_path / "results" / "a"
    invoke("run", "--policy", "fifo", "--workload", workload, "--out", out, "--no-plot", "--quiet")
    moved = tmp_path / "archive" / "old" / "a"
    moved.parent.mkdir(parents=True)
    shutil.move(out, moved)
    again = tmp_path / "again"
    invoke("run", "--manifest", moved / "manifest.json", "--out", again, "--no-plot", "--quiet")
    assert (again / "jobs.csv").read_bytes() == (moved / "jobs.csv").read_bytes()


def test_a_manifest_with_absolute_paths_still_replays(tmp_path):
    """Manifests written before inputs were recorded relative name them absolutely."""
    workload = tmp_path / "w.csv"
    workload.write_text(THREE_JOBS)
    out = tmp_path / "results" / "a"
    invoke("run", "--policy", "fifo", "--workload", workload, "--out", out, "--no-plot", "--quiet")
    manifest = json.loads((out / "manifest.json").read_text())
    manifest["inputs"] = {"workload": str(workload), "profiles": str(bundled_profiles_path())}
    (out / "manifest.json").write_text(json.dumps(manifest))
    again = tmp_path / "again"
    invoke("run", "--manifest", out / "manifest.json", "--out", again, "--no-plot", "--quiet")
    assert (again / "jobs.csv").read_bytes() == (out / "jobs.csv").read_bytes()


def test_an_unknown_bundled_name_is_one_line_naming_the_input(tmp_path):
    workload = tmp_path / "w.csv"
    workload.write_text(THREE_JOBS)
    out = tmp_path / "a"
    invoke("run", "--policy", "fifo", "--workload", workload, "--out", out, "--no-plot", "--quiet")
    manifest = json.loads((out / "manifest.json").read_text())
    manifest["inputs"]["workload"] = "bundled:elsewhere/w.csv"
    (out / "manifest.json").write_text(json.dumps(manifest))
    result = CliRunner().invoke(main, ["run", "--manifest", str(out / "manifest.json")])
    assert result.exit_code == 2
    assert "inputs.workload" in result.output and "not a bundled name" in result.output
