"""Philly scale: the ``scale`` preset (10,000 jobs over 7 days) on 1,024 GPUs (256 nodes x 4)
under the goodput policy. Reports wall time and peak memory (bars: <= 15 min, <= 4 GiB), and
policy time per round against the number of active jobs (table, plot, and the exponent of a
power-law fit: <= 1 means no faster than linear).

    python benchmarks/bench_scale.py [--days 7] [--jobs 10000]
"""

from __future__ import annotations

import argparse
import tempfile
import time
from pathlib import Path

import numpy as np
import pandas as pd
from common import RESULTS, in_fresh_process, machine, peak_rss_mib, save

from goodput_sim.api import run
from goodput_sim.inputs.workload import (
    PRESETS,
    bundled_path,
    generate_workload,
    load_philly_stats,
    write_workload,
)


def measure(workload: str) -> dict:
    started = time.perf_counter()
    result = run("goodput", workload, cluster="256x4")
    wall = time.perf_counter() - started
    rounds = result.rounds.assign(policy_ms=1e3 * np.array(result.policy_seconds))
    jobs = result.jobs
    return {
        "wall_seconds": wall,
        "peak_rss_mib": peak_rss_mib(),
        "rounds": rounds[["time", "active", "running", "gpus_in_use", "policy_ms"]],
        "finished": int(jobs["finished"].sum()),
        "jobs": len(jobs),
        "avg_jct": float(jobs["jct"].mean()),
    }


def per_active_jobs(rounds: pd.DataFrame) -> pd.DataFrame:
    """Policy time per round, binned by active jobs."""
    edges = np.unique(np.quantile(rounds["active"], np.linspace(0, 1, 11)).round())
    bins = pd.cut(rounds["active"], np.concatenate([[0], edges]), include_lowest=True)
    return rounds.groupby(bins, observed=True)["policy_ms"].agg(
        rounds="size", median="median", p95=lambda x: np.percentile(x, 95)
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    preset = PRESETS["scale"]
    parser.add_argument("--days", type=int, default=preset.days)
    parser.add_argument("--jobs", type=int, default=preset.num_jobs)
    args = parser.parse_args()
    stats = load_philly_stats(bundled_path("philly_stats.yaml"))
    frame = generate_workload(stats, args.jobs, days=args.days, seed=preset.seed)
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "scale.csv"
        write_workload(frame, path)
        r = in_fresh_process(measure, str(path))
    rounds = r.pop("rounds")
    table = per_active_jobs(rounds)
    busy = rounds[rounds["active"] > 0]
    exponent, _ = np.polyfit(np.log(busy["active"]), np.log(busy["policy_ms"]), 1)
    report = {
        "machine": machine(),
        "jobs": args.jobs,
        "days": args.days,
        "cluster": "256x4",
        **r,
        "simulated_rounds": len(rounds),
        "max_active": int(rounds["active"].max()),
        "policy_ms_median": float(rounds["policy_ms"].median()),
        "policy_ms_p95": float(np.percentile(rounds["policy_ms"], 95)),
        "policy_time_exponent": float(exponent),
    }
    RESULTS.mkdir(exist_ok=True)
    table.to_csv(RESULTS / "scale_policy_time.csv", float_format="%.3f")
    plot(busy, table, RESULTS / "scale_policy_time.png")
    save("scale", report)
    print(table.to_string(float_format=lambda v: f"{v:.2f}"))
    print(
        f"\n{args.jobs} jobs, {args.days} days, 256x4: "
        f"wall {r['wall_seconds']:.0f} s (bar <= 900), "
        f"peak memory {r['peak_rss_mib']:.0f} MiB (bar <= 4096), {r['finished']} finished, "
        f"{len(rounds)} rounds, up to {report['max_active']} active jobs"
    )
    print(
        f"policy time per round: median {report['policy_ms_median']:.1f} ms, "
        f"p95 {report['policy_ms_p95']:.1f} ms; growth exponent in active jobs "
        f"{exponent:.2f} (<= 1: no faster than linear)"
    )
    print(f"machine: {report['machine']}")


def plot(rounds: pd.DataFrame, table: pd.DataFrame, path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(6.4, 4.2))
    ax.scatter(rounds["active"], rounds["policy_ms"], s=3, alpha=0.25, label="rounds")
    centres = [interval.mid for interval in table.index]
    ax.plot(centres, table["median"], "o-", color="C1", label="median per bin")
    ax.set_xlabel("active jobs")
    ax.set_ylabel("policy time per round (ms)")
    ax.set_title("goodput policy, 10,000 jobs on 256 x 4 GPUs")
    ax.grid(alpha=0.3)
    ax.legend()
    fig.tight_layout()
    fig.savefig(path, dpi=120, metadata={"Software": None})
    plt.close(fig)


if __name__ == "__main__":
    main()
