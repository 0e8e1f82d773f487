"""Compiled batch choice (:meth:`~goodput_sim.models.goodput.GoodputModel.choose`): each row's
best candidate batch by goodput (or examples per second), clamped as the job clamps it, in one
call.

A simulated day asks for tens of thousands of choices over a few dozen candidates each, so their
time was the fixed cost of about twenty numpy calls, not arithmetic. The kernel does the same
IEEE operations in the same order as those numpy expressions (Pollux's gain, SPEC 3.2; numpy's
``argmax`` rules, the first maximum or else the first NaN; ``np.minimum``/``np.maximum``, NaN
when either is), with no fast-math, so choices are bit-identical; the tests compare them."""

from __future__ import annotations

import numba
import numpy as np

from goodput_sim.models.fit_kernels import _nan_max, _nan_min
from goodput_sim.numba_cache import use_writable_cache

use_writable_cache()  # a read-only installation caches elsewhere
_jit = numba.njit(cache=True, nogil=True, error_model="numpy")  # x / 0 is inf, as in numpy


@_jit
def _progress_rate(total, t_iter, sqr, var, init):
    """``init * gain(total) / t_iter``, gain as :func:`goodput_sim.models.efficiency.gain`."""
    scale = total / init
    denominator = var / scale + sqr
    gain = (var + sqr) / denominator if denominator > 0 else 1.0
    return init * gain / t_iter


@_jit
def best_batches(
    total, t_iter, outside, sqr, var, replicas, local_bsz, accum, init, max_batch, statistical, rows
):
    """Per row, the best candidate's value, per-GPU batch and accumulation steps.

    ``total``, ``t_iter``, ``local_bsz``, ``accum`` and ``outside`` are the grid's (rows x
    candidates; ``outside`` empty when every candidate counts), ``replicas`` its rows' GPUs.
    With ``statistical``, the value is goodput at gradient statistics ``sqr``/``var`` (one per
    row, or one for all), otherwise examples per second. ``rows`` answers are made: a grid of
    one row serves them all. The batch is clamped to ``max_batch`` over the row's
    GPUs and accumulation steps, and to at least 1."""
    grid_rows, candidates = total.shape
    masked = outside.shape[0] > 0
    value = np.empty(rows)
    batch = np.empty(rows)
    steps = np.empty(rows)
    for i in range(rows):
        g = i if grid_rows == rows else 0
        s2 = sqr[i if sqr.shape[0] == rows else 0] if statistical else 0.0
        v2 = var[i if var.shape[0] == rows else 0] if statistical else 0.0
        best = 0
        top = 0.0
        for c in range(candidates):
            if masked and outside[g, c]:
                here = 0.0
            elif statistical:
                here = _progress_rate(total[g, c], t_iter[g, c], s2, v2, init)
            else:
                here = total[g, c] / t_iter[g, c]
            if c == 0 or here > top:
                best, top = c, here
            if here != here:  # argmax stops at the first NaN
                best, top = c, here
                break
        b, s = local_bsz[g, best], accum[g, best]
        largest = np.floor(max_batch / (replicas[g] * (s + 1.0)))
        value[i], batch[i], steps[i] = top, _nan_max(_nan_min(b, largest), 1.0), s
    return value, batch, steps
