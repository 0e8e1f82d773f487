"""Results of today's policies are byte-identical to the recorded golden digests."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from golden import GOLDEN_FILE, POLICIES, VARIANTS, cases, digests

GOLDEN = json.loads(GOLDEN_FILE.read_text())


@pytest.mark.parametrize("policy", POLICIES)
@pytest.mark.parametrize("workload", ["default", "workload-6"])
def test_results_match_golden_digests(workload, policy):
    found = cases()
    if workload not in found:
        pytest.skip("workload-6 needs the reference data at ../shared/reference/pollux-osdi21")
    assert digests(policy, *found[workload]) == GOLDEN[f"{workload}/{policy}"]


@pytest.mark.parametrize("key", sorted(VARIANTS))
def test_engine_option_variants_match_golden_digests(key):
    policy, workload, config = VARIANTS[key]
    found = cases()
    if workload not in found:
        pytest.skip(f"{workload} needs the reference data at ../shared/reference/pollux-osdi21")
    assert digests(policy, *found[workload], config) == GOLDEN[key]


def _dispatched_simd_levels() -> list[str]:
    """The SIMD levels numpy picks among at run time above its build's baseline (private
    numpy API; empty when unavailable)."""
    try:
        from numpy._core._multiarray_umath import __cpu_dispatch__
    except ImportError:
        return []
    return list(__cpu_dispatch__)


def test_fitted_policies_do_not_depend_on_numpys_simd_level():
    """The throughput fits' ``log`` and ``**`` round differently under numpy's AVX-512 routines
    than at its baseline (the fitted parameters' last bits differ), yet the runs of the policies
    that fit, held to 8 digits, are the same on a CPU without those extensions."""
    levels = _dispatched_simd_levels()
    if not levels:
        pytest.skip("this numpy does not report the SIMD levels it dispatches to")
    program = (
        "import json, sys\n"
        "sys.path.insert(0, sys.argv[1])\n"
        "from golden import cases, digests\n"
        "print(json.dumps({f'{w}/{p}': digests(p, *found) for w, found in cases().items()\n"
        "                  for p in ('throughput', 'goodput')}))\n"
    )
    env = {**os.environ, "NPY_DISABLE_CPU_FEATURES": " ".join(levels)}
    done = subprocess.run(
        [sys.executable, "-c", program, str(Path(__file__).parent)],
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr
    found = json.loads(done.stdout.strip().splitlines()[-1])
    assert found == {key: GOLDEN[key] for key in found}
