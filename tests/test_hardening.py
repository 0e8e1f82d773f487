"""Every hostile case of ``hostile_cases`` (the issue's examples, one per root cause and
surface) ends as it must: refused in one line, run, or stopped by a guard with exit 3; never a
traceback, a hang, a multi-line error or a refusal that leaves files behind."""

from __future__ import annotations

import re
import tempfile
from pathlib import Path

import pytest
from hostile_cases import all_cases, make_bases, run_case

NOT_A_NUMBER = re.compile(r"(?i)(?<![\w.])-?(nan|inf)(?![\w])")
CASES = all_cases(make_bases(Path(tempfile.mkdtemp(prefix="hostile-bases-"))))


@pytest.mark.parametrize("index", range(len(CASES)), ids=[f"{c.surface}: {c.what}" for c in CASES])
def test_hostile_case(index, tmp_path):
    case = CASES[index]
    outcome = run_case(case, tmp_path / "case", timeout=150)  # 10x the slowest case
    printed = outcome.pop("stdout")
    assert outcome["outcome"] in case.expect, outcome
    if case.args[0] == "report" and outcome["outcome"] == "ran":
        assert not NOT_A_NUMBER.search(printed), printed  # '-' where a statistic is undefined
