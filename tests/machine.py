"""Running test code as on another CPU: numpy's run-time SIMD levels turned off."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path


def simd_levels() -> list[str]:
    """The SIMD levels numpy picks among at run time above its build's baseline (private
    numpy API; empty when unavailable)."""
    try:
        from numpy._core._multiarray_umath import __cpu_dispatch__
    except ImportError:
        return []
    return list(__cpu_dispatch__)


def without_simd(program: str):
    """The JSON that ``program`` prints last, run in a fresh process with numpy at its baseline
    SIMD level and the tests folder first on ``sys.path``."""
    env = {**os.environ, "NPY_DISABLE_CPU_FEATURES": " ".join(simd_levels())}
    header = f"import sys\nsys.path.insert(0, {str(Path(__file__).parent)!r})\nimport goodput_sim\n"
    done = subprocess.run(
        [sys.executable, "-c", header + program],
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout.strip().splitlines()[-1])
