"""A million-job workload through the command line: ``workload generate``, ``workload check``
and ``run --horizon 60`` (goodput on 16x4), each in its own process, with wall time and peak
memory. Bars: the run (loading, checking, simulating and writing results) in under 2 minutes
and 2 GB.

    python benchmarks/bench_million_rows.py [--jobs 1000000]
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from common import machine, save

BARS = {"run": (120.0, 2048.0)}  # seconds, MiB


# A wrapper process runs the command and reports its peak memory alone (a process's children's
# ru_maxrss is the largest child's, so it is measured one command per wrapper).
WRAPPER = (
    "import resource, subprocess, sys\n"
    "code = subprocess.run(sys.argv[1:]).returncode\n"
    "print(resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss, file=sys.stderr)\n"
    "sys.exit(code)\n"
)


def timed(command: list[str]) -> dict:
    """Run one CLI command in a fresh process; its wall seconds and peak resident MiB."""
    started = time.perf_counter()
    done = subprocess.run(
        [sys.executable, "-c", WRAPPER, sys.executable, "-m", "goodput_sim", *command],
        capture_output=True,
        text=True,
    )
    wall = time.perf_counter() - started
    *messages, peak_kib = done.stderr.strip().splitlines()
    if done.returncode != 0:
        raise SystemExit(f"{' '.join(command)} failed: {' '.join(messages)}")
    return {"wall_seconds": wall, "peak_rss_mib": int(peak_kib) / 1024}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--jobs", type=int, default=1_000_000)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="million-rows-") as scratch:
        workload = str(Path(scratch) / "big.csv")
        steps = {
            "generate": ["workload", "generate", "--jobs", str(args.jobs), "-o", workload],
            "check": ["workload", "check", workload],
            "run": ["run", "--policy", "goodput", "--workload", workload, "--horizon", "60"]
            + ["--quiet", "--no-plot", "--out", str(Path(scratch) / "out")],
        }
        measured = {name: timed(command) for name, command in steps.items()}
    print(f"{args.jobs:,} jobs on {machine()['platform']}, {machine()['cpus']} CPUs")
    for name, m in measured.items():
        bar = BARS.get(name)
        verdict = (
            ""
            if bar is None
            else (
                "  ok"
                if m["wall_seconds"] < bar[0] and m["peak_rss_mib"] < bar[1]
                else "  OVER BAR"
            )
        )
        print(f"  {name:<9} {m['wall_seconds']:7.1f} s  {m['peak_rss_mib']:7.0f} MiB{verdict}")
    save(
        "million_rows",
        {
            "machine": machine(),
            "jobs": args.jobs,
            "bars": {k: {"seconds": s, "mib": mb} for k, (s, mb) in BARS.items()},
            **{
                k: {"wall_seconds": m["wall_seconds"], "peak_rss_mib": m["peak_rss_mib"]}
                for k, m in measured.items()
            },
        },
    )


if __name__ == "__main__":
    main()
