"""Statistics from saved results, with uncertainty: ``goodput-sim report`` and ``plot``.

A results folder is a sweep (``summary.csv`` with one row per run, any number of workloads,
loads and seeds), a comparison (one run folder per policy on one workload) or one run. Per load
level, each policy's mean average JCT carries a 95% percentile-bootstrap interval: across the
(workload, seed, cluster, interval) runs of a sweep, or across the jobs of a comparison. The
claim check pairs goodput with each baseline on the same runs (or jobs) and bootstraps the
reduction ``1 - mean(goodput) / mean(baseline)`` beside the Pollux paper's 37-50%. Baselines are
the policies that are not goodput or one of its own variants: the caller passes the function
that picks them (``api.baselines``), so that reading results needs no policy class.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np
import pandas as pd

from goodput_sim.errors import InputError
from goodput_sim.inputs.cluster import ClusterSpec, cluster_from_record
from goodput_sim.results.metrics import PAPER_CLAIM, REFERENCE_POLICY
from goodput_sim.results.saved import (
    JOB_COLUMNS,
    ROUND_COLUMNS,
    SWEEP_COLUMNS,
    SWEEP_OPTIONAL,
    read_manifest,
    read_table,
)
from goodput_sim.results.stats import bootstrap_mean_ci, content_rng, reduction_ci
from goodput_sim.spec import config_from_record, values_of

if TYPE_CHECKING:
    from goodput_sim.spec import SimConfig

Baselines = Callable[[Iterable[str]], list[str]]
"""Which of the given policy names the claim check sets goodput against (``api.baselines``)."""

UNIT_COLUMNS = ("workload", "seed", "cluster", "interval", "gpu_types", "settings")
"""What makes two runs of a sweep the same experiment for different policies."""


@dataclass
class Results:
    """Saved results, read back: per-run rows, and for comparisons each policy's tables."""

    folder: Path
    kind: str  # "sweep" or "comparison"
    runs: pd.DataFrame  # one row per run: label, load, the unit columns and summary statistics
    jobs: dict[str, pd.DataFrame] = field(default_factory=dict)  # comparison: label -> jobs.csv
    rounds: dict[str, pd.DataFrame] = field(default_factory=dict)
    manifests: dict[str, dict] = field(default_factory=dict)
    clusters: dict[str, ClusterSpec] = field(default_factory=dict)  # each run's, checked

    @property
    def labels(self) -> list[str]:
        return list(dict.fromkeys(self.runs["label"]))

    def caption(self, policies: bool = True) -> str:
        """Workloads, loads, cluster(s) and (unless ``policies`` is false, for a figure of one
        policy) the policies, for figure titles."""
        if self.kind == "comparison":
            from goodput_sim.results.plots import caption_of

            return caption_of(self.manifests, policies)
        workloads = sorted(set(self.runs["workload"]))
        names = workloads if len(workloads) <= 3 else [f"{len(workloads)} workloads"]
        seeds = self.runs["seed"].nunique()
        loads = "/".join(f"{x:g}" for x in sorted(set(self.runs["load"])))
        shapes = self.runs["cluster"].astype(str)
        if "gpu_types" in self.runs and self.runs["gpu_types"].nunique() > 1:
            shapes = shapes + " " + self.runs["gpu_types"].astype(str)  # one shape, two types
        clusters = "/".join(sorted(set(shapes)))
        return (
            f"{', '.join(names)} x {seeds} seed(s), load {loads}, {clusters} GPUs, "
            f"{', '.join(self.labels)}"
        )


def load_results(folder: str | Path) -> Results:
    """Read a sweep, comparison or run folder (one-line error if it is none of them)."""
    folder = Path(folder)
    summary = folder / "summary.csv"
    if (folder / "sweep.json").is_file() or (
        summary.is_file() and not any(folder.glob("*/manifest.json"))
    ):
        return _sweep(folder)
    return _comparison(folder)


def _sweep(folder: Path) -> Results:
    runs = read_table(folder / "summary.csv", SWEEP_COLUMNS, "sweep summary", SWEEP_OPTIONAL)
    if runs.empty:
        raise InputError(folder / "summary.csv", "holds no finished run yet")
    for column, default in (("load", 1.0), ("cluster", "16x4"), ("interval", 60.0)):
        if column not in runs:
            runs[column] = default
    _label_runs(runs, _sweep_conditions(runs))
    return Results(folder, "sweep", runs)


CONDITION_COLUMNS = ("variant", "cluster", "gpu_types", "interval")
"""Columns of a sweep's summary that tell its conditions apart (with each engine setting):
two clusters of one shape and different GPU types are different conditions."""


def _sweep_conditions(runs: pd.DataFrame) -> pd.DataFrame:
    """What makes a sweep's cell besides its policy and load: the variant, cluster and its GPU
    types, interval and each engine setting (from the ``settings`` column's JSON). Workloads
    and seeds are the replicates pooled within a cell."""
    columns = {c: runs[c].astype(str) for c in CONDITION_COLUMNS if c in runs}
    settings = [_settings_of(text) for text in runs.get("settings", pd.Series("{}", runs.index))]
    for name in sorted({k for given in settings for k in given}):
        columns[name] = pd.Series([given.get(name, "default") for given in settings], runs.index)
    return pd.DataFrame(columns, index=runs.index)


def _settings_of(text: object) -> dict[str, str]:
    """A ``settings`` or ``params`` cell (a JSON object) as name -> text."""
    try:
        given = json.loads(str(text)) if isinstance(text, str) and text else {}
    except ValueError:
        given = {"settings": str(text)}
    return {k: _text(v) for k, v in given.items()} if isinstance(given, dict) else {}


def _text(value: object) -> str:
    """A condition's value as a label shows it."""
    return f"{value:g}" if isinstance(value, float) else str(value)


def _label_runs(runs: pd.DataFrame, conditions: pd.DataFrame) -> None:
    """Give every run its ``label`` and ``condition``. The label is the policy name, then
    ``name=value`` for each agent or parameter that differs between that policy's runs and
    for each condition that differs between all the runs; ``condition`` (JSON) is what runs
    must share to be paired in a claim check."""
    variants = pd.DataFrame(
        [
            {"agent": str(agent), **_settings_of(params)}
            for agent, params in zip(
                runs.get("agent", pd.Series("", runs.index)),
                runs.get("params", pd.Series("{}", runs.index)).fillna("{}"),
                strict=True,
            )
        ],
        index=runs.index,
    ).fillna("default")
    parts = pd.Series([[] for _ in runs.index], index=runs.index)
    for _, rows in variants.groupby(runs["policy"], sort=False):
        for name in [c for c in rows if rows[c].nunique() > 1]:
            for k in rows.index:
                parts[k] = [*parts[k], f"{name}={rows.at[k, name]}"]
    differing = [c for c in conditions if conditions[c].nunique() > 1]
    stopped = runs["stopped"].fillna("").astype(str) if "stopped" in runs else None
    runs["label"] = [
        " ".join(
            [
                policy,
                *parts[k],
                *(f"{c}={conditions.at[k, c]}" for c in differing),
                *(["(stopped early)"] if stopped is not None and stopped[k] else []),
            ]
        )
        for k, policy in runs["policy"].items()
    ]
    runs["condition"] = [json.dumps(dict(row), sort_keys=True) for _, row in conditions.iterrows()]


def unlike(a: str, b: str) -> list[str]:
    """The conditions in which two runs' ``condition`` JSONs differ."""
    first, second = json.loads(a), json.loads(b)
    return sorted(k for k in first.keys() | second.keys() if first.get(k) != second.get(k))


def _comparison(folder: Path) -> Results:
    """A compare folder (one run folder per policy) or a single run folder."""
    if (folder / "manifest.json").is_file():
        folders = [folder]
    else:
        folders = sorted(p.parent for p in folder.glob("*/manifest.json"))
        order = _comparison_order(folder / "summary.csv")
        folders.sort(key=lambda f: order.index(f.name) if f.name in order else len(order))
    if not folders:
        raise InputError(folder, "holds no results (no summary.csv or manifest.json in it)")
    results = Results(folder, "comparison", pd.DataFrame())
    rows, conditions, tables = [], [], []
    for run in folders:
        manifest, jobs, rounds = _run_tables(run)
        policy, summary = manifest["policy"]["name"], manifest["summary"]
        settings = values_of(_recorded_config(run / "manifest.json", manifest["config"]))
        cluster = cluster_from_record(manifest["cluster"], run / "manifest.json")
        tables.append((manifest, jobs, rounds, cluster))
        source = manifest.get("workload_source") or {}
        unit = {
            "workload": Path(str(manifest.get("inputs", {}).get("workload"))).stem,
            "load": float(source.get("load", 1.0)) if isinstance(source, dict) else 1.0,
            "seed": manifest.get("seed", 0),
            "cluster": str(cluster),
            "gpu_types": "+".join(g.gpu_type for g in cluster.groups),
        }
        conditions.append({**unit, **settings})
        rows.append(
            {
                "policy": policy,
                "agent": (manifest.get("agent") or {}).get("name", ""),
                "params": json.dumps(manifest.get("params") or {}, sort_keys=True),
                **unit,
                "interval": settings["interval"],
                "stopped": manifest.get("stopped") or "",
                **{k: (np.nan if v is None else v) for k, v in summary.items()},
            }
        )
    runs = pd.DataFrame(rows)
    _label_runs(runs, pd.DataFrame([{k: _text(v) for k, v in c.items()} for c in conditions]))
    taken = runs["label"].duplicated(keep=False)  # the same run twice: name it by its folder
    runs.loc[taken, "label"] += [f" [{f.name}]" for f, t in zip(folders, taken, strict=True) if t]
    for label, (manifest, jobs, rounds, cluster) in zip(runs["label"], tables, strict=True):
        results.manifests[label] = manifest
        results.clusters[label] = cluster
        results.jobs[label] = jobs
        if rounds is not None:
            results.rounds[label] = rounds
    results.runs = runs
    return results


def _comparison_order(path: Path) -> list[str]:
    """The policies' order in a comparison's ``summary.csv`` (its first column), if readable."""
    try:
        return list(pd.read_csv(path, dtype=str).iloc[:, 0]) if path.is_file() else []
    except (ValueError, IndexError, UnicodeDecodeError, pd.errors.ParserError):
        return []  # only the order of rows: each run's own files are what count


def _run_tables(run: Path) -> tuple[dict, pd.DataFrame, pd.DataFrame | None]:
    """A run folder's manifest, jobs and rounds (when present), each checked; a jobs table
    shorter than the manifest's job count is refused as cut short."""
    manifest = read_manifest(run / "manifest.json")
    jobs = read_table(run / "jobs.csv", JOB_COLUMNS, "jobs table")
    expected = manifest["summary"]["jobs"]
    if len(jobs) != expected:
        raise InputError(
            run / "jobs.csv", f"holds {len(jobs)} jobs, its manifest says {expected}: cut short?"
        )
    unfinished_jct = jobs["finished"] & jobs["jct"].isna()
    if unfinished_jct.any():
        row = int(unfinished_jct.to_numpy().argmax()) + 1
        raise InputError(run / "jobs.csv", "a finished job without a JCT", f"column jct, row {row}")
    rounds = run / "rounds.csv"
    rounds = read_table(rounds, ROUND_COLUMNS, "rounds table") if rounds.exists() else None
    return manifest, jobs, rounds


def _recorded_config(path: Path, record: dict) -> SimConfig:
    try:
        return config_from_record(record)
    except InputError as error:
        raise InputError(path, error.problem, error.source) from None


def policy_table(results: Results, seed: int = 0) -> pd.DataFrame:
    """Per load and policy: runs, mean average JCT with its 95% interval, mean p95 JCT, makespan
    and GPU utilisation, unfinished jobs (seconds; JCTs over finished jobs)."""
    rows = []
    for (load, label), part in results.runs.groupby(["load", "label"], sort=False):
        if results.kind == "comparison":
            jobs = results.jobs[label]
            values = jobs.loc[jobs["finished"].astype(bool), "jct"].to_numpy(dtype=float)
        else:
            values = part["avg_jct"].to_numpy(dtype=float)
        values = values[np.isfinite(values)]
        low, high = bootstrap_mean_ci(values, content_rng(seed, values))
        if len(values) < MIN_SAMPLES:  # a bootstrap of so few values is only the values
            low = high = float("nan")
        rows.append(
            {
                "load": float(load),
                "policy": label,
                "runs": len(part),
                "n": len(values),
                "avg_jct_s": float(part["avg_jct"].mean()),
                "ci_low_s": low,
                "ci_high_s": high,
                "p95_jct_s": float(part["p95_jct"].mean()),
                "makespan_s": float(part["makespan"].mean()),
                "gpu_utilization": float(part["gpu_utilization"].mean()),
                "unfinished": int(part["unfinished"].sum()),
                **{key: _mean_of(part, key) for key in FAIRNESS_KEYS},
            }
        )
    table = pd.DataFrame(rows)
    table["order"] = table["policy"].map({name: k for k, name in enumerate(results.labels)})
    return table.sort_values(["load", "order"]).drop(columns="order").reset_index(drop=True)


MIN_SAMPLES = 5  # fewer values (runs, jobs or pairs) than this get no interval


def interval_text(low: float, high: float, n: int, number: str) -> str:
    """``[low, high] n=N``, or why there is no interval (fewer than MIN_SAMPLES values)."""
    if n < MIN_SAMPLES:
        return f"n={n}: too few for an interval"
    return f"[{number.format(low)}, {number.format(high)}] n={n}"


FAIRNESS_KEYS = ("ftf_rho_max", "ftf_rho_median", "ftf_unfair_fraction")
"""Finish-time fairness of each run's summary (:mod:`goodput_sim.results.fairness`)."""


def _mean_of(part: pd.DataFrame, key: str) -> float:
    """Mean of a summary column over runs; NaN for results written before it existed."""
    return float(part[key].mean()) if key in part else float("nan")


def claim_table(results: Results, baselines: Baselines, seed: int = 0) -> pd.DataFrame:
    """Per load: goodput's average-JCT reduction against each baseline, with a paired 95%
    bootstrap interval, and where it falls against the paper's 37-50%. Runs that differ in
    anything but the policy (seed, settings, cluster...) are never paired: each goodput variant
    is set against the baselines run like it, or, when there is none, a row per baseline says
    what differs. Empty when goodput or every baseline is missing (``claim_note`` says
    which). ``baselines`` picks the baselines among policy names (``api.baselines``)."""
    runs = results.runs
    if REFERENCE_POLICY not in set(runs["policy"]):
        return pd.DataFrame()
    others = [n for n in baselines(set(runs["policy"])) if n in set(runs["policy"])]
    rows = []
    for load, part in runs.groupby("load", sort=True):
        labels = [x for x in results.labels if x in set(part["label"])]
        condition = part.groupby("label")["condition"].first()
        policy = part.groupby("label")["policy"].first()
        for mine in [x for x in labels if policy[x] == REFERENCE_POLICY]:
            theirs = [x for x in labels if policy[x] in others]
            like = [x for x in theirs if not unlike(condition[mine], condition[x])]
            for label in like or theirs:  # no like baseline: each says what differs
                row = {"load": float(load), "policy": mine, "baseline": label}
                differ = unlike(condition[mine], condition[label])
                if differ:
                    rows.append({**row, "pairs": 0, "verdict": f"not paired: {_differ(differ)}"})
                    continue
                if "(stopped early)" in f"{mine} {label}":
                    verdict = "not checked: a run stopped early (partial results)"
                    rows.append({**row, "pairs": 0, "verdict": verdict})
                    continue
                ours, theirs = part[part["label"] == mine], part[part["label"] == label]
                if results.kind == "comparison":
                    a, b = _paired_jobs(results.jobs[mine], results.jobs[label])
                else:
                    keys = [c for c in UNIT_COLUMNS if c in part]
                    paired = ours.merge(theirs, on=keys, suffixes=("_ours", "_theirs"))
                    a, b = paired["avg_jct_ours"], paired["avg_jct_theirs"]
                reduction, low, high = reduction_ci(a, b, content_rng(seed, a, b))
                pairs = int(np.isfinite(np.asarray(a, float) + np.asarray(b, float)).sum())
                if pairs < MIN_SAMPLES:
                    low = high = float("nan")
                rows.append(
                    {
                        **row,
                        "pairs": pairs,
                        "reduction": reduction,
                        "ci_low": low,
                        "ci_high": high,
                        "verdict": _verdict(reduction, low, high),
                    }
                )
    return pd.DataFrame(rows, columns=CLAIM_COLUMNS)


CLAIM_COLUMNS = ("load", "policy", "baseline", "pairs", "reduction", "ci_low", "ci_high", "verdict")


def _differ(names: list[str]) -> str:
    """``the runs differ in seed, horizon`` (at most four names)."""
    shown = ", ".join(names[:4]) + (f" and {len(names) - 4} more" if len(names) > 4 else "")
    return f"the runs differ in {shown}"


def _paired_jobs(ours: pd.DataFrame, theirs: pd.DataFrame) -> tuple[np.ndarray, np.ndarray]:
    """JCTs of the jobs both policies finished, paired by job name."""
    both = ours.merge(theirs, on="name", suffixes=("_ours", "_theirs"))
    keep = both["finished_ours"].astype(bool) & both["finished_theirs"].astype(bool)
    return both.loc[keep, "jct_ours"].to_numpy(float), both.loc[keep, "jct_theirs"].to_numpy(float)


def _verdict(reduction: float, low: float, high: float) -> str:
    """Where the reduction and its interval lie against the paper's range."""
    paper_low, paper_high = PAPER_CLAIM
    if not np.isfinite(reduction):
        return "no reduction to check (no pairs, or a zero or missing average JCT)"
    if np.isfinite(low) and (high < paper_low or low > paper_high):
        return "outside the paper's range"
    if paper_low <= reduction <= paper_high:
        return "within the paper's range"
    return ("below" if reduction < paper_low else "above") + " (interval overlaps the range)"


def claim_note(results: Results, baselines: Baselines) -> str:
    """Why there is no claim check, or an empty string when there is one (``baselines`` as for
    :func:`claim_table`)."""
    if REFERENCE_POLICY not in set(results.runs["policy"]):
        return "claim check: needs the goodput policy in the results"
    if not baselines(set(results.runs["policy"])):
        return "claim check: no baseline in the results to set goodput against"
    return ""


def statistic_text(value: float, spec: str) -> str:
    """A statistic formatted by ``spec``; one that is not a number (no finished job to measure,
    or an older run without fairness statistics) as ``-``."""
    return "-" if value != value else format(value, spec)


def report_text(results: Results, baselines: Baselines) -> str:
    """The report for a terminal: the policy table per load, then the claim check
    (``baselines`` as for :func:`claim_table`)."""
    lines = [f"{results.kind} {results.folder}: {results.caption()}", ""]
    table = policy_table(results)
    over = "runs" if results.kind == "sweep" else "jobs"
    wide = max([14, *map(len, results.labels)])
    lines.append(
        f"{'load':>5} {'policy':<{wide}} {'runs':>4} "
        f"{'avg JCT (h) [95% CI over ' + over + ']':>34} "
        f"{'p95 (h)':>8} {'makespan (h)':>12} {'GPU util':>8} {'unfinished':>10} "
        f"{'worst rho':>9} {'rho>1':>6}"
    )
    for row in table.itertuples():
        ci = interval_text(row.ci_low_s / 3600, row.ci_high_s / 3600, row.n, "{:.2f}")
        lines.append(
            f"{row.load:>5g} {row.policy:<{wide}} {row.runs:>4} "
            f"{statistic_text(row.avg_jct_s / 3600, '.2f'):>15} {ci:>18} "
            f"{statistic_text(row.p95_jct_s / 3600, '.2f'):>8} "
            f"{statistic_text(row.makespan_s / 3600, '.2f'):>12} "
            f"{statistic_text(row.gpu_utilization, '.1%'):>8} {row.unfinished:>10} "
            f"{statistic_text(row.ftf_rho_max, '.2f'):>9} "
            f"{statistic_text(row.ftf_unfair_fraction, '.0%'):>6}"
        )
    lines.append(
        "rho: finish-time fairness, JCT over the JCT alone on an equal share of the cluster "
        "(worst job; share of jobs above 1)"
    )
    lines.append("")
    note = claim_note(results, baselines)
    if note:
        return "\n".join([*lines, note])
    low, high = PAPER_CLAIM
    lines.append(
        f"claim check: goodput's average-JCT reduction vs each baseline, 95% paired bootstrap CI "
        f"(Pollux paper: {low:.0%}-{high:.0%})"
    )
    claim = claim_table(results, baselines)
    several = claim["policy"].nunique() > 1 or (claim["policy"] != REFERENCE_POLICY).any()
    pairs = [
        f"{a} vs {b}" if several else f"vs {b}"
        for a, b in zip(claim["policy"], claim["baseline"], strict=True)
    ]
    wide = max([15, *map(len, pairs)])
    for row, pair in zip(claim.itertuples(), pairs, strict=True):
        if row.verdict.startswith("not paired"):
            lines.append(f"  load {row.load:<4g} {pair:<{wide}} {row.verdict}")
            continue
        lines.append(
            f"  load {row.load:<4g} {pair:<{wide}} {statistic_text(row.reduction, '.1%'):>7} "
            f"{interval_text(row.ci_low, row.ci_high, row.pairs, '{:.1%}')}  {row.verdict}"
        )
    return "\n".join(lines)
