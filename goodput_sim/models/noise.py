"""Gradient-noise-scale estimation (seed 002; McCandlish et al., 2018, appendix A).

A batch gradient at batch size B has expected squared norm ``E|G_B|^2 = |G|^2 + tr(Sigma)/B``,
with ``G`` the true gradient and ``Sigma`` the per-example gradient covariance. Two measurements
at different batch sizes, or q microbatch gradients and their mean, give unbiased estimates of
``|G|^2`` and ``tr(Sigma)``; their ratio is the simple noise scale ``B_simple = tr(Sigma)/|G|^2``,
the critical batch size of the seed's trade-off curve.

The reference measurements (Pollux artifact, SPEC 4.4) store ``grad_sqr`` = ``|G|^2`` and
``grad_var`` = ``tr(Sigma)/M0``, the gradient variance at the reference batch M0; so
``B_simple = M0 * grad_var / grad_sqr`` (:func:`grad_stats_from_estimates` converts).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from numpy.typing import ArrayLike


@dataclass(frozen=True)
class NoiseEstimate:
    """Unbiased estimates of the true gradient's squared norm and the covariance trace."""

    grad_norm_sq: float  # |G|^2
    trace: float  # tr(Sigma), per example

    @property
    def simple_noise_scale(self) -> float:
        """``tr(Sigma)/|G|^2`` (inf where the gradient estimate is not positive)."""
        return simple_noise_scale(self.grad_norm_sq, self.trace)


def simple_noise_scale(grad_norm_sq: float, trace: float) -> float:
    """``B_simple = tr(Sigma)/|G|^2``; inf where ``|G|^2`` is not positive."""
    return float(trace / grad_norm_sq) if grad_norm_sq > 0 else float("inf")


def two_batch_estimates(
    norm_sq_small: float, norm_sq_big: float, batch_small: float, batch_big: float
) -> NoiseEstimate:
    """Estimates from squared gradient norms measured at two batch sizes (``small < big``).

    Both are linear in the measurements, so unbiased whenever the measurements are:
    ``|G|^2 = (B_big |G_big|^2 - B_small |G_small|^2)/(B_big - B_small)`` and
    ``tr(Sigma) = (|G_small|^2 - |G_big|^2)/(1/B_small - 1/B_big)``."""
    if not 0 < batch_small < batch_big:
        raise ValueError(f"need 0 < batch_small < batch_big, got {batch_small}, {batch_big}")
    grad = (batch_big * norm_sq_big - batch_small * norm_sq_small) / (batch_big - batch_small)
    trace = (norm_sq_small - norm_sq_big) / (1.0 / batch_small - 1.0 / batch_big)
    return NoiseEstimate(float(grad), float(trace))


def microbatch_estimates(microbatch_grads: ArrayLike, microbatch_size: int) -> NoiseEstimate:
    """Estimates from the gradients of q >= 2 disjoint microbatches of ``microbatch_size``.

    Each microbatch gradient has covariance ``Sigma/b``, so the sample variance around their
    mean, times b, estimates ``tr(Sigma)``; the mean's squared norm overstates ``|G|^2`` by
    ``tr(Sigma)/(q b)``, which is subtracted."""
    grads = np.asarray(microbatch_grads, dtype=np.float64)
    if grads.ndim != 2 or grads.shape[0] < 2:
        raise ValueError("need gradients of at least two microbatches, shape (q, dims)")
    q, b = grads.shape[0], float(microbatch_size)
    mean = grads.mean(axis=0)
    trace = b * float(np.sum((grads - mean) ** 2)) / (q - 1)
    return NoiseEstimate(float(np.sum(mean**2)) - trace / (q * b), trace)


def grad_stats_from_estimates(
    estimate: NoiseEstimate, init_batch_size: float
) -> tuple[float, float]:
    """The reference's (grad_sqr, grad_var) from an estimate: ``(|G|^2, tr(Sigma)/M0)``."""
    return estimate.grad_norm_sq, estimate.trace / init_batch_size


class RunningNoiseScale:
    """Exponential moving averages of ``|G|^2`` and ``tr(Sigma)`` estimates, bias-corrected as in
    Adam, and their ratio: a running noise scale that does not jitter with each noisy estimate
    (averaging the two parts, not the ratio, keeps it unbiased-in-the-limit; seed 002, 004)."""

    def __init__(self, decay: float = 0.9):
        if not 0 <= decay < 1:
            raise ValueError(f"decay must lie in [0, 1), got {decay}")
        self.decay = decay
        self._grad = self._trace = 0.0
        self._weight = 0.0  # 1 - decay**updates, the bias correction

    def update(self, estimate: NoiseEstimate) -> float:
        """Fold in one estimate; returns the current noise scale."""
        d = self.decay
        self._grad = d * self._grad + (1 - d) * estimate.grad_norm_sq
        self._trace = d * self._trace + (1 - d) * estimate.trace
        self._weight = d * self._weight + (1 - d)
        return self.value

    @property
    def estimate(self) -> NoiseEstimate:
        if self._weight == 0:
            raise ValueError("no estimate folded in yet")
        return NoiseEstimate(self._grad / self._weight, self._trace / self._weight)

    @property
    def value(self) -> float:
        return self.estimate.simple_noise_scale
