"""Figures: JCT CDFs, an average-JCT bar chart, the batch-rules comparison and the seeds'
batch-size curves.

Figures are built as :class:`matplotlib.figure.Figure` objects, without pyplot, so importing this
module sets no backend: files are written by the figure's own canvas, and a notebook shows the
returned figure inline (:class:`DisplayFigure` renders itself as PNG for IPython)."""

from __future__ import annotations

import io
from pathlib import Path

import numpy as np
import pandas as pd
from matplotlib.figure import Figure

# Okabe-Ito: distinguishable with the common forms of colour blindness.
PALETTE = ("#0072B2", "#E69F00", "#009E73", "#CC79A7", "#56B4E9", "#D55E00", "#F0E442", "#000000")


class DisplayFigure(Figure):
    """A figure that IPython shows inline as PNG, whatever the matplotlib backend."""

    def _repr_png_(self) -> bytes:
        buffer = io.BytesIO()
        self.savefig(buffer, format="png", dpi=100)
        return buffer.getvalue()


def new_figure(width: float = 6.4, height: float = 4.2) -> DisplayFigure:
    """An empty figure for the functions here and for notebooks."""
    return DisplayFigure(figsize=(width, height))


def _save(fig: Figure, path: Path | None) -> Figure:
    fig.tight_layout()
    if path is not None:
        fig.savefig(path, dpi=120, metadata={"Software": None})
    return fig


def jct_cdf(jobs_by_policy: dict[str, pd.DataFrame], path: Path | None = None) -> Figure:
    """Empirical CDF of job completion time (hours, log scale) per policy."""
    fig = new_figure()
    ax = fig.subplots()
    for name, jobs in jobs_by_policy.items():
        jct = np.sort(jobs.loc[jobs["finished"], "jct"].to_numpy(dtype=float)) / 3600.0
        if jct.size:
            ax.step(jct, np.arange(1, jct.size + 1) / len(jobs), where="post", label=name)
    ax.set_xscale("log")
    ax.set_xlabel("job completion time (hours)")
    ax.set_ylabel("fraction of jobs")
    ax.set_ylim(0, 1)
    ax.grid(True, which="both", alpha=0.3)
    if ax.get_legend_handles_labels()[0]:
        ax.legend(loc="lower right")
    ax.set_title("JCT CDF")
    return _save(fig, path)


def avg_jct_bars(summaries: dict[str, dict], path: Path | None = None) -> Figure:
    """Average JCT per policy (hours), annotated."""
    names = list(summaries)
    values = [summaries[n]["avg_jct"] / 3600.0 for n in names]
    fig = new_figure()
    ax = fig.subplots()
    bars = ax.bar(names, values, color=["C0" if n == "goodput" else "C7" for n in names])
    for bar, value in zip(bars, values, strict=True):
        ax.annotate(
            f"{value:.2f}", (bar.get_x() + bar.get_width() / 2, value), ha="center", va="bottom"
        )
    ax.set_ylabel("average JCT (hours)")
    ax.set_title("Average job completion time")
    return _save(fig, path)


def batch_rules_figure(
    report: pd.DataFrame,
    path: Path | None = None,
    workloads: list[str] | None = None,
    cluster: str = "",
) -> Figure:
    """Average JCT (hours) per batch agent, grouped by scheduler, with 95% bootstrap intervals
    across workloads."""
    schedulers = list(dict.fromkeys(report["scheduler"]))
    agents = list(dict.fromkeys(report["agent"]))
    fig = new_figure(8.0, 4.4)
    ax = fig.subplots()
    width = 0.8 / max(len(agents), 1)
    for k, agent in enumerate(agents):
        part = report[report["agent"] == agent].set_index("scheduler").reindex(schedulers)
        mean = part["avg_jct_s"].to_numpy(dtype=float) / 3600
        low = part["avg_jct_ci_low_s"].to_numpy(dtype=float) / 3600
        high = part["avg_jct_ci_high_s"].to_numpy(dtype=float) / 3600
        errors = np.nan_to_num(np.stack([mean - low, high - mean]))
        x = np.arange(len(schedulers)) + (k - (len(agents) - 1) / 2) * width
        ax.bar(x, mean, width, yerr=errors, capsize=3, label=agent, color=PALETTE[k % len(PALETTE)])
    ax.set_xticks(np.arange(len(schedulers)), schedulers)
    ax.set_xlabel("scheduler")
    ax.set_ylabel("average JCT (hours)")
    count = len(workloads or [])
    on = f" on {cluster}" if cluster else ""
    ax.set_title(f"Batch agents by scheduler: mean of {count} workload(s){on}, 95% bootstrap CI")
    ax.legend(title="batch agent", fontsize="small", ncols=3)
    return _save(fig, path)


def critical_batch_figure(trajectories, path: Path | None = None) -> Figure:
    """The critical batch (gradient noise scale, examples, log scale) against the fraction of
    training progress, one line per application (seed 002)."""
    fig = new_figure()
    ax = fig.subplots()
    for k, t in enumerate(trajectories):
        ax.plot(t.progress, t.noise_scale, label=t.application, color=PALETTE[k % len(PALETTE)])
    ax.set_yscale("log")
    ax.set_xlabel("fraction of training progress")
    ax.set_ylabel("critical batch B_noise (examples)")
    ax.set_title("Critical batch across training, bundled profiles (batch M0)")
    ax.grid(True, which="both", alpha=0.3)
    ax.legend(fontsize="small")
    return _save(fig, path)
