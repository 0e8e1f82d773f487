"""Durability of sweeps: a resumed sweep writes the same bytes as an uninterrupted one, a
SIGKILLed sweep leaves no worker running, and Ctrl-C stops a sweep at once with a summary of
what finished."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pandas as pd
import pytest
from conftest import bundled_slices

from goodput_sim.experiments.sweep import sweep

POLICIES = ["fifo", "tiresias", "optimus"]


@pytest.fixture(scope="module")
def workloads(tmp_path_factory) -> list[Path]:
    """Three 30-job slices of the bundled workload."""
    return bundled_slices(tmp_path_factory.mktemp("workloads"), 3, 30)


@pytest.fixture(scope="module")
def reference_summary(workloads, tmp_path_factory) -> bytes:
    out = tmp_path_factory.mktemp("reference")
    sweep(POLICIES, workloads, out, workers=1, progress=False)
    return (out / "summary.csv").read_bytes()


def _sweep_command(workloads, out: Path) -> list[str]:
    args = [sys.executable, "-m", "goodput_sim", "sweep", "--policies", ",".join(POLICIES)]
    for path in workloads:
        args += ["--workloads", str(path)]
    return [*args, "--workers", "2", "--out", str(out)]


def _finished(out: Path) -> int:
    return len(list(out.glob("*/*/summary.json")))


def _wait_for(condition, seconds: float = 120.0) -> None:
    end = time.monotonic() + seconds
    while not condition():
        assert time.monotonic() < end, "timed out"
        time.sleep(0.1)


def _group_members(pgid: int) -> list[int]:
    members = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                fields = (entry / "stat").read_text().rsplit(")", 1)[1].split()
            except OSError:
                continue
            if int(fields[2]) == pgid and fields[0] != "Z":
                members.append(int(entry.name))
    return members


def test_resumed_sweep_writes_identical_bytes(workloads, reference_summary, tmp_path):
    sweep(POLICIES, workloads, tmp_path, workers=2, progress=False)
    assert (tmp_path / "summary.csv").read_bytes() == reference_summary  # processes don't matter
    for folder in list(tmp_path.glob("slice-1/*"))[:2]:  # lose two finished runs
        for file in folder.iterdir():
            file.unlink()
        folder.rmdir()
    sweep(POLICIES, workloads, tmp_path, workers=1, progress=False)
    assert (tmp_path / "summary.csv").read_bytes() == reference_summary


@pytest.mark.skipif(not Path("/proc").is_dir(), reason="needs /proc to list processes")
def test_sigkilled_sweep_leaves_no_workers_and_resumes(workloads, reference_summary, tmp_path):
    process = subprocess.Popen(
        _sweep_command(workloads, tmp_path),
        start_new_session=True,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    _wait_for(lambda: _finished(tmp_path) >= 1)
    os.kill(process.pid, signal.SIGKILL)
    process.wait()
    _wait_for(lambda: not _group_members(process.pid), seconds=10)  # the workers end too
    assert _finished(tmp_path) < len(POLICIES) * len(workloads)
    sweep(POLICIES, workloads, tmp_path, workers=2, progress=False)
    assert (tmp_path / "summary.csv").read_bytes() == reference_summary


@pytest.mark.skipif(not Path("/proc").is_dir(), reason="needs /proc to list processes")
def test_ctrl_c_stops_a_sweep_at_once_with_a_partial_summary(workloads, tmp_path):
    process = subprocess.Popen(
        _sweep_command(workloads, tmp_path),
        start_new_session=True,
        # As from a terminal: a test run started in the background (a non-interactive shell's
        # `&`) ignores SIGINT, and its children would inherit that and never see the Ctrl-C.
        preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL),
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )
    _wait_for(lambda: _finished(tmp_path) >= 1)
    started = time.monotonic()
    os.killpg(process.pid, signal.SIGINT)  # as a terminal's Ctrl-C: the whole group
    _, stderr = process.communicate(timeout=30)
    assert time.monotonic() - started < 10
    assert process.returncode == 130, stderr
    assert "interrupted" in stderr and "Traceback" not in stderr
    _wait_for(lambda: not _group_members(process.pid), seconds=10)
    summary = pd.read_csv(tmp_path / "summary.csv")
    assert 1 <= len(summary) <= _finished(tmp_path)
    total = len(POLICIES) * len(workloads)  # the line says how far it got and how to go on
    assert f"{len(summary)} of {total} runs finished" in stderr
    assert "the same command again resumes" in stderr and len(stderr.strip().splitlines()) == 1


def test_a_truncated_run_summary_is_run_again(workloads, reference_summary, tmp_path):
    sweep(POLICIES, workloads, tmp_path, workers=1, progress=False)
    damaged = next(tmp_path.glob("slice-0/*/summary.json"))
    damaged.write_text(damaged.read_text()[:20])
    sweep(POLICIES, workloads, tmp_path, workers=1, progress=False)
    assert (tmp_path / "summary.csv").read_bytes() == reference_summary


def test_a_sweep_on_dask_gives_the_serial_results(workloads, reference_summary, tmp_path):
    """The same grid on a dask.distributed LocalCluster started here: every run's jobs.csv and
    the summary are byte-identical to the serial sweep's."""
    distributed = pytest.importorskip("distributed", reason="dask[distributed] is a dev extra")
    serial = tmp_path / "serial"
    sweep(POLICIES, workloads, serial, workers=1, progress=False)
    with distributed.LocalCluster(
        n_workers=2, threads_per_worker=1, processes=True, dashboard_address=None
    ) as cluster:
        sweep(
            POLICIES,
            workloads,
            tmp_path / "dask",
            scheduler=cluster.scheduler_address,
            progress=False,
        )
    runs = sorted(p.relative_to(serial) for p in serial.glob("*/*/jobs.csv"))
    assert len(runs) == len(POLICIES) * len(workloads)
    for run in runs:
        assert (tmp_path / "dask" / run).read_bytes() == (serial / run).read_bytes(), run
    assert (tmp_path / "dask" / "summary.csv").read_bytes() == reference_summary


def test_results_left_only_in_the_retired_folder_are_restored(tmp_path):
    """A kill between the swap's two renames leaves the earlier results only in
    ``<out>.replaced``: the next command on ``out`` puts them back before anything else, and
    a run through ``staged_folder`` then swaps its own in as usual."""
    from goodput_sim.api import staged_folder, writable_folder
    from goodput_sim.errors import InputError

    out = tmp_path / "out"
    retired = tmp_path / "out.replaced"
    retired.mkdir()
    (retired / "jobs.csv").write_text("earlier\n")
    with pytest.raises(InputError, match="earlier results"):
        writable_folder(out)  # restored first, so refused like any folder of results
    assert (out / "jobs.csv").read_text() == "earlier\n" and not retired.exists()
    with staged_folder(out) as staging:
        (staging / "jobs.csv").write_text("new\n")
    assert (out / "jobs.csv").read_text() == "new\n"
    assert not retired.exists() and not (tmp_path / "out.partial").exists()
