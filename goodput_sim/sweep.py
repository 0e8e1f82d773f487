"""Grids of runs (policies x workloads x loads x clusters x intervals x seeds): local processes
or a Dask cluster, resumable.

Every finished run writes ``<out>/<workload>[-load<X>][-<cluster>][-i<interval>]/
<policy>-seed<N>/`` (jobs.csv, rounds.csv, a manifest that replays it, summary.json; the jobs as
workload.csv when they were drawn for the run) atomically, so an interrupted sweep resumes where
it stopped; ``summary.csv`` collects all runs. Results do not depend on the number of processes:
each run is a pure function of its inputs.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import os
import signal
import threading
import time
from collections.abc import Iterable, Mapping, Sequence
from concurrent.futures import ProcessPoolExecutor, as_completed
from dataclasses import dataclass
from itertools import product
from pathlib import Path
from typing import Any

import pandas as pd

from goodput_sim import jsonio
from goodput_sim.api import (
    as_cluster,
    check_policies,
    default_profiles_path,
    input_hashes,
    progress_bar,
    run,
    staged_folder,
    write_run,
)
from goodput_sim.cluster import ClusterSpec
from goodput_sim.engine import SimConfig
from goodput_sim.errors import InputError
from goodput_sim.metrics import run_summary
from goodput_sim.profiles import load_profiles
from goodput_sim.sources import WorkloadSource
from goodput_sim.units import manifest_units
from goodput_sim.workload import load_workload, write_workload

DEFAULT_CLUSTER = "16x4"
DEFAULT_INTERVAL = 60.0


@dataclass(frozen=True)
class SweepTask:
    """One run of the grid (``params`` as sorted (key, value) pairs)."""

    policy: str
    workload: WorkloadSource
    seed: int
    agent: str | None = None
    params: tuple[tuple[str, Any], ...] = ()
    load: float = 1.0
    cluster: ClusterSpec = ClusterSpec()
    interval: float = DEFAULT_INTERVAL

    def folder(self, out: Path) -> Path:
        name = self.policy + (f"+{self.agent}" if self.agent else "")
        if self.params:
            text = json.dumps([[k, str(v)] for k, v in self.params])
            name += "-p" + hashlib.sha256(text.encode()).hexdigest()[:8]
        group = self.workload.name
        if self.load != 1.0:
            group += f"-load{self.load:g}"
        if str(self.cluster) != DEFAULT_CLUSTER:
            group += f"-{self.cluster}"
        if self.interval != DEFAULT_INTERVAL:
            group += f"-i{self.interval:g}"
        return out / group / f"{name}-seed{self.seed}"


def run_task(task: SweepTask, profiles: str | None, config: SimConfig, out: Path) -> dict:
    """Run one task and write its folder atomically; returns its summary row."""
    params = dict(task.params)
    jobs, source = task.workload.frame(task.load, task.seed)
    config = dataclasses.replace(config, interval=task.interval)
    result = run(task.policy, jobs, profiles, task.cluster, task.seed, config, task.agent, params)
    summary = run_summary(result)
    row = {
        "workload": task.workload.name,
        "load": task.load,
        "cluster": str(task.cluster),
        "interval": task.interval,
        "policy": task.policy,
        "agent": result.agent["name"],
        "params": json.dumps(params, sort_keys=True),
        "seed": task.seed,
        **summary,
        "wall_seconds": result.wall_seconds,
    }
    profiles_path = default_profiles_path(profiles)
    with staged_folder(task.folder(out)) as staging:  # a rerun of a finished task replaces it
        inputs = {"workload": jobs, "profiles": profiles_path}
        hashes = None
        if isinstance(jobs, pd.DataFrame):  # drawn for this run: saved beside the manifest
            write_workload(jobs, staging / "workload.csv")
            hashes = input_hashes({"workload": staging / "workload.csv", "profiles": profiles_path})
            inputs["workload"] = Path("workload.csv")
        write_run(
            result,
            staging,
            inputs,
            task.seed,
            hashes=hashes,
            summary=summary,
            params=params,
            extra={"workload_source": source},
            figure=False,
        )
        (staging / "summary.json").write_text(jsonio.dumps(row) + "\n")
    return row


def sweep(
    policies: Iterable[str],
    workloads: Iterable[str | Path | WorkloadSource],
    out: str | Path,
    seeds: Iterable[int] = (0,),
    profiles: str | None = None,
    cluster: ClusterSpec | str = DEFAULT_CLUSTER,
    config: SimConfig | None = None,
    workers: int = 1,
    scheduler: str | None = None,
    progress: bool = True,
    agent: str | None = None,
    params: Mapping[str, Any] | None = None,
    variants: Iterable[tuple[str | None, Mapping[str, Any]]] | None = None,
    loads: Sequence[float] = (1.0,),
    clusters: Sequence[ClusterSpec | str] | None = None,
    intervals: Sequence[float] | None = None,
) -> pd.DataFrame:
    """Run every (workload, load, cluster, interval, policy, seed) not already in ``out`` (with
    batch ``agent`` and ``params`` for every run, or each (agent, params) of ``variants`` in
    turn); return all summary rows. ``clusters`` defaults to ``[cluster]`` and ``intervals`` to
    the config's."""
    variants = list(variants) if variants is not None else [(agent, params or {})]
    entries = [
        (policy, variant_agent, variant_params)
        for policy in policies
        for variant_agent, variant_params in variants
    ]
    config = config or SimConfig()
    return run_grid(
        entries,
        workloads,
        out,
        seeds=seeds,
        loads=loads,
        clusters=clusters if clusters is not None else [cluster],
        intervals=intervals if intervals is not None else [config.interval],
        profiles=profiles,
        config=config,
        workers=workers,
        scheduler=scheduler,
        progress=progress,
    )


def run_grid(
    entries: Sequence[tuple[str, str | None, Mapping[str, Any]]],
    workloads: Iterable[str | Path | WorkloadSource],
    out: str | Path,
    *,
    seeds: Iterable[int] = (0,),
    loads: Sequence[float] = (1.0,),
    clusters: Sequence[ClusterSpec | str] = (DEFAULT_CLUSTER,),
    intervals: Sequence[float] = (DEFAULT_INTERVAL,),
    profiles: str | None = None,
    config: SimConfig | None = None,
    workers: int = 1,
    scheduler: str | None = None,
    progress: bool = True,
) -> pd.DataFrame:
    """The grid of (policy, agent, params) ``entries`` over every workload, load, cluster,
    interval and seed, in that order: each run not already in ``out`` is done."""
    out, seeds = Path(out), list(seeds)
    config = config or SimConfig()
    for policy, entry_agent, entry_params in entries:
        check_policies([policy], entry_agent, entry_params)
    if not entries:
        raise InputError("--policies", "names no policy")
    keyed = [(p, a, tuple(sorted((str(k), str(v)) for k, v in q.items()))) for p, a, q in entries]
    sources = [w if isinstance(w, WorkloadSource) else WorkloadSource.file(w) for w in workloads]
    if not sources:
        raise InputError("--workloads", "no workload CSV found")
    specs = [as_cluster(c) for c in clusters]
    applications = load_profiles(profiles)
    smallest = min(spec.total_gpus for spec in specs)
    for source in sources:  # every input checked before any run starts
        if source.path is not None:
            load_workload(source.path, applications=applications, max_gpus=smallest)
    tasks = [
        SweepTask(p, w, s, a, pairs, load, spec, float(interval))
        for w, load, spec, interval, (p, a, pairs), s in product(
            sources, loads, specs, intervals, keyed, seeds
        )
    ]
    grid = {
        "policies": [{"policy": p, "agent": a, "params": dict(q)} for p, a, q in keyed],
        "workloads": [
            {"name": w.name, "path": str(w.path) if w.path else None, "generate": dict(w.generate)}
            for w in sources
        ],
        "loads": list(loads),
        "seeds": list(seeds),
        "clusters": [spec.describe() for spec in specs],
        "intervals": list(intervals),
        "config": dataclasses.asdict(config),
        "profiles": str(default_profiles_path(profiles)),
    }
    _write_sweep_record(out, grid)
    rows = {t: row for t in tasks if (row := _finished_row(t.folder(out))) is not None}
    todo = [t for t in tasks if t not in rows]
    bar = progress_bar(progress, len(tasks), "runs", "run")
    bar.update(len(rows))
    try:
        if scheduler:
            _on_dask(scheduler, todo, profiles, config, out, bar, rows, workers)
        elif workers > 1 and len(todo) > 1:
            _in_processes(todo, workers, rows, bar, profiles, config, out)
        else:
            for task in todo:
                rows[task] = run_task(task, profiles, config, out)
                bar.update()
    except KeyboardInterrupt:  # keep what finished: the summary says how far it got
        for task in tasks:  # runs whose folders landed while their results were in flight
            if task not in rows and (row := _finished_row(task.folder(out))) is not None:
                rows[task] = row
        _write_summary([rows[t] for t in tasks if t in rows], out)
        raise
    finally:
        bar.close()
    return _write_summary([rows[t] for t in tasks], out)


ID_COLUMNS = ("workload", "load", "cluster", "interval", "policy", "agent", "params", "seed")


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


def _in_processes(todo, workers, rows, bar, profiles, config, out) -> None:
    """Run tasks in local worker processes that leave SIGINT to this process and end when it
    dies; on an interruption, pending runs are cancelled and the workers stopped at once."""
    pool = ProcessPoolExecutor(
        max_workers=workers, initializer=_worker_setup, initargs=(os.getpid(),)
    )
    try:
        futures = {pool.submit(run_task, t, profiles, config, out): t for t in todo}
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


def _on_dask(scheduler, todo, profiles, config, out, bar, rows, workers) -> None:
    """Run tasks on a Dask cluster: ``local`` starts one on this machine with ``workers``
    processes, anything else is a scheduler address (the output folder must be reachable from
    every worker). Rows are added to ``rows`` as runs finish."""
    try:
        from dask.distributed import Client, LocalCluster
        from dask.distributed import as_completed as dask_completed
    except ImportError:
        raise InputError(
            "--scheduler", "needs dask.distributed: pip install 'goodput-sim[dask]'"
        ) from None
    local = None
    if scheduler == "local":
        local = LocalCluster(
            n_workers=workers, threads_per_worker=1, processes=True, dashboard_address=None
        )
        scheduler = local.scheduler_address
    try:
        with Client(scheduler) as client:
            futures = {
                client.submit(run_task, t, profiles, config, out, pure=False): t for t in todo
            }
            for future in dask_completed(futures):
                rows[futures[future]] = future.result()
                bar.update()
    finally:
        if local is not None:
            local.close()


def _write_sweep_record(out: Path, grid: dict) -> None:
    """``sweep.json``: marks ``out`` as a sweep's folder (so it may be resumed), describes the
    grid last run into it and states the units of ``summary.csv``."""
    out.mkdir(parents=True, exist_ok=True)
    units = {
        "load": "arrival rate relative to the workload's own (1.0 = as given)",
        "cluster": "node groups, NODESxGPUS joined by +",
        "interval": "s between scheduling rounds",
        **manifest_units()["summary"],
    }
    record = {"kind": "sweep", "grid": grid, "units": {"summary.csv": units}}
    (out / "sweep.json").write_text(jsonio.dumps(record) + "\n")
