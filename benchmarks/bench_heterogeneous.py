"""Heterogeneous clusters: the sia policy's time per round and per workload on the Sia
artifact's 64-GPU default mix, and its time per round at 2,048 GPUs of mixed types.

* A Philly workload of the Sia artifact (workload-1, its measured profiles) when the reference
  folder is present; else the bundled heterogeneous workload with the shipped profiles. Bars:
  median policy time per round <= 10 ms, the whole run <= 15 s (the reference's simulator takes
  minutes per workload and its policy about 96 ms per round).
* Scale: the default mix x 32 (192 aws, 64 dgx-ext, 96 rtx nodes = 2,048 GPUs) with the bundled
  heterogeneous workload's jobs repeated 32 times (as the artifact's scale_32x sets repeat
  Saturn's), for the first simulated hours; the policy time per round is reported (the
  reference's Sia needs about 5 s per round there).

    python benchmarks/bench_heterogeneous.py [--scale-hours 2]
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

import numpy as np
import pandas as pd
from common import in_fresh_process, machine, peak_rss_mib, save

from goodput_sim.api import run
from goodput_sim.inputs.cluster import ClusterSpec, NodeGroup
from goodput_sim.spec import SimConfig

ROOT = Path(__file__).resolve().parents[1]
SIA = ROOT.parent / "shared" / "reference" / "sia-sosp23"
MIX = ROOT / "configs" / "cluster-sia-default.yaml"
SHIPPED = ROOT / "traces" / "profiles-sia"
HETERO = ROOT / "traces" / "workloads" / "heterogeneous.csv"
BARS = {"policy_ms_median": 10.0, "wall_seconds": 15.0}


def measure(policy: str, workload, profiles: str, cluster, config: SimConfig | None) -> dict:
    started = time.perf_counter()
    result = run(policy, workload, profiles, cluster, config=config)
    wall = time.perf_counter() - started
    policy_ms = 1e3 * np.array(result.policy_seconds)
    done = result.jobs[result.jobs["finished"]]
    return {
        "wall_seconds": wall,
        "rounds": len(result.rounds),
        "policy_ms_median": float(np.median(policy_ms)),
        "policy_ms_p95": float(np.percentile(policy_ms, 95)),
        "policy_ms_max": float(policy_ms.max()),
        "peak_active_jobs": int(result.rounds["active"].max()),
        "finished": int(len(done)),
        "avg_jct_finished": float(done["jct"].mean()) if len(done) else None,
        "peak_rss_mib": peak_rss_mib(),
    }


def scaled_workload(times: int) -> pd.DataFrame:
    jobs = pd.read_csv(HETERO)
    out = jobs.loc[jobs.index.repeat(times)].reset_index(drop=True)
    out["name"] = [f"{n}-{k % times}" for k, n in enumerate(out["name"])]
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--scale-hours", type=float, default=2.0)
    args = parser.parse_args()
    if (SIA / "traces").is_dir():
        workload = str(SIA / "workloads" / "philly" / "workload-1.csv")
        profiles, label = str(SIA / "traces"), "sia philly workload-1, measured profiles"
    else:
        workload, profiles = str(HETERO), str(SHIPPED)
        label = "bundled heterogeneous workload, shipped profiles (no reference found)"
    report = {"machine": machine(), "bars": BARS, "runs": {}}
    for policy in ("sia", "goodput", "gavel"):
        row = in_fresh_process(measure, policy, workload, profiles, str(MIX), None)
        report["runs"][f"{policy} 64 GPUs"] = {"case": label, **row}
        print(
            f"{policy:<8} 64 GPUs ({label}): wall {row['wall_seconds']:.1f} s, policy "
            f"median {row['policy_ms_median']:.2f} ms, p95 {row['policy_ms_p95']:.2f} ms",
            flush=True,
        )
    big = ClusterSpec(
        (NodeGroup(192, 4, "aws"), NodeGroup(64, 8, "dgx-ext"), NodeGroup(96, 8, "rtx"))
    )
    config = SimConfig(horizon=args.scale_hours * 3600)
    row = in_fresh_process(measure, "sia", scaled_workload(32), str(SHIPPED), big, config)
    report["runs"]["sia 2048 GPUs"] = {
        "case": f"bundled heterogeneous x32 on the default mix x32, first {args.scale_hours:g} h",
        **row,
    }
    print(
        f"sia      2048 GPUs: {row['rounds']} rounds, up to {row['peak_active_jobs']} active jobs,"
        f" policy median {row['policy_ms_median']:.0f} ms, p95 {row['policy_ms_p95']:.0f} ms "
        f"(reference Sia: about 5000 ms)",
        flush=True,
    )
    sia = report["runs"]["sia 64 GPUs"]
    failed = [k for k, bar in BARS.items() if sia[k] > bar]
    report["bars_met"] = not failed
    save("heterogeneous", report)
    for key in failed:
        print(f"BAR MISSED: sia {key} {sia[key]:.2f} > {BARS[key]}")
    raise SystemExit(1 if failed else 0)


if __name__ == "__main__":
    main()
