"""Run the benchmarks (``make bench``); the long Philly-scale runs are ``make bench-scale`` and
``make bench-philly``."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).parent

if __name__ == "__main__":
    failed = 0
    for script in sorted(HERE.glob("bench_*.py")):
        if script.name in ("bench_scale.py", "bench_philly.py"):  # their own make targets
            continue
        print(f"== {script.name}", flush=True)
        failed += subprocess.call([sys.executable, str(script)]) != 0
    sys.exit(1 if failed else 0)
