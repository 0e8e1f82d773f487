"""Comparing sia's round programs with the reference simulator's
(:mod:`goodput_sim.experiments.sia_programs`)."""

from __future__ import annotations

import json

import numpy as np

from goodput_sim.experiments.sia_programs import (
    ProgramRound,
    first_difference,
    read_reference_programs,
)

PARAMS = [0.1, 0.01, 0.1, 0.01, 0.1, 0.01, 1.001]


def reference_file(tmp_path, values, params=PARAMS, stats=(8.9, 5.1)):
    """A file as benchmarks/sia_reference_hook.py writes it: two rounds."""
    entry = {
        "jobs": ["a", "b"],
        "configs": ["aws:1:1", "aws:1:2"],
        "values": values,
        "beliefs": {"a": {"aws": [params, list(stats)], "rtx": None}, "b": {"aws": None}},
    }
    path = tmp_path / "programs.json"
    path.write_text(json.dumps([entry, entry]))
    return path


def ours(values, params=PARAMS, stats=(8.9, 5.1)):
    beliefs = {"a": {"aws": (tuple(params), stats), "rtx": None}, "b": {"aws": None}}
    return ProgramRound(("a", "b"), ("aws:1:1", "aws:1:2"), np.array(values), beliefs)


def test_equal_programs_agree(tmp_path):
    theirs = read_reference_programs(reference_file(tmp_path, [[1.0, 0.5], [1.0, 0.7]]))
    assert first_difference([ours([[1.0, 0.5], [1.0, 0.7]])] * 2, theirs) is None


def test_a_value_a_belief_and_the_jobs_are_each_found(tmp_path):
    theirs = read_reference_programs(reference_file(tmp_path, [[1.0, 0.5], [1.0, 0.7]]))
    found = first_difference([ours([[1.0, 0.5], [1.0, 0.71]])] * 2, theirs)
    assert found == (0, ["b at aws:1:2: A 0.71 against 0.70"])
    # a cell the job may not take (NaN on our side) is not compared
    assert first_difference([ours([[1.0, 0.5], [1.0, np.nan]])] * 2, theirs) is None
    changed = [*PARAMS[:6], 1.002]
    found = first_difference([ours([[1.0, 0.5], [1.0, 0.7]], params=changed)] * 2, theirs)
    assert found[0] == 0 and found[1][0].startswith("a on aws: parameters")
    late = [ours([[1.0, 0.5], [1.0, 0.7]]), ours([[1.0, 0.5], [1.0, 0.7]], stats=(8.9, 5.0))]
    assert first_difference(late, theirs)[0] == 1
    other_jobs = ProgramRound(("b", "a"), ("aws:1:1", "aws:1:2"), np.ones((2, 2)), {})
    assert first_difference([other_jobs], theirs)[1][0].startswith("jobs:")
