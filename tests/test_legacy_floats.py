"""Decimals read as pandas' default reader before 2.0 read them
(:mod:`goodput_sim.profiles.legacy_floats`), as the reference simulators read their
measurements."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from goodput_sim.profiles import load_profiles
from goodput_sim.profiles.legacy_floats import legacy_float, legacy_floats

SIA = Path(__file__).resolve().parents[1].parent / "shared" / "reference" / "sia-sosp23"


@pytest.mark.parametrize(
    ("text", "read"),
    [  # as pandas 1.5.3's read_csv reads them (checked by running it)
        ("0.029921427369117737", 0.0299214273691177),  # 17 digits kept, counting the first 0
        ("0.0007297920100390909", 0.000729792010039),
        ("1e-08", 1e-08),
        ("123.5", 123.5),
        ("-2.5E+3", -2500.0),
        (" 64 ", 64.0),
        (".5", 0.5),
    ],
)
def test_known_readings(text, read):
    assert legacy_float(text) == read


def test_digits_past_the_seventeenth_are_dropped():
    """The 18th digit of ``0.029921427369117737`` is lost: a few units in the last place."""
    text = "0.029921427369117737"
    error = abs(legacy_float(text) - float(text))
    assert math.ulp(float(text)) < error < 1e-16


@pytest.mark.parametrize("text", ["", "abc", "1.2.3", "e5", "."])
def test_not_a_number(text):
    with pytest.raises(ValueError, match="not a decimal number"):
        legacy_float(text)


@given(st.integers(0, 10**15 - 1), st.integers(0, 15))
def test_short_decimals_are_read_exactly(digits, scale):
    """Up to 15 significant digits and small powers of ten, the digits and the scale are exact
    doubles and one division rounds correctly: the nearest double, as ``float`` reads it."""
    text = f"{digits / 10**scale:.{scale}f}" if scale else str(digits)
    assert legacy_float(text) == float(text)


def test_legacy_profiles_differ_only_in_the_last_bits():
    """The Sia measurements read both ways: every step time within 1e-14 of itself, some not
    equal (the reason the option exists)."""
    if not (SIA / "traces").is_dir():
        pytest.skip(f"Sia reference data not found at {SIA}")
    exact = load_profiles(SIA / "traces")["cifar10"].for_type("dgx-ext")
    legacy = load_profiles(SIA / "traces", legacy_floats=True)["cifar10"].for_type("dgx-ext")
    a = exact.placements["step_time"].to_numpy()
    b = legacy.placements["step_time"].to_numpy()
    np.testing.assert_allclose(b, a, rtol=1e-14, atol=0)
    assert np.any(a != b)
    assert legacy.step_sync((2,), 64.0)[0] == 0.0299214273691177
    assert legacy_floats(["1.5", "2"]).tolist() == [1.5, 2.0]
