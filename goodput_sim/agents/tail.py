"""The ``tail-weighted`` agent (seed 004): a job spends the example budget of its static batch
on a schedule weighted by its learning-rate tail and gradient noise.

The job's training is laid on a grid of optimizer steps (``steps_per_epoch`` per epoch, equal
epochs) with the application's learning-rate schedule (``lr_schedule`` of its limits, else the
agent's ``schedule``, cosine by default). The remaining epochs share the budget the static
batch would spend on them (the requested batch on every step), allocated by
:func:`goodput_sim.models.tail.plan` from the per-example gradient noise
``s = tr(Sigma) = M0 * grad_var`` of each epoch. With ``window = 0`` the plan uses every upcoming
epoch's statistics (a hindsight plan no real job could make); with ``window = W`` (the default,
one epoch) it plans causally from a moving average of what it has measured, which, as
:func:`goodput_sim.models.tail.plan` shows, makes it blind to the noise: batches follow
``sqrt(c_t)`` alone. Each epoch runs at the mean batch of its steps, within the job's limits on
its GPUs.

``forecast = true`` makes the causal plan see the noise: at each plan the noise ahead is the
application's trajectory from an earlier run at batch M0 (``Limits.noise_prior``, its profile's),
scaled to the latest measurement. The scale cancels under the budget, so the plan follows that
trajectory's shape. The blind plan (``window`` >= 1) and the hindsight plan (``window = 0``) are
its bounds.

Under ``tail_geometry: steps`` (seed 004's geometry) the job's limits carry its static run's
batch and optimizer steps by epoch (``Limits.static_run``), and the plan is laid on those
steps: ``steps_per_epoch x epochs`` equal cells of the static run's steps, each with the static
run's learning rate at its middle step, share the static run's examples (the static batch on
every step) by the bounded optimum; each epoch runs at the mean batch of the steps it spans, so
a run of the plan takes the static run's steps and spends its examples (:func:`step_configs`
says how closely). The plan is made for the whole run at once (the tail of an optimum is
optimal for the budget it leaves, so a re-plan on the same GPUs gives the same batches): the
blind plan with constant noise, the forecasting and hindsight plans from the application's
trajectory (``Limits.noise_prior``; in this simulator it is the truth, so the two coincide).
"""

from __future__ import annotations

import functools

import numpy as np

from goodput_sim.agents.base import BatchAgent, BatchPlan, fixed_configs, register_agent
from goodput_sim.models.goodput import fixed_batch_configs
from goodput_sim.models.limits import Limits
from goodput_sim.models.lr import parse_schedule
from goodput_sim.models.tail import (
    SCHEDULES,
    clipped_batches,
    learning_rates,
    noise_blind_batches,
    plan,
    tail_coefficients,
)
from goodput_sim.params import Param


@register_agent
class TailWeighted(BatchAgent):
    """Static batch's example budget re-spread by learning-rate tail x gradient noise
    (seed 004)."""

    name = "tail-weighted"
    reads_beliefs = False
    params = (
        Param(
            "schedule",
            str,
            "cosine",
            "learning-rate schedule of applications that declare none",
            choices=SCHEDULES,
        ),
        Param("window", int, 1, "epochs per planning window (0: plan all at once)", 0, 1000),
        Param("steps_per_epoch", int, 16, "grid resolution of the schedule", 1, 1024),
        Param(
            "forecast",
            bool,
            False,
            "causal plan: forecast the noise ahead from the application's earlier trajectory",
        ),
    )

    @property
    def reads_noise_prior(self) -> bool:
        return bool(self.values["forecast"]) and self.values["window"] > 0

    def __init__(self, **values):
        super().__init__(**values)
        self._noise_blind = functools.lru_cache(maxsize=4096)(_noise_blind_plan)
        self._on_steps = functools.lru_cache(maxsize=4096)(step_configs)

    def configs(self, belief, requested_batch, nodes, replicas, grad_sqr, grad_var, hint=None):
        lim = belief.limits
        upcoming = len(np.atleast_1d(grad_sqr))
        if lim.fixed_batch_size is not None:
            return fixed_configs(lim, lim.fixed_batch_size, replicas, np.shape(grad_sqr))
        per_epoch = self.values["steps_per_epoch"]
        schedule = lim.lr_schedule or self.values["schedule"]
        low, high = float(lim.init_batch_size), float(lim.max_batch_size)
        static = float(np.clip(requested_batch, low, high))
        forecast = self.reads_noise_prior and lim.noise_prior is not None
        floor = max(low, lim.min_local_bsz * replicas)  # the least batch on these GPUs
        if lim.static_run is not None:  # laid on the static run's steps (memoised)
            sees = (forecast or not self.values["window"]) and lim.noise_prior is not None
            local, accum = self._on_steps(lim, schedule, per_epoch, replicas, upcoming, sees)
            return local.copy(), accum.copy()
        if self.values["window"] and not forecast:  # blind: memoised
            args = (schedule, per_epoch, lim.max_epochs, upcoming, static, low, high)
            steps = self._noise_blind(*args)
        else:
            rates = learning_rates(schedule, lim.max_epochs * per_epoch)[-upcoming * per_epoch :]
            if forecast:  # the earlier run's trajectory from here on
                ahead = np.asarray(lim.noise_prior[lim.max_epochs - upcoming :], np.float64)
                measured = lim.init_batch_size * float(np.atleast_1d(grad_var)[0])
                trace = measured * ahead / max(ahead[0], 1e-300)
            else:  # hindsight: what the job will measure
                trace = lim.init_batch_size * np.asarray(grad_var, np.float64)
            noise = np.repeat(trace, per_epoch)
            steps = plan(rates, np.maximum(noise, 1e-12), static * len(rates), low, high).batches
        epoch_batch = steps.reshape(upcoming, per_epoch).mean(axis=1)
        total = np.clip(epoch_batch, floor, high)
        return fixed_batch_configs(np.round(total), replicas, lim)

    def depends_on(self, belief):
        return None  # only the job's measured statistics, passed per epoch


def _noise_blind_plan(
    schedule: str,
    per_epoch: int,
    epochs: int,
    upcoming: int,
    static: float,
    low: float,
    high: float,
) -> np.ndarray:
    """Per-step batches of the causal plan over the last ``upcoming`` of ``epochs`` epochs
    (read-only: it is memoised by every argument)."""
    rates = learning_rates(schedule, epochs * per_epoch)[-upcoming * per_epoch :]
    batches = np.array(noise_blind_batches(rates, static * len(rates), low, high), dtype=float)
    batches.flags.writeable = False
    return batches


def step_configs(
    lim: Limits, schedule: str, per_epoch: int, replicas: int, upcoming: int, sees: bool
) -> BatchPlan:
    """(per-GPU batch, accumulation) of the last ``upcoming`` epochs of the plan laid on the
    static run of ``lim`` (``Limits.static_run``) on ``replicas`` GPUs; ``sees``: from the
    application's noise trajectory (``Limits.noise_prior``), else blind to the noise.

    A total batch runs as the nearest configuration at or above it (:func:`fixed_batch_configs`),
    so each epoch aims at its planned batch plus what the epochs before it (from this plan on)
    spent short of or beyond the plan, spread over its steps: the examples then follow the
    plan's within one configuration's rounding, not the rounding of every epoch. Memoised by
    every argument."""
    static, on = lim.static_run
    low, high = float(lim.init_batch_size), float(lim.max_batch_size)
    floor = max(low, lim.min_local_bsz * replicas)  # the least batch on these GPUs
    planned = step_plan(
        schedule,
        per_epoch,
        on,
        static,
        min(floor, static),
        max(high, static),
        lim.noise_prior if sees else None,
    )[-upcoming:]
    lengths = np.diff(np.asarray(on, dtype=np.float64))[-upcoming:]
    local, accum = np.empty(upcoming), np.empty(upcoming)
    short = 0.0  # examples the epochs so far spent short of the plan (negative: beyond it)
    for k, (want, steps) in enumerate(zip(planned, lengths, strict=True)):
        total = np.clip(np.round(want + short / steps), floor, high)
        b, s = fixed_batch_configs(np.array([total]), replicas, lim)
        local[k], accum[k] = b[0], s[0]
        short += steps * (want - replicas * b[0] * (s[0] + 1))
    return local, accum


def step_plan(
    schedule: str,
    per_epoch: int,
    static_steps: tuple[float, ...],
    static: float,
    low: float,
    high: float,
    noise: tuple[float, ...] | None = None,
) -> np.ndarray:
    """Per-epoch batches of the plan laid on a static run's optimizer steps (``static_steps``:
    cumulative steps by the end of each epoch, 0 first; ``tail_geometry: steps``).

    ``per_epoch x epochs`` equal cells of the static run's steps, each with the rate the static
    run has at its middle step (the schedule at that step's place in its epoch) and its epoch's
    noise (``noise``: tr(Sigma) per epoch; None: constant), share ``static`` examples per step
    by the bounded optimum (:func:`~goodput_sim.models.tail.clipped_batches`); an epoch's batch
    is the mean over the steps it spans, so ``sum_e n_e b_e = static * sum_e n_e`` exactly."""
    edges_e = np.asarray(static_steps, dtype=np.float64)
    epochs = len(edges_e) - 1
    lengths = np.diff(edges_e)
    cells = epochs * per_epoch
    edges = np.linspace(0.0, edges_e[-1], cells + 1)
    middle = 0.5 * (edges[:-1] + edges[1:])
    epoch = np.clip(np.searchsorted(edges_e, middle, side="right") - 1, 0, epochs - 1)
    where = (epoch + (middle - edges_e[epoch]) / lengths[epoch]) / epochs
    rates = parse_schedule(schedule).at_fractions(where)
    trace = np.ones(epochs) if noise is None else np.asarray(noise, dtype=np.float64)
    batches = clipped_batches(
        tail_coefficients(rates), np.maximum(trace[epoch], 1e-12), static * cells, low, high
    )
    spent = np.concatenate([[0.0], np.cumsum(batches)]) * (edges_e[-1] / cells)  # examples
    return np.diff(np.interp(edges_e, edges, spent)) / lengths
