"""Grids of runs (policies x workloads x seeds): local processes or a Dask cluster, resumable.

Every finished run writes ``<out>/<workload>/<policy>-seed<N>/`` (jobs.csv, summary.json)
atomically, so an interrupted sweep resumes where it stopped; ``summary.csv`` collects all runs.
Results do not depend on the number of processes: each run is a pure function of its inputs.
"""

from __future__ import annotations

import hashlib
import json
import os
import signal
import threading
import time
from collections.abc import Iterable, Mapping
from concurrent.futures import ProcessPoolExecutor, as_completed
from dataclasses import dataclass
from itertools import product
from pathlib import Path
from typing import Any

import pandas as pd

from goodput_sim import jsonio
from goodput_sim.api import as_cluster, check_policies, progress_bar, run, staged_folder
from goodput_sim.cluster import ClusterSpec
from goodput_sim.engine import SimConfig
from goodput_sim.errors import InputError
from goodput_sim.metrics import summarize
from goodput_sim.profiles import load_profiles
from goodput_sim.workload import load_workload


@dataclass(frozen=True)
class SweepTask:
    """One run of the grid (``params`` as sorted (key, value) pairs)."""

    policy: str
    workload: Path
    seed: int
    agent: str | None = None
    params: tuple[tuple[str, str], ...] = ()

    def folder(self, out: Path) -> Path:
        name = self.policy + (f"+{self.agent}" if self.agent else "")
        if self.params:
            text = json.dumps(self.params)
            name += "-p" + hashlib.sha256(text.encode()).hexdigest()[:8]
        return out / self.workload.stem / f"{name}-seed{self.seed}"


def run_task(
    task: SweepTask, profiles: str | None, cluster: ClusterSpec, config: SimConfig, out: Path
) -> dict:
    """Run one task and write its folder atomically; returns its summary row."""
    params = dict(task.params)
    result = run(
        task.policy, task.workload, profiles, cluster, task.seed, config, task.agent, params
    )
    row = {
        "workload": task.workload.stem,
        "policy": task.policy,
        "agent": result.agent["name"],
        "params": json.dumps(params, sort_keys=True),
        "seed": task.seed,
        **summarize(result.jobs, cluster.total_gpus),
        "wall_seconds": result.wall_seconds,
    }
    with staged_folder(task.folder(out)) as staging:  # a rerun of a finished task replaces it
        result.jobs.to_csv(staging / "jobs.csv", index=False, float_format="%.6f")
        (staging / "summary.json").write_text(jsonio.dumps(row) + "\n")
    return row


def sweep(
    policies: Iterable[str],
    workloads: Iterable[str | Path],
    out: str | Path,
    seeds: Iterable[int] = (0,),
    profiles: str | None = None,
    cluster: ClusterSpec | str = "16x4",
    config: SimConfig | None = None,
    workers: int = 1,
    scheduler: str | None = None,
    progress: bool = True,
    agent: str | None = None,
    params: Mapping[str, Any] | None = None,
    variants: Iterable[tuple[str | None, Mapping[str, Any]]] | None = None,
) -> pd.DataFrame:
    """Run every (policy, workload, seed) not already in ``out`` (with batch ``agent`` and
    ``params`` for every run, or each (agent, params) of ``variants`` in turn); return all
    summary rows."""
    out = Path(out)
    spec = as_cluster(cluster)
    config = config or SimConfig()
    variants = list(variants) if variants is not None else [(agent, params or {})]
    for variant_agent, variant_params in variants:
        policies = check_policies(policies, variant_agent, variant_params)
    variant_keys = [(a, tuple(sorted((str(k), str(v)) for k, v in p.items()))) for a, p in variants]
    paths = [Path(w) for w in workloads]
    if not paths:
        raise InputError("--workloads", "no workload CSV found")
    applications = load_profiles(profiles)
    for path in paths:  # every input checked before any run starts
        load_workload(path, applications=applications, max_gpus=spec.total_gpus)
    tasks = [
        SweepTask(p, w, s, a, pairs)
        for w, p, (a, pairs), s in product(paths, policies, variant_keys, seeds)
    ]
    rows = {t: row for t in tasks if (row := _finished_row(t.folder(out))) is not None}
    todo = [t for t in tasks if t not in rows]
    bar = progress_bar(progress, len(tasks), "runs", "run")
    bar.update(len(rows))
    if scheduler:
        rows.update(_on_dask(scheduler, todo, profiles, spec, config, out, bar))
    else:
        try:
            if workers > 1 and len(todo) > 1:
                _in_processes(todo, workers, rows, bar, profiles, spec, config, out)
            else:
                for task in todo:
                    rows[task] = run_task(task, profiles, spec, config, out)
                    bar.update()
        except KeyboardInterrupt:  # keep what finished: the summary says how far it got
            _write_summary([rows[t] for t in tasks if t in rows], out)
            raise
        finally:
            bar.close()
    return _write_summary([rows[t] for t in tasks], out)


ID_COLUMNS = ("workload", "policy", "agent", "params", "seed")


def _finished_row(folder: Path) -> dict | None:
    """The summary row of a finished run, or None if the run must be (re)done: no summary, or
    one that cannot be read back whole (a run killed while the disk was writing it)."""
    path = folder / "summary.json"
    try:
        row = json.loads(path.read_text())
    except (OSError, ValueError):
        return None
    return row if isinstance(row, dict) and "avg_jct" in row else None


def _write_summary(rows: list[dict], out: Path) -> pd.DataFrame:
    """``summary.csv``: one row per finished run, in grid order; columns in one fixed order
    (the run's identity, then the statistics by name) and no wall times, so a resumed sweep
    writes the same bytes as an uninterrupted one."""
    table = pd.DataFrame(rows)
    rest = sorted(c for c in table.columns if c not in ID_COLUMNS and c != "wall_seconds")
    table = table.reindex(columns=[*ID_COLUMNS, *rest])
    out.mkdir(parents=True, exist_ok=True)
    table.to_csv(out / "summary.csv", index=False, float_format="%.6f")
    return table


def _in_processes(todo, workers, rows, bar, profiles, spec, config, out) -> None:
    """Run tasks in local worker processes that leave SIGINT to this process and end when it
    dies; on an interruption, pending runs are cancelled and the workers stopped at once."""
    pool = ProcessPoolExecutor(
        max_workers=workers, initializer=_worker_setup, initargs=(os.getpid(),)
    )
    try:
        futures = {pool.submit(run_task, t, profiles, spec, config, out): t for t in todo}
        for future in as_completed(futures):
            rows[futures[future]] = future.result()
            bar.update()
    except BaseException:
        for process in list(getattr(pool, "_processes", {}).values()):
            process.terminate()
        pool.shutdown(wait=False, cancel_futures=True)
        raise
    pool.shutdown()


def _worker_setup(parent: int) -> None:
    """In each worker: ignore Ctrl-C (the parent decides) and exit as soon as the parent is
    gone (a SIGKILLed sweep must not leave workers running)."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)

    def watch() -> None:
        while os.getppid() == parent:
            time.sleep(0.5)
        os._exit(1)

    threading.Thread(target=watch, daemon=True).start()


def _on_dask(scheduler, todo, profiles, spec, config, out, bar) -> dict:
    """Run tasks on a Dask cluster (``pip install 'goodput-sim[dask]'``); the output folder
    must be reachable from every worker."""
    try:
        from dask.distributed import Client
        from dask.distributed import as_completed as dask_completed
    except ImportError:
        raise InputError(
            "--scheduler", "needs dask.distributed: pip install 'goodput-sim[dask]'"
        ) from None
    rows = {}
    with Client(scheduler) as client:
        futures = {
            client.submit(run_task, t, profiles, spec, config, out, pure=False): t for t in todo
        }
        for future in dask_completed(futures):
            rows[futures[future]] = future.result()
            bar.update()
    return rows
