"""Job-level comparison with the Sia reference's per-job results (``make validate``)."""

from __future__ import annotations

import pandas as pd
import pytest

from goodput_sim.experiments.validate import JobLevelBar, compare_jobs

BAR = JobLevelBar("gavel", "workload-1", "x.csv", 0.05, within_share=0.70)


def test_pairs_by_name_whatever_the_order():
    reference = pd.DataFrame({"name": ["a", "b", "c", "d"], "jct": [100.0, 200.0, 300.0, 400.0]})
    ours = pd.DataFrame({"name": ["d", "c", "b", "a"], "jct": [400.0, 320.0, 200.0, 100.0]})
    result = compare_jobs(ours, reference, BAR)
    assert result.avg_ratio == pytest.approx(1020 / 1000)
    assert result.within_share == 1.0 and result.median_error == 0.0
    assert result.passed
    worse = compare_jobs(ours.assign(jct=[400.0, 400.0, 200.0, 100.0]), reference, BAR)
    assert worse.within_share == 0.75 and not worse.passed  # 1100 / 1000: over 5%


def test_missing_and_extra_jobs_are_named():
    reference = pd.DataFrame({"name": ["a", "b"], "jct": [1.0, 2.0]})
    ours = pd.DataFrame({"name": ["a", "z"], "jct": [1.0, 2.0]})
    with pytest.raises(ValueError, match=r"missing here \['b'\].*not in the reference \['z'\]"):
        compare_jobs(ours, reference, BAR)
