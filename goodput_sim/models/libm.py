"""``numpy.power``, ``numpy.log`` and ``numpy.log10`` as numpy computes them at its baseline
SIMD level, on every CPU: the C library's ``pow``, ``log`` and ``log10``, and numpy's shortcuts
for a scalar exponent.

On a CPU with AVX-512 numpy switches to vector routines that round differently in the last
bit. Where a result turns on such a bit (a per-GPU batch rounded up, one of two equal
allocations), the simulator's choices moved from one machine to another; these functions keep
them where an AVX2 machine puts them.
"""

from __future__ import annotations

import math

import numba
import numpy as np
from numpy.typing import ArrayLike, NDArray

from goodput_sim.numba_cache import use_writable_cache

use_writable_cache()  # a read-only installation caches elsewhere
_jit = numba.njit(cache=True, nogil=True, error_model="numpy")


@_jit
def scalar_power(x, exponent):
    """``np.power(x, exponent)`` of one element for a scalar exponent at numpy's baseline SIMD
    level: its shortcuts for 2, 0.5 and -1 (square, square root, reciprocal), else ``pow``."""
    if exponent == 2.0:
        return x * x
    if exponent == 0.5:
        return math.sqrt(x)
    if exponent == -1.0:
        return 1.0 / x
    return math.pow(x, exponent)


@_jit
def _power_by(base, exponent):
    out = np.empty(base.shape[0])
    for i in range(base.shape[0]):
        out[i] = scalar_power(base[i], exponent)
    return out


@_jit
def _power_each(base, exponent):
    out = np.empty(base.shape[0])
    for i in range(base.shape[0]):
        out[i] = math.pow(base[i], exponent[i])
    return out


@_jit
def _logs(values, decimal):
    out = np.empty_like(values)
    for i in range(values.shape[0]):
        out[i] = math.log10(values[i]) if decimal else math.log(values[i])
    return out


def power(base: ArrayLike, exponent: ArrayLike) -> NDArray:
    """``np.power(base, exponent)`` in double precision as at numpy's baseline SIMD level: a
    scalar exponent takes numpy's shortcuts (:func:`scalar_power`), an array of them does not."""
    if np.ndim(exponent) == 0:
        base = np.asarray(base, dtype=np.float64)
        flat = _power_by(np.ascontiguousarray(base).reshape(-1), float(exponent))
        return flat.reshape(base.shape)
    left, right = np.broadcast_arrays(
        np.asarray(base, dtype=np.float64), np.asarray(exponent, dtype=np.float64)
    )
    flat = _power_each(
        np.ascontiguousarray(left).reshape(-1), np.ascontiguousarray(right).reshape(-1)
    )
    return flat.reshape(left.shape)


def log(values: ArrayLike) -> NDArray:
    """``np.log(values)`` in double precision as at numpy's baseline SIMD level (1-D)."""
    return _logs(np.ascontiguousarray(values, dtype=np.float64), False)


def log10(values: ArrayLike) -> NDArray:
    """``np.log10(values)`` as at numpy's baseline SIMD level, in the values' precision."""
    values = np.asarray(values)
    return _logs(np.ascontiguousarray(values).reshape(-1), True).reshape(values.shape)
