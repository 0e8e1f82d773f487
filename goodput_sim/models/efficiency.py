"""Statistical efficiency from the gradient noise scale (SPEC 4.1, seed 002).

With ``sqr`` = |grad L|^2 and ``var`` = tr(Sigma) normalised to the reference batch ``M0``, one
optimizer step at total batch ``M`` makes ``gain(M)`` steps' worth of progress at ``M0``, between
1 and ``M/M0``. Efficiency ``gain/(M/M0) = (phi + M0)/(phi + M)`` with noise scale
``phi = M0 * var/sqr``, the critical batch size of McCandlish et al. (2018).
"""

from __future__ import annotations

import numpy as np
from numpy.typing import ArrayLike, NDArray

from goodput_sim.models.noise import grad_stats_from_estimates, microbatch_estimates


def gain(batch_size: ArrayLike, init_batch_size: float, sqr: ArrayLike, var: ArrayLike) -> NDArray:
    """Progress per step at ``batch_size``, in steps at ``init_batch_size`` (1 if undefined)."""
    scale = np.asarray(batch_size, dtype=np.float64) / init_batch_size
    sqr = np.asarray(sqr, dtype=np.float64)
    var = np.asarray(var, dtype=np.float64)
    denominator = var / scale + sqr
    ok = denominator > 0
    return np.where(ok, (var + sqr) / np.where(ok, denominator, 1.0), 1.0)


def efficiency(
    batch_size: ArrayLike, init_batch_size: float, sqr: ArrayLike, var: ArrayLike
) -> NDArray:
    """Progress per example relative to training at ``init_batch_size``: ``gain / (M/M0)``."""
    scale = np.asarray(batch_size, dtype=np.float64) / init_batch_size
    return gain(batch_size, init_batch_size, sqr, var) / scale


def noise_scale(init_batch_size: float, sqr: ArrayLike, var: ArrayLike) -> NDArray:
    """Gradient noise scale ``phi = M0 * var / sqr`` (the critical batch size), inf if sqr = 0."""
    sqr = np.asarray(sqr, dtype=np.float64)
    with np.errstate(divide="ignore"):
        return np.where(
            sqr > 0, init_batch_size * np.asarray(var) / np.where(sqr > 0, sqr, 1.0), np.inf
        )


def steps_and_examples(batch_size: ArrayLike, critical_batch: float) -> tuple[NDArray, NDArray]:
    """Seed 002 trade-off: steps S/S_min = 1 + B_crit/B, examples E/E_min = 1 + B/B_crit."""
    b = np.asarray(batch_size, dtype=np.float64)
    return 1.0 + critical_batch / b, 1.0 + b / critical_batch


def estimate_grad_stats(
    sub_batch_grads: ArrayLike, sub_batch_size: int, init_batch_size: float
) -> tuple[float, float]:
    """Unbiased (sqr, var) from gradients of q >= 2 disjoint equal sub-batches (SPEC 4.4, seed
    002): ``|grad L|^2`` and ``tr(Sigma)`` at batch ``M0``, from
    :func:`goodput_sim.models.noise.microbatch_estimates`."""
    estimate = microbatch_estimates(sub_batch_grads, sub_batch_size)
    return grad_stats_from_estimates(estimate, init_batch_size)
