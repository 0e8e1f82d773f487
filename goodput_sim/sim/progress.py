"""Training progress on ground truth: a job's per-epoch plan, and moving it through time.

Between two rounds a job's configuration is fixed, so its progress rate is piecewise constant
over epochs and the time each epoch boundary is reached follows from a cumulative sum
(:func:`epoch_crossing`, the one place that computes it, used both to advance a job and to
find its state at a checkpoint without advancing it).
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
from numpy.typing import NDArray

from goodput_sim.models.efficiency import gain
from goodput_sim.profiles.base import ApplicationProfile, iteration_seconds
from goodput_sim.sim.jobs import Job, Plan


def epoch_rates(
    profile: ApplicationProfile,
    layout: tuple[int, ...],
    local_bsz,
    accum,
    replicas: int,
    epochs: NDArray,
    slowdown: float = 0.0,
) -> tuple:
    """True (step, sync, total batch, iteration seconds, progress rate) of a configuration in
    each of ``epochs``: the ground truth a plan, and the finishability check, advance by."""
    step, sync = profile.step_sync(layout, local_bsz)
    total = replicas * local_bsz * (accum + 1)
    sqr, var = profile.grad_stats(total, epochs)
    iteration = iteration_seconds(step, sync, accum) / (1.0 - slowdown)
    if profile.slowdown != 1.0:  # calibration to real runs (Sia SPEC 3.5); beliefs are not slowed
        iteration = iteration * profile.slowdown
    rate = gain(total, profile.limits.init_batch_size, sqr, var) / iteration
    return step, sync, total, iteration, rate


def epoch_crossing(job: Job, plan: Plan, seconds: float) -> tuple[int, NDArray, NDArray]:
    """Training ``seconds`` from the job's current state on its plan: (epoch boundaries
    crossed, seconds each remaining epoch takes, their cumulative sum). ``crossed`` equal to
    the number of remaining epochs means the job finishes within ``seconds``."""
    thresholds = job.thresholds
    rates = plan.rate[job.epoch - plan.first_epoch :]
    # np.diff, np.cumsum and np.searchsorted without their wrappers' argument handling (the
    # same operations): this runs at every epoch boundary of every job.
    segments = thresholds[job.epoch + 1 :] - thresholds[job.epoch : -1]
    segments[0] = thresholds[job.epoch + 1] - job.progress
    durations = segments / rates
    cumulative = np.add.accumulate(durations)
    return int(cumulative.searchsorted(seconds, side="right")), durations, cumulative


def advance_job(
    job: Job, start: float, end: float, replan: Callable[[Job], object] | None = None
) -> None:
    """Move a running job from ``start`` to ``end`` on ground truth: its restart delay first,
    then training at its plan's rates (finishing it, with its exact finish time, if it ends).

    With ``replan``, the job stops at every epoch boundary it crosses and ``replan(job)`` may
    give it a new plan from there (its beliefs refitted on what it ran, its batch re-chosen),
    as the Sia artifact's jobs do (Sia SPEC 3.2), reaching each boundary after a whole number of
    seconds as they do; without it, the plan holds until ``end``."""
    t = start + min(job.restart_remaining, end - start)
    job.restart_remaining -= t - start
    job.restart_gpu_seconds += job.replicas * (t - start)
    stop = end
    trained_from = t
    while t < end:
        plan = job.plan
        thresholds = job.thresholds
        k0 = job.epoch - plan.first_epoch
        available = end - t
        rate = plan.rate[k0]
        to_boundary = (thresholds[job.epoch + 1] - job.progress) / rate
        if replan is not None:  # the statistics this stretch measures
            batch = job.replicas * int(plan.local_bsz[k0]) * (int(plan.accum_steps[k0]) + 1)
            job.measured_at = (batch, job.epoch)
        if to_boundary > available:
            # The common case, no epoch boundary in this interval: scalar arithmetic.
            _observe(job, plan, k0, 1)
            _train_within_epoch(job, plan, k0, available)
            break
        if replan is None:
            finish = _cross_epochs(job, plan, k0, t, available)
            stop = end if finish is None else finish
            break
        # The artifact's jobs step whole seconds from one epoch boundary to the next (its time to
        # the boundary is rounded), so its epochs end up to half a second early or late.
        seconds = min(float(round(float(to_boundary))), available)
        finish = _cross_one_epoch(job, plan, k0, t, seconds)
        if finish is not None:
            stop = finish
            break
        t += seconds
        replan(job)
    job.gpu_seconds += job.replicas * (stop - start)
    if job.typed is not None:
        by_type = job.gpu_seconds_by_type
        by_type[job.gpu_type] = by_type.get(job.gpu_type, 0.0) + job.replicas * (stop - start)
    job.train_seconds += max(stop - trained_from, 0.0)
    job.train_gpu_seconds += job.replicas * max(stop - trained_from, 0.0)


def _cross_one_epoch(job: Job, plan: Plan, k: int, t: float, seconds: float) -> float | None:
    """Train the rest of the current epoch (``seconds``, from ``t``) at the plan's ``k``-th
    configuration; returns the finish time if that was the last epoch."""
    _observe(job, plan, k, 1)
    job.examples += seconds * float(plan.samples[k])
    if job.step_log is not None:
        _log_steps(job, plan, k, job.epoch, seconds)
    job.local_bsz = int(plan.local_bsz[k])
    job.accum_steps = int(plan.accum_steps[k])
    job.last_batch = job.total_batch
    job.epoch += 1
    job.progress = float(job.thresholds[job.epoch])
    if job.epoch >= job.profile.limits.max_epochs:
        job.finish_time = t + seconds
        return job.finish_time
    return None


def _cross_epochs(job: Job, plan: Plan, k0: int, t: float, available: float) -> float | None:
    """Advance a job whose interval from ``t`` (``available`` seconds) crosses epoch
    boundaries, epoch by epoch at the plan's rates; returns its finish time if it ends."""
    thresholds = job.thresholds
    crossed, durations, cumulative = epoch_crossing(job, plan, available)
    remaining = len(durations)
    _observe(job, plan, k0, min(crossed + 1, remaining))
    samples = plan.samples[k0:]
    job.examples += float(np.add.reduce(durations[:crossed] * samples[:crossed]))
    if job.step_log is not None:
        for k in range(crossed):
            _log_steps(job, plan, k0 + k, job.epoch + k, float(durations[k]))
    if crossed >= remaining:  # finishes inside this interval
        job.finish_time = t + float(cumulative[-1])
        job.epoch = job.profile.limits.max_epochs
        job.progress = float(thresholds[-1])
        return job.finish_time
    spent = float(cumulative[crossed - 1]) if crossed else 0.0
    if crossed:
        job.epoch += crossed
        job.progress = float(thresholds[job.epoch])
    _train_within_epoch(job, plan, k0 + crossed, available - spent)
    return None


def _train_within_epoch(job: Job, plan: Plan, k: int, seconds: float) -> None:
    """Train ``seconds`` at the plan's ``k``-th epoch configuration, crossing no boundary."""
    job.progress += float(plan.rate[k]) * seconds
    job.examples += float(plan.samples[k]) * seconds
    if job.step_log is not None:
        _log_steps(job, plan, k, job.epoch, seconds)
    job.local_bsz = int(plan.local_bsz[k])
    job.accum_steps = int(plan.accum_steps[k])
    job.last_batch = job.total_batch


def _log_steps(job: Job, plan: Plan, k: int, epoch: int, seconds: float) -> None:
    """Note the optimizer steps of ``seconds`` of training in ``epoch`` (the plan's ``k``-th)."""
    batch = job.replicas * float(plan.local_bsz[k]) * (float(plan.accum_steps[k]) + 1.0)
    job.step_log.add(epoch, batch, seconds * float(plan.samples[k]) / batch)


def _observe(job: Job, plan: Plan, first: int, count: int) -> None:
    """Record the configurations the job ran in these epochs for its throughput belief."""
    if count == 1:  # the common case, a configuration already seen: nothing to record
        shape = (job.nodes_used, job.replicas, float(plan.local_bsz[first]))
        if job.belief.observed(*shape) and (
            job.typed is None or job.type_beliefs[job.gpu_type].observed(*shape)
        ):
            return
    step, sync = plan.step, plan.sync
    seen = set()
    for k in range(first, first + count):
        b = float(plan.local_bsz[k])
        if b not in seen:
            seen.add(b)
            job.belief.observe(job.nodes_used, job.replicas, b, float(step[k]), float(sync[k]))
            if job.typed is not None:
                job.type_beliefs[job.gpu_type].observe(
                    job.nodes_used, job.replicas, b, float(step[k]), float(sync[k])
                )


def state_at(job: Job, start: float, when: float) -> tuple[float, int]:
    """(progress, epoch) the job will have at ``when`` if it runs its plan from ``start``; the
    job itself is left as it is."""
    trained = when - (start + min(job.restart_remaining, when - start))
    if trained <= 0:
        return job.progress, job.epoch
    plan = job.plan
    thresholds = job.thresholds
    crossed, _, cumulative = epoch_crossing(job, plan, trained)
    if crossed >= len(cumulative):
        return float(thresholds[-1]), job.profile.limits.max_epochs
    rates = plan.rate[job.epoch - plan.first_epoch :]
    spent = float(cumulative[crossed - 1]) if crossed else 0.0
    base = float(thresholds[job.epoch + crossed]) if crossed else job.progress
    return base + float(rates[crossed]) * (trained - spent), job.epoch + crossed


def fractional_epochs(job: Job, progress: float, epoch: int) -> float:
    """Progress as fractional epochs."""
    thresholds = job.thresholds
    if epoch >= len(thresholds) - 1:
        return float(epoch)
    low, high = thresholds[epoch], thresholds[epoch + 1]
    return epoch + (progress - low) / (high - low)


def settle_save(job: Job, now: float) -> None:
    """A checkpoint being saved counts once its save has finished by ``now``."""
    if job.saving is not None and job.saving[2] <= now:
        job.checkpoint, job.saving = job.saving, None


def lose_work(job: Job, now: float) -> None:
    """Back to the last checkpoint whose save had finished by ``now`` (a save still under way
    is lost); count the GPU-time and the epochs undone."""
    settle_save(job, now)
    job.saving = None
    progress, epoch, saved = job.checkpoint
    if now <= saved:  # still in its restart delay: nothing trained since the checkpoint
        return
    job.lost_gpu_seconds += job.replicas * (now - saved)
    job.lost_epochs += fractional_epochs(job, job.progress, job.epoch) - fractional_epochs(
        job, progress, epoch
    )
    job.progress, job.epoch = progress, epoch
