"""Every combination of the golden matrix gives byte-identical results to its recorded digest
(see tests/golden_matrix.py for what it covers and how a digest is deliberately regenerated)."""

from __future__ import annotations

import json

import pytest
from golden_matrix import MATRIX_FILE, cases, digest

GOLDEN = json.loads(MATRIX_FILE.read_text())
CASES = cases()


def test_the_matrix_covers_every_recorded_key():
    assert sorted(CASES) == sorted(GOLDEN)


@pytest.mark.parametrize("key", sorted(CASES))
def test_matrix_run_matches_its_golden_digest(key):
    assert digest(CASES[key]()) == GOLDEN[key]
