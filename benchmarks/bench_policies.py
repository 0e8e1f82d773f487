"""Per-policy speed: wall time, simulated rounds per second, policy time per round (median,
p95) and peak memory, on reference workload-6 (measured profiles, when the reference folder is
present) and the bundled default workload. Each run is in a fresh process.

    python benchmarks/bench_policies.py [--policies fifo,goodput]
"""

from __future__ import annotations

import argparse
import time

import numpy as np
from common import REFERENCE, in_fresh_process, machine, peak_rss_mib, save

from goodput_sim.api import DEFAULT_POLICIES, bundled_workload, run

BARS = {"goodput": 15.0, "fifo": 3.0, "tiresias": 3.0, "optimus": 3.0, "throughput": 3.0}


def measure(policy: str, workload: str, profiles: str | None) -> dict:
    started = time.perf_counter()
    result = run(policy, workload, profiles)
    wall = time.perf_counter() - started
    policy_ms = 1e3 * np.array(result.policy_seconds)
    return {
        "wall_seconds": wall,
        "rounds": len(result.rounds),
        "rounds_per_second": len(result.rounds) / wall,
        "policy_ms_median": float(np.median(policy_ms)),
        "policy_ms_p95": float(np.percentile(policy_ms, 95)),
        "peak_rss_mib": peak_rss_mib(),
        "avg_jct": float(result.jobs["jct"].mean()),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--policies", default=",".join(DEFAULT_POLICIES))
    args = parser.parse_args()
    cases = {"default": (str(bundled_workload()), None)}
    if REFERENCE.is_dir():
        cases["workload-6"] = (
            str(REFERENCE / "workloads" / "workload-6.csv"),
            str(REFERENCE / "traces"),
        )
    else:
        print(f"reference data not found at {REFERENCE}: workload-6 skipped")
    report = {"machine": machine(), "runs": {}}
    print(
        f"{'workload':<11} {'policy':<11} {'wall s':>7} {'rounds/s':>9} {'policy ms p50':>14} "
        f"{'p95':>7} {'peak MiB':>9} {'avg JCT s':>10}"
    )
    for case, (workload, profiles) in cases.items():
        for policy in args.policies.split(","):
            r = in_fresh_process(measure, policy, workload, profiles)
            report["runs"][f"{case}/{policy}"] = r
            bar = BARS.get(policy) if case == "workload-6" else None
            verdict = (
                ""
                if bar is None
                else f"  (bar <= {bar:.0f} s: {'met' if r['wall_seconds'] <= bar else 'NOT met'})"
            )
            print(
                f"{case:<11} {policy:<11} {r['wall_seconds']:>7.2f} {r['rounds_per_second']:>9.0f} "
                f"{r['policy_ms_median']:>14.2f} {r['policy_ms_p95']:>7.2f} "
                f"{r['peak_rss_mib']:>9.0f} {r['avg_jct']:>10.1f}{verdict}"
            )
    print(f"machine: {report['machine']}")
    previous = save("policies", report)
    if previous:
        print("\nwall time against the previous run (ratio < 1: faster now):")
        for key, r in report["runs"].items():
            if key in previous.get("runs", {}):
                print(
                    f"  {key:<24} {r['wall_seconds'] / previous['runs'][key]['wall_seconds']:.2f}"
                )


if __name__ == "__main__":
    main()
