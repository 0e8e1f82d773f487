"""All five policies on all eight reference workloads (40 runs) with 2 worker processes,
measured profiles; bar <= 3 minutes. Skips when the reference folder is absent.

    python benchmarks/bench_sweep.py
"""

from __future__ import annotations

import tempfile
import time

from common import REFERENCE, machine, save

from goodput_sim.api import DEFAULT_POLICIES
from goodput_sim.experiments.sweep import sweep


def main() -> None:
    if not REFERENCE.is_dir():
        print(f"reference data not found at {REFERENCE}: sweep benchmark skipped")
        return
    workloads = sorted((REFERENCE / "workloads").glob("workload-*.csv"))
    with tempfile.TemporaryDirectory() as out:
        started = time.perf_counter()
        table = sweep(
            DEFAULT_POLICIES,
            workloads,
            out,
            profiles=str(REFERENCE / "traces"),
            workers=2,
            progress=False,
        )
        wall = time.perf_counter() - started
    means = table.groupby("policy")["avg_jct"].mean()
    report = {
        "machine": machine(),
        "runs": len(table),
        "workers": 2,
        "wall_seconds": wall,
        "mean_avg_jct_by_policy": means.to_dict(),
    }
    save("sweep", report)
    print(f"{len(table)} runs with 2 workers: {wall:.0f} s (bar <= 180 s)")
    print("mean of the 8 workloads' average JCT (s):", means.round(1).to_dict())
    print(f"machine: {report['machine']}")


if __name__ == "__main__":
    main()
