"""The main job's claims on the bundled default workload (all five policies, ~30 s)."""

from __future__ import annotations

import pandas as pd
import pytest

from goodput_sim.api import DEFAULT_POLICIES, compare


@pytest.fixture(scope="module")
def comparison():
    return compare(DEFAULT_POLICIES, workers=2)


def test_goodput_has_the_lowest_average_jct(comparison):
    jct = comparison.summary["avg_jct"]
    assert jct.idxmin() == "goodput", jct.to_dict()
    assert (comparison.summary["unfinished"] == 0).all()


def test_throughput_only_shows_the_seeds_effect(comparison):
    """More examples per GPU-second of training, yet a longer average JCT than goodput."""
    s = comparison.summary
    assert (
        s.loc["throughput", "examples_per_gpu_second"] > s.loc["goodput", "examples_per_gpu_second"]
    )
    assert s.loc["throughput", "examples"] > s.loc["goodput", "examples"]
    assert s.loc["throughput", "avg_jct"] > s.loc["goodput", "avg_jct"]


def test_claim_check_reports_every_baseline(comparison):
    versus = comparison.claim["versus"]
    assert set(versus) == set(DEFAULT_POLICIES) - {"goodput"}
    for name, entry in versus.items():
        expected = (
            1
            - comparison.summary.loc["goodput", "avg_jct"] / comparison.summary.loc[name, "avg_jct"]
        )
        assert entry["reduction"] == pytest.approx(expected)


def test_same_results_in_one_process_or_two():
    one = compare(("fifo", "tiresias"), workers=1)
    two = compare(("fifo", "tiresias"), workers=2)
    for name in ("fifo", "tiresias"):
        pd.testing.assert_frame_equal(one.results[name].jobs, two.results[name].jobs)
