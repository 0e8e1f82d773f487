"""Results of today's policies are byte-identical to the recorded golden digests."""

from __future__ import annotations

import json

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
