"""Shared pieces of the benchmarks: machine description, result files, child-process runs."""

from __future__ import annotations

import json
import os
import platform
import resource
import sys
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

import numpy as np

RESULTS = Path(__file__).parent / "results"
REFERENCE = Path(__file__).resolve().parents[1].parent / "shared" / "reference" / "pollux-osdi21"


def machine() -> dict:
    """What the figures were measured on."""
    import scipy

    return {
        "cpus": os.cpu_count(),
        "platform": platform.platform(),
        "python": sys.version.split()[0],
        "numpy": np.__version__,
        "scipy": scipy.__version__,
    }


def save(name: str, report: dict) -> dict | None:
    """Write ``results/<name>.json``; return the previous report, if any, for comparison."""
    RESULTS.mkdir(exist_ok=True)
    path = RESULTS / f"{name}.json"
    previous = json.loads(path.read_text()) if path.exists() else None
    path.write_text(json.dumps(report, indent=2, sort_keys=True) + "\n")
    return previous


def peak_rss_mib() -> float:
    """Peak resident memory of this process (Linux reports KiB)."""
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0


def in_fresh_process(function, *args):
    """Run ``function(*args)`` in a new process, so its peak memory is its own."""
    with ProcessPoolExecutor(max_workers=1, max_tasks_per_child=1) as pool:
        return pool.submit(function, *args).result()
