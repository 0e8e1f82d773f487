"""The critical batch size of an application profile (seed 002): the fit of
:mod:`goodput_sim.models.critical` to the steps and examples a whole training run of the profile
needs at fixed batch sizes, the same fit to the profile's own iteration counts, and how its noise
scale moves during training; :func:`critical_batch_report` gathers them for
``goodput-sim toy critical-batch``."""

from __future__ import annotations

import numpy as np
from numpy.typing import ArrayLike, NDArray

from goodput_sim.models.critical import (
    FIT_BATCHES,
    CriticalBatchFit,
    NoiseTrajectory,
    fit_critical_batch,
)
from goodput_sim.models.efficiency import gain, noise_scale
from goodput_sim.profiles.base import ApplicationProfile
from goodput_sim.profiles.typed import TypedProfile


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
