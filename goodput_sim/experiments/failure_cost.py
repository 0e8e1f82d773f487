"""What failures cost each scheduler, from the ``summary.csv`` of a sweep over failure settings
(e.g. ``configs/experiment-failures.yaml``): per policy and failure condition, the average JCT
with its 95% bootstrap interval and the *slowdown* against the same samples with nothing failing
(ratio of mean average JCTs - 1, paired bootstrap), beside the GPU-hours of work lost and the
node failures per run.

A run's *condition* is its failure and checkpoint settings (``mtbf``, ``job_crash_hours``,
``lifetime``, ``checkpoint_seconds``...); its *baseline* is the run of the same policy, cluster,
other settings and sample with no failure setting at all. Fewer than
:data:`~goodput_sim.experiments.intervals.MIN_SAMPLES` pairs get no interval.
"""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import pandas as pd

from goodput_sim.errors import InputError
from goodput_sim.experiments.intervals import (
    SAMPLE,
    change_interval,
    figure_path,
    format_change,
    format_interval,
    markdown_table,
    mean_interval,
    read_summary,
    refuse_repeats,
    sample_name,
    settings_of,
)
from goodput_sim.results.stats import LEVEL
from goodput_sim.spec import BY_NAME

NEEDED = ("policy", "cluster", "settings", "avg_jct", "lost_gpu_hours", "node_failures", *SAMPLE)
CHECKPOINTS = ("checkpoint_interval", "checkpoint_seconds", "reallocation_checkpoint")
CAUSES = ("mtbf", "failure_trace", "job_crash_hours")  # a run without these fails nowhere
NONE = "no failures"


def is_failure_setting(name: str) -> bool:
    """Settings that make a condition: the failure group's and the checkpoints'."""
    return (
        name in CHECKPOINTS
        or name == "crashes"
        or (name in BY_NAME and BY_NAME[name].group == "failures")
    )


def condition_label(settings: dict, crashed: bool = False) -> str:
    """A condition's name, e.g. ``mtbf=12 h, crashes every 12 h``; ``no failures``. A run
    whose jobs crashed by their profiles' own ``crash_hours`` (``crashed``) is no run without
    failures."""
    parts = ["profile crashes"] if crashed and settings.get("job_crash_hours") is None else []
    if settings.get("mtbf") is not None:
        parts.append(f"MTBF {settings['mtbf']:g} h")
    if settings.get("failure_trace") is not None:
        parts.append(f"trace {Path(str(settings['failure_trace'])).name}")
    if settings.get("job_crash_hours") is not None:
        parts.append(f"crashes every {settings['job_crash_hours']:g} h")
    rest = {k: v for k, v in settings.items() if k not in CAUSES}
    parts += [f"{k}={v}" for k, v in sorted(rest.items())]
    failing = crashed or any(settings.get(c) is not None for c in CAUSES)
    return ", ".join(parts) if failing else NONE


def read_failure_runs(folder: Path) -> pd.DataFrame:
    """The sweep's runs, each with its ``condition`` (failure settings), ``context`` (every
    other setting and the cluster) and ``sample``; one-line errors for other folders."""
    path, runs = read_summary(folder, NEEDED)
    settings = [settings_of(path, text) for text in runs["settings"]]
    own = [{k: v for k, v in s.items() if is_failure_setting(k)} for s in settings]
    other = [{k: v for k, v in s.items() if not is_failure_setting(k)} for s in settings]
    clusters = runs["cluster"].astype(str)
    if "gpu_types" in runs and runs["gpu_types"].nunique() > 1:  # one shape, two GPU types
        clusters = clusters + " " + runs["gpu_types"].astype(str)
    # Profiles may crash jobs with no failure setting at all (``job_crashes`` in the summary).
    crashes = runs["job_crashes"] if "job_crashes" in runs else pd.Series(0, index=runs.index)
    crashed = (pd.to_numeric(crashes, errors="coerce").fillna(0) > 0).tolist()
    runs = runs.assign(
        condition=[condition_label(s, c) for s, c in zip(own, crashed, strict=True)],
        failing=[
            c or any(s.get(k) is not None for k in CAUSES)
            for s, c in zip(own, crashed, strict=True)
        ],
        context=[
            f"{c} {json.dumps(o, sort_keys=True)}" for c, o in zip(clusters, other, strict=True)
        ],
        sample=[sample_name(row) for row in runs[list(SAMPLE)].itertuples(index=False)],
    )
    cell = ["policy", "context", "condition", "sample"]
    refuse_repeats(path, runs, cell, ["policy", "condition", "sample"])
    if not (~runs["failing"]).any():
        raise InputError(
            path,
            "has no run without failures to set the others against (jobs whose profiles set "
            "crash_hours crash in every run: give the baseline crashes: false)",
        )
    return runs


def slowdown_table(runs: pd.DataFrame) -> pd.DataFrame:
    """Per policy, context and condition: samples, mean average JCT (interval), slowdown
    against the no-failure runs of the same samples (paired interval), lost GPU-hours and node
    failures per run."""
    rows = []
    for (policy, context), part in runs.groupby(["policy", "context"], sort=False):
        base = part[~part["failing"]].set_index("sample")["avg_jct"]
        for condition, cell in part.groupby("condition", sort=False):
            cell = cell.set_index("sample")
            shared = [s for s in cell.index if s in base.index]
            names = ("failures", policy, context, condition)
            jct = mean_interval(cell["avg_jct"], "avg_jct", *names)
            n, change, low, high = change_interval(
                cell.loc[shared, "avg_jct"], base.loc[shared], "slowdown", *names
            )
            rows.append(
                {
                    "policy": policy,
                    "context": context,
                    "condition": condition,
                    "n": jct[3],  # runs with an average JCT (some job finished)
                    "avg_jct_s": jct[0],
                    "avg_jct_ci_low_s": jct[1],
                    "avg_jct_ci_high_s": jct[2],
                    "pairs": n,
                    "slowdown": change,
                    "slowdown_ci_low": low,
                    "slowdown_ci_high": high,
                    "lost_gpu_hours": float(cell["lost_gpu_hours"].mean()),
                    "node_failures": float(cell["node_failures"].mean()),
                }
            )
    return pd.DataFrame(rows)


def markdown(table: pd.DataFrame) -> str:
    """The slowdown table as markdown (the context column only when there are several)."""
    several = table["context"].nunique() > 1
    head = ["policy", *(["context"] if several else []), "condition", "avg JCT (s)"]
    head += ["slowdown vs no failures", "lost GPU-h per run", "node failures per run"]
    lines = markdown_table(
        f"### Average JCT under failures, and its slowdown against the same samples with "
        f"nothing failing ({LEVEL:.0%} bootstrap intervals, paired for the slowdown)",
        head,
    )
    for r in table.itertuples(index=False):
        cells = [r.policy, *([r.context] if several else []), r.condition]
        cells.append(format_interval(r.avg_jct_s, r.avg_jct_ci_low_s, r.avg_jct_ci_high_s, r.n, 1))
        slowdown = (
            "-"
            if r.condition == NONE
            else format_change(r.slowdown, r.slowdown_ci_low, r.slowdown_ci_high, r.pairs)
        )
        cells += [slowdown, f"{r.lost_gpu_hours:,.1f}", f"{r.node_failures:,.1f}"]
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines) + "\n"


def slowdown_figure(table: pd.DataFrame, path: Path | None = None):
    """Slowdown bars per condition, one group per policy, with the paired intervals (written
    to ``path`` when given); the figure."""
    from goodput_sim.results.plots import legend_outside, new_figure, policy_colors, save_figure

    failing = table[table["condition"] != NONE]
    conditions = list(dict.fromkeys(failing["condition"]))
    policies = list(dict.fromkeys(failing["policy"]))
    fig = new_figure(max(6.0, 1.2 * len(conditions) * len(policies) / 2), 4.2)
    ax = fig.subplots()
    width = 0.8 / max(len(policies), 1)
    x = np.arange(len(conditions))
    colors = policy_colors(list(policies))
    for k, policy in enumerate(policies):
        part = failing[failing["policy"] == policy].set_index("condition").reindex(conditions)
        value = 100 * part["slowdown"].to_numpy(dtype=float)
        low = 100 * part["slowdown_ci_low"].to_numpy(dtype=float)
        high = 100 * part["slowdown_ci_high"].to_numpy(dtype=float)
        bars = np.vstack([value - low, high - value])
        bars = np.where(np.isfinite(bars), bars, 0.0)
        ax.bar(
            x + (k - (len(policies) - 1) / 2) * width,
            value,
            width,
            yerr=bars,
            capsize=3,
            label=policy,
            color=colors[policy],
        )
    ax.set_xticks(x, [c.replace(", ", "\n") for c in conditions], fontsize=8)
    ax.set_ylabel("average JCT slowdown (%)")
    ax.axhline(0, color="black", linewidth=0.8)
    legend_outside(ax)
    n = int(failing["pairs"].min()) if len(failing) else 0
    ax.set_title(f"JCT slowdown from failures ({LEVEL:.0%} paired bootstrap, n = {n} pairs)")
    fig.tight_layout()
    if path is not None:
        path.parent.mkdir(parents=True, exist_ok=True)
        save_figure(fig, path)
    return fig


def write_failure_report(
    folder: Path, out: Path | None = None, figure: str | None = "failures.png"
) -> tuple[pd.DataFrame, list[Path]]:
    """Read ``folder/summary.csv`` and write ``failures.csv``, ``failures.md`` and the figure
    (PNG, PDF or SVG by suffix; a bare name goes in ``out``, default ``folder/report``)."""
    out = Path(out) if out is not None else Path(folder) / "report"
    target = figure_path(figure, out) if figure is not None else None
    table = slowdown_table(read_failure_runs(folder))
    if out.exists() and not out.is_dir():
        raise InputError(out, "is a file, expected a folder for the report")
    out.mkdir(parents=True, exist_ok=True)
    options = {"index": False, "float_format": "%.6f", "lineterminator": "\n"}
    table.to_csv(out / "failures.csv", **options)
    (out / "failures.md").write_text(markdown(table))
    written = []
    if target is not None:
        slowdown_figure(table, target)
        written.append(target)
    return table, written


def slowdown_of(table: pd.DataFrame, policy: str, condition: str) -> float:
    """One cell's slowdown (NaN where the table has none)."""
    cell = table[(table["policy"] == policy) & (table["condition"] == condition)]
    return float(cell["slowdown"].iloc[0]) if len(cell) else math.nan
