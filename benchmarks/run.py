"""Run the benchmarks (``make bench``); the long Philly-scale run is ``make bench-scale``."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).parent

if __name__ == "__main__":
    failed = 0
    for script in sorted(HERE.glob("bench_*.py")):
        if script.name == "bench_scale.py":  # `make bench-scale`
            continue
        print(f"== {script.name}", flush=True)
        failed += subprocess.call([sys.executable, str(script)]) != 0
    sys.exit(1 if failed else 0)
