"""A scatter of per-job JCTs of two runs of one workload (ours against a reference's)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd


def scatter(ours: pd.DataFrame, theirs: pd.DataFrame, path: str | Path, title: str) -> None:
    """Per-job JCT here against the reference's (log-log, jobs paired by name), with the
    y = x line and the +-10% band; written as PNG to ``path``."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    both = theirs.merge(ours, on="name", suffixes=("_ref", ""))
    x, y = both["jct_ref"].to_numpy(float), both["jct"].to_numpy(float)
    low, high = min(x.min(), y.min()) * 0.8, max(x.max(), y.max()) * 1.25
    line = np.geomspace(low, high, 50)
    fig, ax = plt.subplots(figsize=(4.8, 4.6), dpi=120)
    ax.fill_between(line, line * 0.9, line * 1.1, color="0.85", label="within 10%")
    ax.plot(line, line, color="0.4", lw=0.8)
    ax.scatter(x, y, s=9, alpha=0.7)
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlim(low, high)
    ax.set_ylim(low, high)
    ax.set_xlabel("JCT in the reference simulator (s)")
    ax.set_ylabel("JCT here (s)")
    ratio = y / x
    ax.set_title(
        f"{title}: avg {y.mean() / x.mean():.3f}, median |r-1| {np.median(np.abs(ratio - 1)):.1%}",
        fontsize=9,
    )
    ax.legend(loc="upper left", fontsize=8)
    fig.tight_layout()
    fig.savefig(path)
    plt.close(fig)
