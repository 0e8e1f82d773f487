"""Grids of runs (policies x workloads x loads x clusters x intervals x engine settings x
seeds): local processes or a Dask cluster, resumable.

Every finished run writes ``<out>/<workload>[-load<X>][-<cluster>][-i<interval>]
[-<setting>=<value>...]/<policy>-seed<N>/`` (jobs.csv, rounds.csv, a manifest that replays it,
summary.json; the jobs as workload.csv when they were drawn for the run) atomically, with the
run's key (``spec.run_key``, a content hash of everything the run reads). A resumed sweep reuses
a folder only when its key is the requested run's, so it picks up where it stopped and redoes
exactly the runs whose inputs changed; ``summary.csv`` collects all runs. Results do not depend
on the number of processes: each run is a pure function of its inputs. A group folder's name
longer than a file name may be keeps its head and a hash of the whole (:func:`bounded_name`).

A grid may also have *variants*: named bundles of a cluster and engine settings that are not a
product of axes (fixed clusters of several sizes beside autoscaled ones). Each variant is one
value of an axis; its cluster and settings replace the grid's own for its runs. Its label takes
the place of what it sets in the folder name (``<workload>[-load<X>]-<label>[-i<interval>]
[-<other setting>=<value>...]``) and fills ``summary.csv``'s ``variant`` column, which exists only
in grids with variants; what it sets flows into each run's cluster and SimConfig, hence its key.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import math
import os
import re
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
    file_hash,
    input_hashes,
    progress_bar,
    run,
    staged_folder,
    write_run,
)
from goodput_sim.errors import InputError, Interrupted
from goodput_sim.inputs.cluster import DEFAULT_GPU_TYPE, ClusterSpec, check_gpu_types
from goodput_sim.inputs.sources import WorkloadSource
from goodput_sim.inputs.workload import check_load, load_workload, write_workload
from goodput_sim.profiles import load_profiles
from goodput_sim.results.metrics import run_summary
from goodput_sim.results.saved import check_seed
from goodput_sim.sim.budget import DEFAULT_MAX_RUNS
from goodput_sim.spec import (
    BY_NAME,
    SETTINGS,
    SimConfig,
    non_default,
    run_key,
    setting,
    with_settings,
)
from goodput_sim.units import manifest_units

DEFAULT_CLUSTER = "16x4"
DEFAULT_INTERVAL = 60.0
LABEL = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,99}$")
"""A variant's label: folder-safe (letters, digits, '.', '_', '-'; not starting with a dot), at
most 100 characters, as an experiment's name."""
MAX_NAME_BYTES = 255
"""The longest file or folder name (Linux's NAME_MAX)."""
_DIGEST = 16  # hex digits of the hash that stands for a shortened name's tail


def bounded_name(name: str, limit: int = MAX_NAME_BYTES, suffix: str = "") -> str:
    """``name + suffix`` as a file or folder name of at most ``limit`` bytes: as it is when it
    fits, else the head of ``name`` that fits, ``~`` and 16 hex digits of the sha256 of the whole
    ``name`` (readable, and two names sharing a head stay apart), then ``suffix``."""
    if len((name + suffix).encode()) <= limit:
        return name + suffix
    room = limit - len(suffix.encode()) - 1 - _DIGEST
    if room < 1:
        raise ValueError(f"no name fits in {limit} bytes with the suffix {suffix!r}")
    head = name.encode()[:room].decode(errors="ignore")
    return f"{head}~{hashlib.sha256(name.encode()).hexdigest()[:_DIGEST]}{suffix}"


@dataclass(frozen=True)
class Variant:
    """One value of a grid's variant axis: a ``label`` (folder-safe), the ``cluster`` its runs
    use instead of the grid's clusters (None: the grid's), and engine ``settings`` (converted
    (name, value) pairs in declaration order) that replace the grid's values of those settings."""

    label: str
    cluster: ClusterSpec | None = None
    settings: tuple[tuple[str, Any], ...] = ()

    @classmethod
    def of(cls, label: str, cluster: ClusterSpec | str | None = None, **settings: Any) -> Variant:
        """A variant from plain values: the label checked, the cluster parsed, every setting
        converted and checked against its declaration (``InputError`` naming the variant)."""
        if not isinstance(label, str) or not LABEL.fullmatch(label):
            shown = label if not isinstance(label, str) or len(label) <= 40 else label[:40] + "..."
            raise InputError(
                "variants",
                f"label {shown!r} must be 1-100 letters, digits, '.', '_' or '-' (starting "
                "with a letter or digit)",
            )
        if "interval" in settings:
            raise InputError(f"variants.{label}", "the interval is swept by intervals")
        for name in settings:
            setting(name)  # an unknown name: an error listing the known ones
        pairs = [(s.name, s.convert(settings[s.name])) for s in SETTINGS if s.name in settings]
        spec = as_cluster(cluster) if cluster is not None else None
        return cls(label, spec, tuple(pairs))

    @property
    def keys(self) -> frozenset[str]:
        """The settings this variant sets, and ``cluster`` when it sets one."""
        return frozenset(name for name, _ in self.settings) | (
            {"cluster"} if self.cluster is not None else set()
        )

    def describe(self) -> dict[str, Any]:
        """The variant for ``sweep.json``."""
        return {
            "label": self.label,
            "cluster": self.cluster.describe() if self.cluster is not None else None,
            "settings": {k: _plain(v) for k, v in self.settings},
        }


@dataclass(frozen=True)
class SweepTask:
    """One run of the grid (``params`` as sorted (key, value) pairs; ``settings`` the engine
    settings given to it that differ from their defaults, which name its folder; ``key`` the
    content hash of the whole run, under which its results are reused)."""

    policy: str
    workload: WorkloadSource
    seed: int
    agent: str | None = None
    params: tuple[tuple[str, Any], ...] = ()
    load: float = 1.0
    cluster: ClusterSpec = ClusterSpec()
    config: SimConfig = SimConfig()
    settings: tuple[tuple[str, Any], ...] = ()
    key: str = ""
    variant: Variant | None = None

    @property
    def interval(self) -> float:
        return self.config.interval

    def folder(self, out: Path) -> Path:
        name = self.policy + (f"+{self.agent}" if self.agent else "")
        if self.params:
            text = json.dumps([[k, str(v)] for k, v in self.params])
            name += "-p" + hashlib.sha256(text.encode()).hexdigest()[:8]
        group = self.workload.name
        if self.load != 1.0:
            group += f"-load{self.load:g}"
        own = self.variant.keys if self.variant is not None else frozenset()
        if self.variant is not None:  # its label stands for what it sets
            group += f"-{self.variant.label}"
        if cluster_label(self.cluster) != DEFAULT_CLUSTER and "cluster" not in own:
            group += f"-{cluster_label(self.cluster)}"
        if self.interval != DEFAULT_INTERVAL:
            group += f"-i{self.interval:g}"
        for setting_name, value in self.settings:
            if setting_name not in own:
                group += f"-{setting_name}={_folder_text(setting_name, value)}"
        return out / bounded_name(group) / f"{name}-seed{self.seed}"


def cluster_label(cluster: ClusterSpec) -> str:
    """``NODESxGPUS`` per node group joined by ``+``, each followed by its GPU type unless it is
    the default one (two clusters of one shape and different types are different runs)."""
    return "+".join(
        f"{g.nodes}x{g.gpus_per_node}"
        + ("" if g.gpu_type == DEFAULT_GPU_TYPE else "-" + _SAFE.sub("_", g.gpu_type))
        for g in cluster.groups
    )


_SAFE = re.compile(r"[^A-Za-z0-9._-]")


def _folder_text(name: str, value: Any) -> str:
    """A setting's value as it appears in a folder name (a file by its stem)."""
    if BY_NAME[name].kind is Path:
        return _SAFE.sub("_", Path(value).stem)
    if isinstance(value, bool):
        return str(value).lower()
    if isinstance(value, int | float):
        return f"{value:g}"
    if isinstance(value, str):
        return _SAFE.sub("_", value)
    return hashlib.sha256(json.dumps(value, default=str).encode()).hexdigest()[:8]


def _settings_text(settings: tuple[tuple[str, Any], ...]) -> str:
    """A run's non-default settings as the JSON of ``summary.csv``'s ``settings`` column."""
    return json.dumps({k: _plain(v) for k, v in settings}, sort_keys=True)


def _plain(value: Any) -> Any:
    """A setting's value as JSON can hold it (an autoscaler's parameters as a mapping)."""
    return dict(value) if isinstance(value, tuple) else value


def run_task(task: SweepTask, profiles: str | None, out: Path) -> dict:
    """Run one task and write its folder atomically; returns its summary row."""
    params = dict(task.params)
    jobs, source = task.workload.frame(task.load, task.seed)
    result = run(
        task.policy, jobs, profiles, task.cluster, task.seed, task.config, task.agent, params
    )
    summary = run_summary(result)
    row = {
        "workload": task.workload.name,
        "load": task.load,
        "cluster": str(task.cluster),
        **({"variant": task.variant.label} if task.variant is not None else {}),
        "interval": task.interval,
        "policy": task.policy,
        "agent": result.agent["name"],
        "params": json.dumps(params, sort_keys=True),
        "seed": task.seed,
        "gpu_types": "+".join(g.gpu_type for g in task.cluster.groups),
        "settings": _settings_text(task.settings),
        "run_key": task.key,
        **summary,
        **({"stopped": result.stopped} if result.stopped else {}),
        "wall_seconds": result.wall_seconds,
    }
    profiles_path = default_profiles_path(profiles)
    with staged_folder(task.folder(out)) as staging:  # a rerun of a finished task replaces it
        inputs = {"workload": jobs, "profiles": profiles_path}
        hashes = None
        if isinstance(jobs, pd.DataFrame):  # drawn for this run: saved beside the manifest
            inputs["workload"] = staging / "workload.csv"
            write_workload(jobs, inputs["workload"])
            hashes = input_hashes(inputs)
        write_run(
            result,
            staging,
            inputs,
            task.seed,
            hashes=hashes,
            summary=summary,
            params=params,
            extra={"workload_source": source, "run_key": task.key},
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
    settings: Mapping[str, Sequence[Any]] | None = None,
    max_runs: int = DEFAULT_MAX_RUNS,
) -> pd.DataFrame:
    """Run every (workload, load, cluster, interval, settings, policy, seed) not already in
    ``out`` (with batch ``agent`` and ``params`` for every run, or each (agent, params) of
    ``variants`` in turn); return all summary rows. ``clusters`` defaults to ``[cluster]`` and
    ``intervals`` to the config's; ``settings`` maps engine settings (``goodput_sim.spec``) to
    the values each takes in turn."""
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
        settings=settings,
        workers=workers,
        scheduler=scheduler,
        progress=progress,
        max_runs=max_runs,
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
    settings: Mapping[str, Sequence[Any]] | None = None,
    workers: int = 1,
    scheduler: str | None = None,
    progress: bool = True,
    variants: Sequence[Variant] | None = None,
    max_runs: int = DEFAULT_MAX_RUNS,
) -> pd.DataFrame:
    """The grid of (policy, agent, params) ``entries`` over every workload, load, cluster,
    interval, combination of ``settings`` values and seed, in that order: each run whose key
    (``spec.run_key``) matches the results in its folder is reused, every other one is done.
    Failure settings given here are seeded with each run's seed, as ``run --seed`` does.
    With ``variants``, each variant (after the load) brings its own cluster and settings in
    place of the grid's (see :class:`Variant`). A grid of more than ``max_runs`` runs is
    refused before any starts."""
    out, seeds = Path(out), [check_seed(seed, "seeds") for seed in seeds]
    for load in loads:
        check_load(load)
    config = config or SimConfig()
    variants = list(variants) if variants else None
    if variants is not None:
        labels = [v.label for v in variants]
        twice = sorted({label for label in labels if labels.count(label) > 1})
        if twice:
            raise InputError("variants", f"label(s) {twice} appear twice")
    for policy, entry_agent, entry_params in entries:
        check_policies([policy], entry_agent, entry_params)
    if not entries:
        raise InputError("--policies", "names no policy")
    keyed = [(p, a, tuple(sorted((str(k), str(v)) for k, v in q.items()))) for p, a, q in entries]
    sources = [w if isinstance(w, WorkloadSource) else WorkloadSource.file(w) for w in workloads]
    if not sources:
        raise InputError("--workloads", "no workload CSV found")
    specs = [as_cluster(c) for c in clusters]
    used = specs  # every cluster some run uses
    if variants is not None:
        own = [v.cluster for v in variants if v.cluster is not None]
        used = [*(specs if len(own) < len(variants) else []), *own]
    applications = load_profiles(profiles)
    smallest = min(spec.total_gpus for spec in used)
    for source in sources:  # every input checked before any run starts
        if source.path is not None:
            jobs = load_workload(source.path, applications=applications, max_gpus=smallest)
            for spec in used:
                check_gpu_types(spec, applications, jobs["application"])
    axes = _setting_axes(settings or {})
    profiles_sha = file_hash(default_profiles_path(profiles))
    if variants is None:
        grid_axes = (sources, loads, specs, intervals, _combinations(axes), keyed, seeds)
        _check_budget(math.prod(len(axis) for axis in grid_axes), max_runs)  # before keying runs
        tasks = _plan(grid_axes, config, profiles_sha)
    else:
        tasks = _plan_variants(
            sources,
            loads,
            variants,
            specs,
            intervals,
            settings or {},
            keyed,
            seeds,
            config,
            profiles_sha,
        )
    _check_budget(len(tasks), max_runs)
    _check_folders(tasks, out)
    check_scheduler(scheduler)
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
        "settings": {k: [_plain(v) for v in values] for k, values in axes.items()},
        "config": dataclasses.asdict(config),
        "profiles": str(default_profiles_path(profiles)),
    }
    if variants is not None:
        grid["variants"] = [v.describe() for v in variants]
    _write_sweep_record(out, grid)
    rows = {t: row for t in tasks if (row := _finished_row(t, out)) is not None}
    todo = [t for t in tasks if t not in rows]
    bar = progress_bar(progress, len(tasks), "runs", "run")
    bar.update(len(rows))
    try:
        if scheduler:
            _on_dask(scheduler, todo, profiles, out, bar, rows, workers)
        elif workers > 1 and len(todo) > 1:
            _in_processes(todo, workers, rows, bar, profiles, out)
        else:
            for task in todo:
                rows[task] = run_task(task, profiles, out)
                bar.update()
    except KeyboardInterrupt:  # keep what finished: the summary says how far it got
        for task in tasks:  # runs whose folders landed while their results were in flight
            if task not in rows and (row := _finished_row(task, out)) is not None:
                rows[task] = row
        _write_summary([rows[t] for t in tasks if t in rows], out)
        left = len(tasks) - len(rows)
        raise Interrupted(
            f"{len(rows)} of {len(tasks)} runs finished and are kept in {out}; the same "
            f"command again resumes the other {left}"
        ) from None
    finally:
        bar.close()
    return _write_summary([rows[t] for t in tasks], out)


def _setting_axes(settings: Mapping[str, Sequence[Any]]) -> dict[str, list[Any]]:
    """Each swept engine setting's values, converted and checked, in declaration order (the
    interval has an axis of its own)."""
    if "interval" in settings:
        raise InputError("settings", "the interval is swept by intervals, not settings")
    for name in settings:
        setting(name)
    axes = {}
    for s in SETTINGS:
        if s.name in settings:
            values = list(settings[s.name])
            if not values:
                raise InputError("settings", f"{s.name} is an empty axis: give at least one value")
            axes[s.name] = [s.convert(v) for v in values]
    return axes


def _combinations(axes: dict[str, list[Any]]) -> list[dict[str, Any]]:
    """Every combination of the settings' values (one empty one when nothing is swept)."""
    return [dict(zip(axes, values, strict=True)) for values in product(*axes.values())]


def _plan_variants(
    sources: list[WorkloadSource],
    loads: Sequence[float],
    variants: list[Variant],
    specs: list[ClusterSpec],
    intervals: Sequence[float],
    settings: Mapping[str, Sequence[Any]],
    keyed: list[tuple],
    seeds: list[int],
    config: SimConfig,
    profiles_sha: str,
) -> list[SweepTask]:
    """The tasks of a grid with variants: for each workload and load, each variant with its own
    clusters and settings axes (the grid's, with what the variant sets in their place). Two
    variants that would make the same run (equal keys) are refused: they would only repeat it
    under two labels."""
    contents: dict[tuple, tuple] = {}
    tasks: list[SweepTask] = []
    owner: dict[str, str] = {}
    for w, load in product(sources, loads):
        for variant in variants:
            given = {**settings, **{k: [v] for k, v in variant.settings}}
            combos = _combinations(_setting_axes(given))
            clusters = [variant.cluster] if variant.cluster is not None else specs
            axes = ([w], [load], clusters, intervals, combos, keyed, seeds)
            for task in _plan(axes, config, profiles_sha, contents):
                task = dataclasses.replace(task, variant=variant)
                first = owner.setdefault(task.key, variant.label)
                if first != variant.label:
                    raise InputError(
                        "variants",
                        f"{first!r} and {variant.label!r} make the same run (same cluster "
                        "and settings); give each variant different settings",
                    )
                tasks.append(task)
    return tasks


def _check_budget(runs: int, max_runs: int) -> None:
    """Refuse a grid of more than ``max_runs`` runs."""
    if runs > max_runs:
        raise InputError(
            "--max-runs",
            f"the grid has {runs} runs, more than the budget of {max_runs}; raise "
            "--max-runs (or max_runs=) to run it",
        )


def _plan(
    axes: tuple, config: SimConfig, profiles_sha: str, contents: dict[tuple, tuple] | None = None
) -> list[SweepTask]:
    """The grid's tasks in order, each with its engine settings and its key; every setting is
    built (and checked against its cluster) before any run starts, and so is the size of every
    generated job. ``contents`` caches each (workload, load, seed)'s content (and largest
    generated job) across calls."""
    contents = {} if contents is None else contents
    tasks = []
    for w, load, spec, interval, combo, (p, a, pairs), s in product(*axes):
        base = dataclasses.replace(config, interval=float(interval))
        engine = with_settings(base, combo, seed=s, nodes=spec.nodes)
        pool = as_cluster(spec, engine)  # autoscaling needs a cluster it can grow
        if (w, load, s) not in contents:
            contents[w, load, s] = _workload_content(w, load, s)
        content, largest = contents[w, load, s]
        if largest is not None and largest > pool.max_job_gpus:
            raise InputError(
                f"workload {w.name}",
                f"seed {s} (load {load:g}) draws a job of {largest} GPUs, more than the "
                f"{pool.max_job_gpus} of cluster {cluster_label(pool)}: no run could place it",
            )
        key = run_key(
            policy=p,
            agent=a,
            params=dict(pairs),
            workload=content,
            profiles=profiles_sha,
            cluster=spec,
            config=engine,
            seed=s,
        )
        given = tuple(non_default(combo).items())
        tasks.append(SweepTask(p, w, s, a, pairs, load, spec, engine, given, key))
    return tasks


def _workload_content(
    source: WorkloadSource, load: float, seed: int
) -> tuple[dict[str, Any], int | None]:
    """What a run's jobs are made of, by content: a file's hash and the load it is resampled
    to (the seed is part of every key), or the hash of the jobs drawn from the generator; and
    the most GPUs a generated job asks for (None for a file, checked when it is read)."""
    if source.path is not None:
        return {"file_sha256": file_hash(source.path), "load": load}, None
    jobs, _ = source.frame(load, seed)
    text = jobs.to_csv(index=False) if isinstance(jobs, pd.DataFrame) else Path(jobs).read_text()
    largest = int(jobs["num_replicas"].max()) if isinstance(jobs, pd.DataFrame) else None
    content = {"generated_sha256": hashlib.sha256(text.encode()).hexdigest(), "load": load}
    return content, largest


MAX_PATH_BYTES = 4096
"""The longest path a system call takes (Linux's PATH_MAX)."""


def _check_folders(tasks: list[SweepTask], out: Path) -> None:
    """Refuse a grid in which two different runs would write one folder, or a run folder
    whose path (with the ``.replaced`` a rerun gives it for a moment) is too long to write."""
    seen: dict[Path, str] = {}
    for task in tasks:
        folder = task.folder(out)
        longest = len(str(folder).encode()) + len(".replaced")
        if longest >= MAX_PATH_BYTES:
            raise InputError(
                "--out",
                f"its run folders would have paths of {longest} bytes, more than the "
                f"{MAX_PATH_BYTES - 1} a path may have; give a shorter --out",
            )
        if seen.setdefault(folder, task.key) != task.key:
            raise InputError(
                "--out",
                f"two different runs of the grid would share the folder {folder.relative_to(out)}"
                "; give their inputs (workloads, failure traces) different names",
            )


ID_COLUMNS = ("workload", "load", "cluster", "interval", "policy", "agent", "params", "seed")
ID_COLUMNS += ("gpu_types", "settings", "run_key")


def _finished_row(task: SweepTask, out: Path) -> dict | None:
    """The summary row of a finished run, or None if the run must be (re)done: no summary, one
    that cannot be read back whole (a run killed while the disk was writing it), or one of a
    different run (its key differs: a setting, profile, workload or GPU type changed)."""
    path = task.folder(out) / "summary.json"
    try:
        row = json.loads(path.read_text())
    except (OSError, ValueError):
        return None
    if not isinstance(row, dict) or "avg_jct" not in row or row.get("stopped"):
        return None  # unreadable, or stopped by a guard: redone
    return row if row.get("run_key") == task.key else None


TABLE_CONDITIONS = ("load", "workload", "variant", "cluster", "gpu_types", "interval", "settings")
"""What tells a sweep's conditions apart in its table (each shown where it takes more than one
value; the workload always): two clusters of one shape and different GPU types are two rows."""


def sweep_table(table: pd.DataFrame) -> pd.DataFrame:
    """Average JCT in hours, a row per condition (:data:`TABLE_CONDITIONS`) and a column per
    policy (with its agent and parameters where one policy runs with several); the mean over
    seeds, nothing else pooled."""
    frame = table.copy()
    index = [c for c in TABLE_CONDITIONS if c in frame and (c == "workload" or _varies(frame[c]))]
    for c in index:
        if frame[c].dtype == object:  # a blank cell is a value too, not a row to drop
            frame[c] = frame[c].fillna("-").astype(str)
    frame["policy"] = _policy_labels(frame)
    return frame.pivot_table(index=index, columns="policy", values="avg_jct") / 3600


def _varies(column: pd.Series) -> bool:
    return column.astype(str).nunique() > 1


def _policy_labels(frame: pd.DataFrame) -> list[str]:
    """Each row's policy, with ``agent=...`` and ``params=...`` where that policy's runs differ
    in them."""
    labels = frame["policy"].astype(str).tolist()
    for name in ("agent", "params"):
        if name not in frame:
            continue
        values = frame[name].astype(str)
        differing = {p for p, part in values.groupby(frame["policy"]) if part.nunique() > 1}
        labels = [
            f"{label} {name}={value}" if policy in differing else label
            for label, policy, value in zip(labels, frame["policy"], values, strict=True)
        ]
    return labels


def _write_summary(rows: list[dict], out: Path) -> pd.DataFrame:
    """``summary.csv``: one row per finished run, in grid order; columns in one fixed order
    (the run's identity, then the statistics by name) and no wall times, so a resumed sweep
    writes the same bytes as an uninterrupted one. A grid with variants has a ``variant``
    column after ``cluster``; other grids have none."""
    table = pd.DataFrame(rows)
    ids = ID_COLUMNS
    if "variant" in table.columns:
        at = ids.index("cluster") + 1
        ids = (*ids[:at], "variant", *ids[at:])
    rest = sorted(c for c in table.columns if c not in ids and c != "wall_seconds")
    table = table.reindex(columns=[*ids, *rest])
    out.mkdir(parents=True, exist_ok=True)
    table.to_csv(out / "summary.csv", index=False, float_format="%.6f")
    return table


def _in_processes(todo, workers, rows, bar, profiles, out) -> None:
    """Run tasks in local worker processes that leave SIGINT to this process and end when it
    dies; on an interruption, pending runs are cancelled and the workers stopped at once."""
    from goodput_sim.kernel_cache import warm_for

    warm_for(t.policy for t in todo)  # compiled once here, not in each worker
    pool = ProcessPoolExecutor(
        max_workers=workers, initializer=_worker_setup, initargs=(os.getpid(),)
    )
    try:
        futures = {pool.submit(run_task, t, profiles, out): t for t in todo}
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


_ADDRESS = re.compile(
    r"(?:(?P<protocol>[a-z]+)://)?(?P<host>\[[0-9a-fA-F:.]+\]|[\w.-]+):(?P<port>\d+)"
)


def check_scheduler(scheduler: str | None, timeout: float = 10.0) -> None:
    """Refuse, before anything is written, a ``--scheduler`` that is neither ``local`` nor a
    ``[protocol://]host:port`` address, or at which no Dask scheduler answers."""
    if scheduler is None or scheduler == "local":
        return
    address = _ADDRESS.fullmatch(scheduler)
    if address is None or not 0 < int(address["port"]) < 65536:
        raise InputError(
            "--scheduler", f"expected 'local' or an address [tcp://]HOST:PORT, got {scheduler!r}"
        )
    Client = _dask()[0]  # noqa: N806 - a class
    try:
        Client(scheduler, timeout=timeout).close()
    except Exception as error:  # noqa: BLE001 - whatever the far end did, it is not a scheduler
        raise InputError(
            "--scheduler", f"no Dask scheduler answers at {scheduler}: {type(error).__name__}"
        ) from None


def _dask() -> tuple:
    """dask.distributed's Client, LocalCluster and as_completed, or a clear error."""
    try:
        from dask.distributed import Client, LocalCluster, as_completed
    except ImportError:
        raise InputError(
            "--scheduler", "needs dask.distributed: pip install 'goodput-sim[dask]'"
        ) from None
    return Client, LocalCluster, as_completed


def _on_dask(scheduler, todo, profiles, out, bar, rows, workers) -> None:
    """Run tasks on a Dask cluster: ``local`` starts one on this machine with ``workers``
    processes, anything else is a scheduler address (the output folder must be reachable from
    every worker). Rows are added to ``rows`` as runs finish."""
    Client, LocalCluster, dask_completed = _dask()  # noqa: N806 - classes
    local = None
    if scheduler == "local":
        local = LocalCluster(
            n_workers=workers, threads_per_worker=1, processes=True, dashboard_address=None
        )
        scheduler = local.scheduler_address
    try:
        with Client(scheduler) as client:
            futures = {client.submit(run_task, t, profiles, out, pure=False): t for t in todo}
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
