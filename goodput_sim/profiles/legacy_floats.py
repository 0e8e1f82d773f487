"""Decimal numbers read as pandas read them by default before version 2.0.

That reader keeps the first 17 digits, counting the zeros before the first nonzero one
(``0.029921427369117737`` becomes ``0.0299214273691177``), builds them into one floating
number digit by digit and scales it by a power of ten: a step time of a few hundredths of a
second loses its 18th digit, some units in the last place of the nearest double. The
reference simulators read their measurements that way. Step times a few last bits apart are
the same measurement, but a model fitted to them can round a Sia value to the other side of
0.01 and so change an allocation: job-by-job comparisons with those simulators read the
measurements as they did (``load_profiles(..., legacy_floats=True)``).
"""

from __future__ import annotations

import re
from collections.abc import Iterable

import numpy as np
from numpy.typing import NDArray

_POWERS = tuple(float(f"1e{k}") for k in range(309))
_NUMBER = re.compile(r"\s*([+-]?)(\d*)(?:\.(\d*))?(?:[eE]([+-]?\d+))?\s*")
MAX_DIGITS = 17


def legacy_float(text: str) -> float:
    """``text`` as pandas' default reader before 2.0 reads it; ValueError if not a number."""
    match = _NUMBER.fullmatch(text)
    if match is None or not (match.group(2) or match.group(3)):
        raise ValueError(f"not a decimal number: {text!r}")
    sign, whole, fraction, power = match.groups()
    digits = whole + (fraction or "")
    kept = digits[:MAX_DIGITS]
    number = 0.0
    for digit in kept:
        number = number * 10.0 + (ord(digit) - 48)
    # Integer digits past the seventeenth scale the number up; fraction digits past it are lost.
    exponent = max(len(whole) - MAX_DIGITS, 0) - max(len(kept) - len(whole), 0)
    exponent += int(power or 0)
    if sign == "-":
        number = -number
    if exponent > 308:
        return float("inf") if number > 0 else float("-inf") if number < 0 else 0.0
    if exponent > 0:
        return number * _POWERS[exponent]
    if exponent < -308:
        return 0.0 if exponent < -616 else number / _POWERS[-308 - exponent] / _POWERS[308]
    return number / _POWERS[-exponent]


def legacy_floats(texts: Iterable[str]) -> NDArray[np.float64]:
    """Each text as :func:`legacy_float` reads it."""
    return np.array([legacy_float(t) for t in texts], dtype=np.float64)
