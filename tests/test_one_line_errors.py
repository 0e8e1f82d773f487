"""Inputs that ended in a traceback end in one line and exit 2: a manifest without the derived
``total_gpus`` (the figures read the checked cluster groups instead), ``--profiles`` naming a
device or a named pipe, and ``-o`` paths that cannot be written."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
from click.testing import CliRunner
from conftest import TWO_JOBS as WORKLOAD

from goodput_sim.cli import main


def _one_line_error(args: list[str]) -> str:
    result = CliRunner().invoke(main, args)
    assert result.exit_code == 2, (result.output, result.exception)
    lines = [line for line in result.stderr.splitlines() if line.strip()]
    assert len(lines) == 1 and "Traceback" not in result.output, result.output
    return lines[0]


@pytest.mark.parametrize("key", ["total_gpus", "gpus_per_node", "nodes"])
def test_figures_read_the_cluster_from_its_checked_groups(saved_run, tmp_path, key):
    """``plot --kind utilization`` on a manifest without ``total_gpus`` was a KeyError."""
    run = tmp_path / "r"
    run.mkdir()
    for name in ("jobs.csv", "rounds.csv", "fairness.csv"):
        (run / name).write_bytes((saved_run / name).read_bytes())
    manifest = json.loads((saved_run / "manifest.json").read_text())
    del manifest["cluster"][key]
    (run / "manifest.json").write_text(json.dumps(manifest))
    for kind in ("utilization", "nodes"):
        out = tmp_path / f"{kind}.png"
        result = CliRunner().invoke(main, ["plot", str(run), "--kind", kind, "-o", str(out)])
        assert result.exit_code == 0, (result.output, result.exception)
        assert out.stat().st_size > 0


def test_a_manifest_without_cluster_groups_is_refused(saved_run, tmp_path):
    run = tmp_path / "r"
    run.mkdir()
    for name in ("jobs.csv", "rounds.csv"):
        (run / name).write_bytes((saved_run / name).read_bytes())
    manifest = json.loads((saved_run / "manifest.json").read_text())
    del manifest["cluster"]["groups"]
    (run / "manifest.json").write_text(json.dumps(manifest))
    line = _one_line_error(
        ["plot", str(run), "--kind", "utilization", "-o", str(tmp_path / "u.png")]
    )
    assert "cluster.groups" in line


@pytest.mark.parametrize("kind", ["device", "fifo"])
def test_profiles_that_are_no_file_or_folder_are_refused(tmp_path, kind):
    """``--profiles /dev/null`` or a named pipe was a NotADirectoryError."""
    (tmp_path / "w.csv").write_text(WORKLOAD)
    profiles = "/dev/null"
    if kind == "fifo":
        profiles = str(tmp_path / "pipe")
        os.mkfifo(profiles)
    args = ["run", "--policy", "fifo", "--workload", str(tmp_path / "w.csv"), "--cluster", "2x4"]
    line = _one_line_error([*args, "--profiles", profiles, "--out", str(tmp_path / "o")])
    assert profiles in line and "expected a folder of profiles" in line


@pytest.mark.parametrize("command", ["report", "plot"])
@pytest.mark.parametrize("where", ["under a file", "under /proc", "under /sys"])
def test_outputs_that_cannot_be_written_are_refused(saved_run, tmp_path, command, where):
    """``-o`` to a path whose parent is a regular file, or a folder no one may write in (root
    passes every permission check, so the check writes), is one line, not a traceback."""
    (tmp_path / "file").write_text("x")
    suffix = ".html" if command == "report" else ".png"
    parent = {"under a file": str(tmp_path / "file"), "under /proc": "/proc", "under /sys": "/sys"}
    output = f"{parent[where]}/out{suffix}"
    line = _one_line_error([command, str(saved_run), "-o", output])
    assert line.startswith("error: --output: ")
    assert not Path(output).exists()


@pytest.mark.parametrize(
    "command", [["run", "--policy", "fifo"], ["compare", "--policies", "fifo"]]
)
@pytest.mark.parametrize("length", [247, 255])
def test_an_output_name_with_no_room_for_staging_is_refused(command, length, tmp_path):
    """Results are staged beside ``--out`` as ``<name>.partial`` or ``<name>.replaced``: a last
    part longer than 246 bytes is refused in one line before any run (it used to end in a
    traceback once the staged name passed the 255-byte limit)."""
    out = tmp_path / ("a" * length)
    result = CliRunner().invoke(main, [*command, "--out", str(out)])
    assert result.exit_code == 2, result.output
    assert "at most 246" in result.output and "Traceback" not in result.output
    assert list(tmp_path.iterdir()) == []
