"""The critical batch size (seed 002; McCandlish et al., 2018): the steps-examples trade-off
``S = S_min (1 + B_crit/B)``, ``E = E_min (1 + B/B_crit)`` with ``E_min = S_min B_crit``, fitted
to (steps, examples) pairs, and how an application's noise scale moves during training.

Two cautions, both reported by :func:`critical_batch_report`. The fit to the simulator's own
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

from goodput_sim.models.efficiency import gain, noise_scale
from goodput_sim.profiles.base import ApplicationProfile
from goodput_sim.profiles.typed import TypedProfile

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


def noise_trajectory(profile: ApplicationProfile) -> NoiseTrajectory:
    """How the critical batch moves from the start to the end of training (seed 002)."""
    lim = profile.limits
    epochs = np.arange(lim.max_epochs)
    sqr, var = profile.grad_stats(lim.init_batch_size, epochs)
    progress = profile.progress_thresholds[:-1] / profile.total_progress
    return NoiseTrajectory(profile.name, progress, noise_scale(lim.init_batch_size, sqr, var))


def steps_and_examples_to_finish(
    profile: ApplicationProfile, batches: ArrayLike
) -> tuple[NDArray, NDArray]:
    """Optimizer steps and examples a job of ``profile`` needs to finish at each fixed total
    batch: each epoch's progress divided by the progress per step at that batch (SPEC 4.1),
    with the gradient statistics measured at that batch."""
    lim = profile.limits
    batches = np.asarray(batches, dtype=np.float64)
    epochs = np.arange(lim.max_epochs)
    needed = np.diff(profile.progress_thresholds)
    steps = np.empty(len(batches))
    for k, batch in enumerate(batches):
        sqr, var = profile.grad_stats(batch, epochs)
        steps[k] = float(np.sum(needed / gain(batch, lim.init_batch_size, sqr, var)))
    return steps, steps * batches


def profile_critical_batch(
    profile: ApplicationProfile, count: int = FIT_BATCHES
) -> CriticalBatchFit:
    """The critical-batch fit of a whole training run of ``profile``, from ``count`` fixed batch
    sizes spread geometrically over its valid range."""
    lim = profile.limits
    batches = np.geomspace(lim.init_batch_size, lim.max_batch_size, count)
    return fit_critical_batch(*steps_and_examples_to_finish(profile, batches))


def iterations_to_finish(
    profile: ApplicationProfile, batches: ArrayLike
) -> tuple[NDArray, NDArray]:
    """Optimizer steps and examples to finish at each fixed batch, read from the profile's own
    iteration counts (``iterations`` at the last epoch; for a measured profile, the measurement
    files, linear in the batch between measured batches)."""
    batches = np.asarray(batches, dtype=np.float64)
    steps = np.asarray(
        profile.iterations(batches, np.full(batches.shape, profile.limits.max_epochs - 1)),
        dtype=np.float64,
    )
    return steps, steps * batches


def profile_batches(profile: ApplicationProfile) -> NDArray | None:
    """The batch sizes the profile tabulates its statistics and iteration counts at (measured
    or validated), or None if it has none."""
    if isinstance(profile, TypedProfile):
        profile = profile.for_type(profile.gpu_types[0])
    sizes = getattr(profile, "batch_sizes", None)
    return None if sizes is None else np.asarray(sizes, dtype=np.float64)


def iterations_critical_batch(
    profile: ApplicationProfile, batches: ArrayLike | None = None
) -> CriticalBatchFit:
    """The critical-batch fit of the profile's own iteration counts at ``batches`` (default: the
    :data:`FIT_BATCHES` batches of :func:`profile_critical_batch`), to compare with it."""
    if batches is None:
        lim = profile.limits
        batches = np.geomspace(lim.init_batch_size, lim.max_batch_size, FIT_BATCHES)
    return fit_critical_batch(*iterations_to_finish(profile, batches))


def critical_batch_report(profiles: dict[str, ApplicationProfile]) -> list[dict]:
    """Per application: the noise scale at the start and end of training (its ratio), the
    critical-batch fit of the whole run, whether its B_crit lies beyond the largest batch (and
    how far), and the same fit to the profile's own iteration counts, at the fit's batches and
    at the profile's tabulated batches; the headline numbers of ``toy critical-batch``."""
    rows = []
    for name in sorted(profiles):
        profile = profiles[name]
        trajectory = noise_trajectory(profile)
        fit = profile_critical_batch(profile)
        by_iterations = iterations_critical_batch(profile)
        own = profile_batches(profile)
        at_own = None if own is None or len(own) < 2 else iterations_critical_batch(profile, own)
        largest = profile.limits.max_batch_size
        rows.append(
            {
                "application": name,
                "init_batch_size": profile.limits.init_batch_size,
                "max_batch_size": profile.limits.max_batch_size,
                "noise_scale_start": float(trajectory.noise_scale[0]),
                "noise_scale_end": float(trajectory.noise_scale[-1]),
                "growth": trajectory.growth,
                "s_min": fit.s_min,
                "e_min": fit.e_min,
                "b_crit": fit.b_crit,
                "fit_rms_log_error": fit.rms_log_error,
                "b_crit_over_max": fit.b_crit / largest,
                "b_crit_extrapolated": bool(fit.b_crit > largest),
                "b_crit_iterations": by_iterations.b_crit,
                "b_crit_iterations_extrapolated": bool(by_iterations.b_crit > largest),
                "iterations_fit_rms_log_error": by_iterations.rms_log_error,
                "b_crit_iterations_profile_batches": None if at_own is None else at_own.b_crit,
            }
        )
    return rows
