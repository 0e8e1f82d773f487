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
"""

from __future__ import annotations

import functools

import numpy as np

from goodput_sim.agents.base import BatchAgent, fixed_configs, register_agent
from goodput_sim.models.goodput import fixed_batch_configs
from goodput_sim.models.tail import SCHEDULES, learning_rates, noise_blind_batches, plan
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
        total = np.clip(epoch_batch, max(low, lim.min_local_bsz * replicas), high)
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
