"""The real Philly log, whole: its 74,428 jobs (106 days, `goodput-sim workload philly
--realistic`) under fifo, tiresias, goodput (1,024 GPUs, configs/cluster-philly.yaml) and sia
(the Sia mix scaled to 1,024 GPUs, configs/cluster-philly-mixed.yaml, profiles by GPU type).
Each run is its own process; printed per policy: CPU seconds (user + system), wall seconds,
peak memory, rounds and jobs finished, then CPU seconds by days replayed (1, 7 and 28 days
from 2017-10-02, and the whole log) with the exponent of a power-law fit (1: linear).
Bars (issue 18): every whole-log run <= 30 min CPU and <= 2 GB; goodput on the 7-day slice
<= 60 s CPU and <= 500 MiB.

    python benchmarks/bench_philly.py [--policies fifo,goodput] [--days 1,7,28,all]
    python benchmarks/bench_philly.py --profile goodput --days 7   # cProfile, top functions
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
from common import RESULTS, machine, save

ROOT = Path(__file__).resolve().parents[1]
START = "2017-10-02"
SETUPS = {
    "fifo": ("configs/cluster-philly.yaml", None),
    "tiresias": ("configs/cluster-philly.yaml", None),
    "goodput": ("configs/cluster-philly.yaml", None),
    "sia": ("configs/cluster-philly-mixed.yaml", "traces/profiles-sia"),
}
BARS = {"all": (1800.0, 2048.0), "7": (60.0, 500.0)}  # (CPU s, MiB); 7 days: goodput only


def child(policy: str, workload: str, profile: str | None) -> None:
    """Run one simulation and print its summary as JSON (the parent measures the process)."""
    from goodput_sim.api import run

    cluster, profiles = SETUPS[policy]
    started = time.process_time()
    if profile:
        import cProfile
        import pstats

        profiler = cProfile.Profile()
        result = profiler.runcall(run, policy, workload, profiles, ROOT / cluster)
        pstats.Stats(profiler, stream=sys.stderr).sort_stats("cumulative").print_stats(30)
    else:
        result = run(policy, workload, profiles, ROOT / cluster)
    jobs = result.jobs
    print(
        json.dumps(
            {
                "run_cpu_seconds": time.process_time() - started,
                "rounds": len(result.rounds),
                "jobs": len(jobs),
                "finished": int(jobs["finished"].sum()),
                "avg_jct": float(jobs["jct"].mean()),
                "max_active": int(result.rounds["active"].max()),
            }
        )
    )


def measure(policy: str, workload: Path, profile: bool = False) -> dict:
    """Run ``policy`` on ``workload`` in a child process: its CPU, wall time and peak memory."""
    command = [sys.executable, __file__, "--child", policy, str(workload)]
    started = time.perf_counter()
    process = subprocess.Popen(
        command + (["--profile", policy] if profile else []),
        stdout=subprocess.PIPE,
        cwd=ROOT,
        text=True,
    )
    output = process.stdout.read()
    _, status, usage = os.wait4(process.pid, 0)
    if status != 0:
        raise SystemExit(f"{policy} on {workload.name} failed (status {status})")
    return {
        **json.loads(output.strip().splitlines()[-1]),
        "cpu_seconds": usage.ru_utime + usage.ru_stime,
        "wall_seconds": time.perf_counter() - started,
        "peak_mib": usage.ru_maxrss / 1024.0,
    }


def slices(days: list[str], folder: Path) -> dict[str, Path]:
    """Workload CSVs of the log: ``days`` from START, or ``all``."""
    from goodput_sim.philly import REFERENCE_LOG, philly_workload, read_philly_log

    if not REFERENCE_LOG.is_file():
        raise SystemExit(f"the reference log is absent ({REFERENCE_LOG.name}); nothing to replay")
    log = read_philly_log(REFERENCE_LOG)
    out = {}
    for span in days:
        frame = (
            philly_workload(log, realistic=True)
            if span == "all"
            else philly_workload(log, START, float(span), realistic=True)
        )
        out[span] = folder / f"philly-{span}.csv"
        frame.to_csv(out[span], index=False)
    return out


def exponent(points: dict[str, dict], spans: dict[str, float]) -> float | None:
    """Slope of log CPU seconds against log days replayed."""
    known = [(spans[s], r["cpu_seconds"]) for s, r in points.items()]
    if len(known) < 2:
        return None
    x, y = np.log(np.array(known)).T
    return float(np.polyfit(x, y, 1)[0])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--policies", default="fifo,tiresias,goodput,sia")
    parser.add_argument("--days", default="1,7,28,all")
    parser.add_argument("--profile", help="cProfile this policy instead (top 30 to stderr)")
    parser.add_argument("--child", nargs=2, help=argparse.SUPPRESS)
    args, _ = parser.parse_known_args()
    if args.child:
        child(*args.child, args.profile)
        return
    days = args.days.split(",")
    with tempfile.TemporaryDirectory() as tmp:
        workloads = slices(days, Path(tmp))
        if args.profile:
            for span, path in workloads.items():
                print(f"{args.profile}, {span} days: {measure(args.profile, path, True)}")
            return
        spans = {s: float(s) for s in days if s != "all"}
        if "all" in days:
            import pandas as pd

            last = pd.read_csv(workloads["all"], usecols=["time"])["time"].max()
            spans["all"] = last / 86400.0
        results: dict[str, dict] = {}
        for policy in args.policies.split(","):
            results[policy] = {}
            for span, path in workloads.items():
                r = results[policy][span] = measure(policy, path)
                print(
                    f"{policy:9s} {span:>4s} days: {r['cpu_seconds']:8.1f} s CPU "
                    f"{r['wall_seconds']:8.1f} s wall {r['peak_mib']:7.0f} MiB "
                    f"{r['rounds']:7d} rounds {r['finished']:6d}/{r['jobs']} finished",
                    flush=True,
                )
    print("\nCPU seconds by days replayed (exponent: slope of log CPU on log days)")
    print(f"{'policy':9s}" + "".join(f"{s:>10s}" for s in days) + "  exponent")
    for policy, points in results.items():
        fit = exponent(points, spans)
        cells = "".join(f"{points[s]['cpu_seconds']:10.1f}" for s in days)
        print(f"{policy:9s}{cells}  {'-' if fit is None else f'{fit:.2f}'}")
    failed = []
    for policy, points in results.items():
        for span, (cpu, mib) in BARS.items():
            if span in points and (span == "all" or policy == "goodput"):
                r = points[span]
                if r["cpu_seconds"] > cpu:
                    failed.append(f"{policy} {span}: {r['cpu_seconds']:.0f} s CPU > {cpu:.0f} s")
                if r["peak_mib"] > mib:
                    failed.append(f"{policy} {span}: {r['peak_mib']:.0f} MiB > {mib:.0f} MiB")
    saved = (
        json.loads((RESULTS / "philly.json").read_text())
        if (RESULTS / "philly.json").exists()
        else {}
    )
    runs, exponents = saved.get("runs", {}), saved.get("exponents", {})
    days_of = {**saved.get("days", {}), **spans}
    for policy, points in results.items():  # other policies and days measured before are kept
        runs.setdefault(policy, {}).update(points)
        exponents[policy] = exponent(runs[policy], days_of)
    save(
        "philly",
        {
            "machine": machine(),
            "start": START,
            "runs": runs,
            "exponents": exponents,
            "days": days_of,
        },
    )
    print("bars: " + ("all met" if not failed else "missed: " + "; ".join(failed)))


if __name__ == "__main__":
    main()
