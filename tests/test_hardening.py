"""Every hostile case of ``hostile_cases`` (the issue's examples, one per root cause and
surface) ends as it must: refused in one line, run, or stopped by a guard with exit 3; never a
traceback, a hang, a multi-line error or a refusal that leaves files behind."""

from __future__ import annotations

import tempfile
from pathlib import Path

import pytest
from hostile_cases import all_cases, make_bases, run_case

CASES = all_cases(make_bases(Path(tempfile.mkdtemp(prefix="hostile-bases-"))))


@pytest.mark.parametrize("index", range(len(CASES)), ids=[f"{c.surface}: {c.what}" for c in CASES])
def test_hostile_case(index, tmp_path):
    case = CASES[index]
    outcome = run_case(case, tmp_path / "case", timeout=150)  # 10x the slowest case
    assert outcome["outcome"] in case.expect, outcome
