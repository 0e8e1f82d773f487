"""Results of today's policies are byte-identical to the recorded golden digests."""

from __future__ import annotations

import json

import pytest
from golden import GOLDEN_FILE, POLICIES, VARIANTS, cases, digests
from golden_matrix import MATRIX_FILE
from machine import simd_levels, without_simd

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


def test_fitted_policies_do_not_depend_on_numpys_simd_level():
    """The throughput fits' ``log`` and ``**`` round differently under numpy's AVX-512 routines
    than at its baseline, yet the runs of the policies that fit give the recorded digests on a
    CPU without those extensions: goodput's and throughput's held to 8 digits, sia's (whose
    ties turn on last bits) because its fit takes ``log`` and ``power`` from the C library."""
    if not simd_levels():
        pytest.skip("this numpy does not report the SIMD levels it dispatches to")
    found = without_simd(
        "import json\n"
        "from golden import cases, digests\n"
        "from golden_matrix import cases as matrix, digest\n"
        "found = {f'{w}/{p}': digests(p, *found) for w, found in cases().items()\n"
        "         for p in ('throughput', 'goodput')}\n"
        "found |= {k: digest(matrix()[k]()) for k in ('homogeneous/sia', 'sia-mix/sia')}\n"
        "print(json.dumps(found))\n"
    )
    golden = GOLDEN | json.loads(MATRIX_FILE.read_text())
    assert found == {key: golden[key] for key in found}
