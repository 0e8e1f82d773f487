"""The real Philly log, whole: its 74,428 jobs (106 days, `goodput-sim workload philly
--realistic`) under fifo, tiresias, goodput (1,024 GPUs, configs/cluster-philly.yaml) and sia
(the Sia mix scaled to 1,024 GPUs, configs/cluster-philly-mixed.yaml, profiles by GPU type).
Each run is its own process; printed per policy: CPU seconds (user + system), wall seconds,
peak memory, rounds and jobs finished, then CPU seconds by days replayed (1, 7 and 28 days
from 2017-10-02, and the whole log) with the exponent of a power-law fit (1: linear).
Last, the whole log's CPU and peak memory per policy. Bars (issues 18 and 46): sia's whole log
<= 900 s CPU and <= 1.5 GB, its first day <= 12 s; every other whole-log run <= 400 s CPU and
<= 2 GB; goodput on the 7-day slice <= 60 s CPU and <= 500 MiB. First, goodput on the Pollux
workload-6 with measured profiles (when the reference folder is present): the run's CPU after
imports <= 1 s, and the whole `goodput-sim run` command's CPU <= 2 s (as it runs by default,
without the figure; also measured with --plot).

    python benchmarks/bench_philly.py [--policies fifo,goodput] [--days 1,7,28,all]
    python benchmarks/bench_philly.py --quick   # the first 7 days only, no workload-6
    python benchmarks/bench_philly.py --days 1 --policies goodput --no-workload-6
    python benchmarks/bench_philly.py --policies ""   # workload-6 only
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
from common import REFERENCE, RESULTS, machine, save

ROOT = Path(__file__).resolve().parents[1]
START = "2017-10-02"
SETUPS = {
    "fifo": ("configs/cluster-philly.yaml", None),
    "tiresias": ("configs/cluster-philly.yaml", None),
    "goodput": ("configs/cluster-philly.yaml", None),
    "sia": ("configs/cluster-philly-mixed.yaml", "traces/profiles-sia"),
}
BARS = {  # (policy, days) -> (CPU s, MiB); "*": every policy without its own bar
    ("sia", "all"): (900.0, 1536.0),
    ("sia", "1"): (12.0, 2048.0),
    ("*", "all"): (400.0, 2048.0),
    ("goodput", "7"): (60.0, 500.0),
}
WORKLOAD_6 = (REFERENCE / "workloads" / "workload-6.csv", REFERENCE / "traces")
WORKLOAD_6_BARS = {"run": 1.0, "command": 2.0, "command --plot": None}  # CPU seconds
REPEATS = 3  # fresh processes per workload-6 figure; the median is compared with its bar


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


def child_workload_6() -> None:
    """Goodput on workload-6 after imports; print the run's CPU seconds and average JCT."""
    from goodput_sim.api import run

    started = time.process_time()
    result = run("goodput", *map(str, WORKLOAD_6))
    seconds = time.process_time() - started
    print(json.dumps({"run_cpu_seconds": seconds, "avg_jct": float(result.jobs["jct"].mean())}))


def in_child(command: list[str], what: str) -> tuple[str, dict]:
    """Run ``command`` from the repository root: its output, CPU, wall time and peak memory."""
    started = time.perf_counter()
    process = subprocess.Popen(command, stdout=subprocess.PIPE, cwd=ROOT, text=True)
    output = process.stdout.read()
    _, status, usage = os.wait4(process.pid, 0)
    if status != 0:
        raise SystemExit(f"{what} failed (status {status})")
    return output, {
        "cpu_seconds": usage.ru_utime + usage.ru_stime,
        "wall_seconds": time.perf_counter() - started,
        "peak_mib": usage.ru_maxrss / 1024.0,
    }


def measure(policy: str, workload: Path, profile: bool = False) -> dict:
    """Run ``policy`` on ``workload`` in a child process: its CPU, wall time and peak memory."""
    command = [sys.executable, __file__, "--child", policy, str(workload)]
    load = os.getloadavg()[0]
    output, usage = in_child(
        command + (["--profile", policy] if profile else []), f"{policy} on {workload.name}"
    )
    # The machine's load (1-minute average) before and after: CPU figures grow on a busy one.
    loads = {"load_before": load, "load_after": os.getloadavg()[0]}
    return {**json.loads(output.strip().splitlines()[-1]), **usage, **loads}


def workload_6(folder: Path) -> dict[str, dict]:
    """Goodput on workload-6, each figure the median of fresh processes: the run's CPU after
    imports, and the whole command's CPU as it runs by default (no figure) and with --plot."""
    workload, profiles = map(str, WORKLOAD_6)
    command = [str(Path(sys.executable).with_name("goodput-sim")), "run", "--policy", "goodput"]
    command += ["--workload", workload, "--profiles", profiles, "--quiet", "--force"]
    command += ["--out", str(folder / "workload-6")]
    commands = {
        "run": [sys.executable, __file__, "--child-workload-6"],
        "command": command,
        "command --plot": [*command, "--plot"],
    }
    figures = {}
    for name, argv in commands.items():
        samples = []
        for _ in range(REPEATS):
            output, usage = in_child(argv, f"workload-6 {name}")
            if name == "run":
                usage.update(json.loads(output.strip().splitlines()[-1]))
                usage["cpu_seconds"] = usage.pop("run_cpu_seconds")
            samples.append(usage["cpu_seconds"])
        figures[name] = {"cpu_seconds": float(np.median(samples)), "samples": samples}
        if name == "run":
            figures[name]["avg_jct"] = usage["avg_jct"]
        bar = WORKLOAD_6_BARS[name]
        verdict = "met" if bar is not None and figures[name]["cpu_seconds"] <= bar else "NOT met"
        print(
            f"goodput workload-6 {name:18s} {figures[name]['cpu_seconds']:6.2f} s CPU "
            f"(median of {REPEATS}" + (f"; bar <= {bar:.0f} s: {verdict})" if bar else ")"),
            flush=True,
        )
    return figures


def slices(days: list[str], folder: Path) -> dict[str, Path]:
    """Workload CSVs of the log: ``days`` from START, or ``all``."""
    from goodput_sim.inputs.philly import (
        REFERENCE_LOG,
        philly_workload,
        read_philly_log,
        reference_log,
    )

    path = reference_log()
    if path is None:
        raise SystemExit(f"the reference log is absent (../{REFERENCE_LOG}); nothing to replay")
    log = read_philly_log(path)
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
    parser.add_argument(
        "--quick", action="store_true", help="the first 7 days only, without workload-6"
    )
    parser.add_argument(
        "--workload-6",
        action=argparse.BooleanOptionalAction,
        default=True,
        help="measure goodput on the Pollux workload-6 first (skipped without the reference)",
    )
    parser.add_argument("--child", nargs=2, help=argparse.SUPPRESS)
    parser.add_argument("--child-workload-6", action="store_true", help=argparse.SUPPRESS)
    args, _ = parser.parse_known_args()
    if args.child:
        child(*args.child, args.profile)
        return
    if args.child_workload_6:
        child_workload_6()
        return
    if args.quick:
        args.days, args.workload_6 = "7", False
    days = args.days.split(",")
    policies = [policy for policy in args.policies.split(",") if policy]  # none: workload-6 only
    small: dict[str, dict] = {}
    with tempfile.TemporaryDirectory() as tmp:
        if args.workload_6 and not args.profile:
            if WORKLOAD_6[0].is_file():
                small = workload_6(Path(tmp))
            else:
                print(f"reference data not found at {REFERENCE}: workload-6 skipped")
        workloads = slices(days, Path(tmp)) if policies or args.profile else {}
        if args.profile:
            for span, path in workloads.items():
                print(f"{args.profile}, {span} days: {measure(args.profile, path, True)}")
            return
        spans = {s: float(s) for s in days if s != "all"}
        if "all" in workloads:
            import pandas as pd

            last = pd.read_csv(workloads["all"], usecols=["time"])["time"].max()
            spans["all"] = last / 86400.0
        results: dict[str, dict] = {}
        for policy in policies:
            results[policy] = {}
            for span, path in workloads.items():
                r = results[policy][span] = measure(policy, path)
                print(
                    f"{policy:9s} {span:>4s} days: {r['cpu_seconds']:8.1f} s CPU "
                    f"{r['wall_seconds']:8.1f} s wall {r['peak_mib']:7.0f} MiB "
                    f"{r['rounds']:7d} rounds {r['finished']:6d}/{r['jobs']} finished, "
                    f"average JCT {r['avg_jct']:.1f} s (load {r['load_before']:.1f} to "
                    f"{r['load_after']:.1f})",
                    flush=True,
                )
    if results:
        print("\nCPU seconds by days replayed (exponent: slope of log CPU on log days)")
        print(f"{'policy':9s}" + "".join(f"{s:>10s}" for s in days) + "  exponent")
    for policy, points in results.items():
        fit = exponent(points, spans)
        cells = "".join(f"{points[s]['cpu_seconds']:10.1f}" for s in days)
        print(f"{policy:9s}{cells}  {'-' if fit is None else f'{fit:.2f}'}")
    if any("all" in points for points in results.values()):
        print("\nwhole log: CPU seconds and peak memory per policy")
        for policy, points in results.items():
            if "all" in points:
                r = points["all"]
                print(f"{policy:9s} {r['cpu_seconds']:8.1f} s CPU {r['peak_mib']:7.0f} MiB")
    failed = []
    for policy, points in results.items():
        for span, r in points.items():
            bar = BARS.get((policy, span), BARS.get(("*", span)))
            if bar is None:
                continue
            cpu, mib = bar
            if r["cpu_seconds"] > cpu:
                failed.append(f"{policy} {span}: {r['cpu_seconds']:.0f} s CPU > {cpu:.0f} s")
            if r["peak_mib"] > mib:
                failed.append(f"{policy} {span}: {r['peak_mib']:.0f} MiB > {mib:.0f} MiB")
    for name, r in small.items():
        if WORKLOAD_6_BARS[name] is not None and r["cpu_seconds"] > WORKLOAD_6_BARS[name]:
            bar = WORKLOAD_6_BARS[name]
            failed.append(f"workload-6 {name}: {r['cpu_seconds']:.2f} s CPU > {bar:.0f} s")
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
            "workload_6": small or saved.get("workload_6", {}),
        },
    )
    print("bars: " + ("all met" if not failed else "missed: " + "; ".join(failed)))


if __name__ == "__main__":
    main()
