"""Figures: JCT CDFs and an average-JCT bar chart (matplotlib, headless)."""

from __future__ import annotations

from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402


def jct_cdf(jobs_by_policy: dict[str, pd.DataFrame], path: Path) -> Path:
    """Empirical CDF of job completion time (hours, log scale) per policy."""
    fig, ax = plt.subplots(figsize=(6.4, 4.2))
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
    fig.tight_layout()
    fig.savefig(path, dpi=120, metadata={"Software": None})
    plt.close(fig)
    return path


def avg_jct_bars(summaries: dict[str, dict], path: Path) -> Path:
    """Average JCT per policy (hours), annotated."""
    names = list(summaries)
    values = [summaries[n]["avg_jct"] / 3600.0 for n in names]
    fig, ax = plt.subplots(figsize=(6.4, 4.2))
    bars = ax.bar(names, values, color=["C0" if n == "goodput" else "C7" for n in names])
    for bar, value in zip(bars, values, strict=True):
        ax.annotate(
            f"{value:.2f}", (bar.get_x() + bar.get_width() / 2, value), ha="center", va="bottom"
        )
    ax.set_ylabel("average JCT (hours)")
    ax.set_title("Average job completion time")
    fig.tight_layout()
    fig.savefig(path, dpi=120, metadata={"Software": None})
    plt.close(fig)
    return path
