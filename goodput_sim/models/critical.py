"""The critical batch size (seed 002; McCandlish et al., 2018): the steps-examples trade-off
``S = S_min (1 + B_crit/B)``, ``E = E_min (1 + B/B_crit)`` with ``E_min = S_min B_crit``, fitted
to (steps, examples) pairs, and how an application's noise scale moves during training.

The fits of an application profile's whole run, and its noise scale over training, are in
:mod:`goodput_sim.profiles.critical`. Two cautions, both reported by its
:func:`~goodput_sim.profiles.critical.critical_batch_report`. The fit to the simulator's own
steps is close by construction: a job needs ``sum_e P_e / gain_e(B)`` steps, and with the gain
``(var + sqr) / (var M0/B + sqr)`` each epoch is ``S_e (1 + B_noise,e / B)``, so the sum is
exactly the curve ``(S/S_min - 1)(E/E_min - 1) = 1`` whenever the gradient statistics do not
depend on B; its small residual comes only from statistics that do. A good fit is therefore no
evidence that an application follows the law. And a B_crit beyond the largest batch the
profile holds (``limits.max_batch_size``) is an extrapolation: the fitted batches never reach
the bend of the curve."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from numpy.typing import ArrayLike, NDArray

FIT_BATCHES = 12
"""Fixed batch sizes per critical-batch fit, spread geometrically over the valid range."""


@dataclass(frozen=True)
class CriticalBatchFit:
    """``S_min`` (fewest steps), ``E_min`` (fewest examples) and ``B_crit = E_min/S_min``."""

    s_min: float
    e_min: float
    rms_log_error: float  # of steps and examples together

    @property
    def b_crit(self) -> float:
        return self.e_min / self.s_min

    def steps(self, batch: ArrayLike) -> NDArray:
        return self.s_min * (1.0 + self.b_crit / np.asarray(batch, dtype=np.float64))

    def examples(self, batch: ArrayLike) -> NDArray:
        return self.e_min * (1.0 + np.asarray(batch, dtype=np.float64) / self.b_crit)


def fit_critical_batch(steps: ArrayLike, examples: ArrayLike) -> CriticalBatchFit:
    """Fit ``S_min`` and ``E_min`` to runs that reached one target with (steps, examples).

    Each run's batch is ``B = E/S``, and ``S = S_min + E_min/B`` is linear in ``1/B``: linear
    least squares starts a log-space fit of both curves (relative errors, so runs of any size
    count alike)."""
    steps = np.asarray(steps, dtype=np.float64)
    examples = np.asarray(examples, dtype=np.float64)
    if steps.shape != examples.shape or steps.size < 2:
        raise ValueError("need at least two (steps, examples) pairs of equal length")
    if (steps <= 0).any() or (examples <= 0).any():
        raise ValueError("steps and examples must be positive")
    batch = examples / steps
    design = np.stack([np.ones_like(batch), 1.0 / batch], axis=1)
    (s_min, e_min), *_ = np.linalg.lstsq(design, steps, rcond=None)
    start = np.log(np.maximum([s_min, e_min], [steps.min() * 1e-3, examples.min() * 1e-3]))

    def residuals(log_params: NDArray) -> NDArray:
        s, e = np.exp(log_params)
        return np.concatenate(
            [np.log(s + e / batch) - np.log(steps), np.log(e + s * batch) - np.log(examples)]
        )

    from scipy.optimize import least_squares  # slow import, needed only here

    solution = least_squares(residuals, start, method="lm")
    s_min, e_min = np.exp(solution.x)
    rms = float(np.sqrt(np.mean(solution.fun**2)))
    return CriticalBatchFit(float(s_min), float(e_min), rms)


@dataclass(frozen=True)
class NoiseTrajectory:
    """An application's noise scale ``M0 * grad_var / grad_sqr`` per epoch, at batch M0."""

    application: str
    progress: NDArray  # fraction of total training progress at the start of each epoch
    noise_scale: NDArray  # examples

    @property
    def growth(self) -> float:
        """Last epoch's noise scale over the first's."""
        return float(self.noise_scale[-1] / self.noise_scale[0])
