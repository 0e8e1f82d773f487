"""The learning-rate-aware progress model and seed 004's objective, per job.

Under ``progress: lr-aware`` a job trains through a fixed example budget, the examples its
requested (static) batch needs under the noise model, epoch by epoch; it finishes when the
budget is spent, and what its batch choices buy or cost is its final loss. Under
``tail_geometry: steps`` its work is instead the static run's optimizer steps, epoch by epoch,
and each step takes the static run's learning rate at that step. The loss follows SGD
on a noisy quadratic, in expectation and exactly: with learning rate ``eta_t = eta u_t``
(``u_t`` the application's schedule, held per epoch), curvature ``h``, per-example gradient
covariance trace ``s_t = tr(Sigma)`` and batch ``B_t``, the excess loss ``e`` obeys

    e_{t+1} = (1 - kappa u_t)^2 e_t + (kappa u_t)^2 s_t / (|G_0|^2 B_t) e_0,   kappa = eta h,

a deterministic descent factor and a learning-rate-weighted noise term. Noise injected at step
t reaches the end with weight ``u_t^2 prod_{k>t} (1 - kappa u_k)^2``: the quadratic forgets it
exponentially in the rate that follows. Seed 004's bound weights it by
``c_t = u_t^2 / (2 sum_{k>t} u_k)``, hyperbolic in that rate: the two are not the same weight,
and a batch allocation optimal for one is in general not optimal for the other. ``|G_0|^2`` is
the squared gradient norm at the start, so ``s_0 / |G_0|^2`` is the noise scale of seed 002.
One setting, ``lr_descent`` (K), fixes ``kappa``: the static run's deterministic descent is
``sum_t kappa u_t = K`` e-folds. Losses are reported relative to ``e_0`` and to the static
batch's own final loss; ``final_loss_tuned`` gives each job the rate that makes its own steps'
descent K (a learning rate tuned to the schedule it ran, as a comparison at equal examples with
the rate tuned per arm would; under ``tail_geometry: steps`` a job's steps and rates are the
static run's, so it is the final loss).

Seed 004's objective, the learning-rate-weighted noise ``sum_t c_t s_t / B_t`` with
``c_t = u_t^2 / (2 sum_{k>t} u_k)`` (``c_tau = u_tau / 2``), is computed for either model from
the steps the job actually took (each epoch's steps in closed form, with the digamma function).

Work lost to failures would have to undo loss as well as progress; the engine refuses these
settings with failures.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np
from numpy.typing import NDArray

from goodput_sim.models.efficiency import gain
from goodput_sim.models.goodput import fixed_batch_config
from goodput_sim.models.lr import LRSchedule
from goodput_sim.profiles.base import ApplicationProfile

if TYPE_CHECKING:
    from goodput_sim.models.limits import Limits
    from goodput_sim.sim.jobs import Job, JobSpec, StepLog

PROGRESS_MODELS = ("noise", "lr-aware")


def example_budget(profile: ApplicationProfile, batch: float) -> NDArray:
    """Cumulative examples by the end of each epoch for a job trained at total ``batch``
    throughout under the noise model (0 first): the work of a job under ``lr-aware``."""
    lim = profile.limits
    epochs = np.arange(lim.max_epochs)
    sqr, var = profile.grad_stats(batch, epochs)
    per_epoch = (
        np.diff(profile.progress_thresholds) * batch / gain(batch, lim.init_batch_size, sqr, var)
    )
    return np.concatenate([[0.0], np.cumsum(per_epoch)])


def static_batch(job: Job) -> float:
    """The total batch a job keeps throughout when it runs its request as asked: its
    requested batch (its application's fixed batch, if it has one) as the fixed agent lays it
    on the requested GPUs, within the per-GPU and total limits."""
    return static_batch_of(job.spec, job.profile.limits)


def static_batch_of(spec: JobSpec, lim: Limits) -> float:
    """:func:`static_batch` of a request under its application's limits."""
    asked = lim.fixed_batch_size or spec.requested_batch
    local, accum = fixed_batch_config(asked, spec.requested_replicas, lim)
    return float(spec.requested_replicas * local * (accum + 1))


def static_steps(profile: ApplicationProfile, batch: float) -> NDArray:
    """Cumulative optimizer steps by the end of each epoch (0 first) of the static run at
    ``batch``: the work of a job under ``tail_geometry: steps``."""
    return example_budget(profile, batch) / batch


def quadratic_loss(
    rates: NDArray, steps: NDArray, noise: NDArray, kappa: float, start: float = 1.0
) -> float:
    """Expected excess loss after runs of ``steps[i]`` steps at rate ``rates[i]`` (relative to
    the peak) and normalised noise ``noise[i] = s / (|G_0|^2 B)``: the recurrence above in closed
    form per run, ``e_n = r^n e + (1 - r^n) e_inf`` with ``r = (1 - kappa u)^2`` and fixed point
    ``e_inf = (kappa u)^2 noise / (1 - r)`` (fractional ``n`` continues it smoothly)."""
    e = start
    for u, n, sigma in zip(rates, steps, noise, strict=True):
        k = kappa * u
        r = (1.0 - k) ** 2
        fixed = k * k * sigma / (1.0 - r)
        decay = r**n
        e = decay * e + (1.0 - decay) * fixed
    return float(e)


def weighted_noise(rates: NDArray, steps: NDArray, noise: NDArray) -> float:
    """Seed 004's ``sum_t c_t s_t / B_t`` over runs of ``steps[i]`` steps at rate ``rates[i]``
    with ``noise[i] = s / B``. Step j of a run of n steps at rate u followed by the tail sum T
    has ``sum_{k>t} u_k = T + (n - j) u``; the run's weights sum to
    ``u/2 (psi(T/u + n) - psi(T/u))``, and for the last run (T = 0) to
    ``u/2 (psi(n) - psi(1) + 1)``, the last step counted with ``c_tau = u/2``."""
    from scipy.special import digamma  # slow import: runs without lr-aware skip it

    total, tail = 0.0, 0.0
    for u, n, sn in zip(rates[::-1], steps[::-1], noise[::-1], strict=True):
        if tail == 0.0:
            weight = 0.5 * u * (digamma(max(n, 1.0)) - digamma(1.0) + min(n, 1.0))
        else:
            a = tail / u
            weight = 0.5 * u * (digamma(a + n) - digamma(a))
        total += weight * sn
        tail += u * n
    return float(total)


PIECES = 32
"""Learning-rate pieces per job at least: the rate is held over ``1/max(1, 32/E)`` of an
epoch (one epoch when a job has 32 epochs or more; bert's 2 epochs get 16 pieces each)."""


def refine(
    schedule: LRSchedule,
    epochs: NDArray,
    steps: NDArray,
    work: NDArray,
    epoch_work: NDArray,
    pieces: int,
) -> tuple[NDArray, NDArray, NDArray]:
    """Split runs of ``steps[i]`` steps in epoch ``epochs[i]`` (in order, each doing
    ``work[i]`` of its epoch's ``epoch_work``) where the learning rate changes: at every
    ``1/pieces`` of an epoch. Returns (run index, steps, rate) of every piece."""
    total = len(epoch_work)
    index, out_steps, out_rate = [], [], []
    position, current = 0.0, -1
    for i, (e, n, w) in enumerate(zip(epochs, steps, work, strict=True)):
        if e != current:
            position, current = 0.0, e
        start = position / epoch_work[e]
        position += w
        end = min(position / epoch_work[e], 1.0)
        cuts = np.arange(np.floor(start * pieces) + 1, np.ceil(end * pieces)) / pieces
        edges = np.concatenate([[start], cuts, [max(end, start)]])
        share = np.diff(edges) / (end - start) if end > start else np.array([1.0])
        middle = (edges[:-1] + edges[1:]) / 2 if end > start else np.array([start])
        index.extend([i] * len(share))
        out_steps.extend(n * share)
        out_rate.extend(schedule.at_fractions((e + middle) / total))
    return np.asarray(index), np.asarray(out_steps), np.asarray(out_rate)


class SeedObjective:
    """Both objectives of one application's jobs, from their step logs and against the static
    batch's (one instance per application and run; the static references are memoised).
    ``lr_aware`` says what a job's work is: examples (``lr-aware``) or progress (``noise``),
    which places each step within its epoch and so on the learning-rate schedule."""

    def __init__(
        self, profile: ApplicationProfile, schedule: LRSchedule, descent: float, lr_aware: bool
    ):
        self.profile = profile
        self.schedule = schedule
        self.descent = descent
        self.lr_aware = lr_aware
        lim = profile.limits
        self.pieces = max(1, -(-PIECES // lim.max_epochs))
        sqr0, _ = profile.grad_stats(lim.init_batch_size, 0)
        self.grad_sqr0 = float(sqr0)
        self._static: dict[float, tuple[float, float, float]] = {}

    def _stats(self, epochs: NDArray, batches: NDArray) -> tuple[NDArray, NDArray]:
        """(progress per step, ``tr(Sigma) = M0 * grad_var``) in each (epoch, batch)."""
        m0 = self.profile.limits.init_batch_size
        sqr, var = self.profile.grad_stats(batches, epochs)
        return gain(batches, m0, sqr, var), m0 * np.asarray(var, dtype=np.float64)

    def _objectives(
        self,
        epochs: NDArray,
        batches: NDArray,
        steps: NDArray,
        budget: NDArray,
        kappa: float,
        in_steps: bool = False,
    ) -> tuple[float, float, float]:
        """(final loss, final loss with the rate tuned to the job's own steps, weighted noise)
        of runs (``budget``: the job's examples per epoch, or with ``in_steps`` its static
        run's steps per epoch: each step then takes the rate of the static run's same step)."""
        per_step, trace = self._stats(epochs, batches)
        if self.lr_aware:
            work, epoch_work = (steps if in_steps else steps * batches), budget
        else:
            work, epoch_work = steps * per_step, np.diff(self.profile.progress_thresholds)
        run, n, u = refine(self.schedule, epochs, steps, work, epoch_work, self.pieces)
        noise = trace[run] / batches[run]
        own = self.descent / float(np.sum(n * u))  # the same descent from the job's own steps
        tuned = quadratic_loss(u, n, noise / self.grad_sqr0, own) if own * u.max() < 1 else np.nan
        loss = quadratic_loss(u, n, noise / self.grad_sqr0, kappa)
        return loss, tuned, weighted_noise(u, n, noise)

    def static(self, batch: float) -> tuple[float, float, float]:
        """(kappa, final loss, weighted noise) of the static run at ``batch``."""
        if batch not in self._static:
            budget = np.diff(example_budget(self.profile, batch))
            epochs = np.arange(len(budget))
            batches = np.full(len(budget), float(batch))
            steps = budget / batch
            rates = self.schedule.per_epoch(len(budget))
            run, n, u = refine(self.schedule, epochs, steps, budget, budget, self.pieces)
            kappa = self.descent / float(np.sum(n * u))
            if kappa * rates.max() >= 1.0:
                raise ValueError(
                    f"{self.profile.name}: lr_descent {self.descent:g} needs more than the "
                    f"{steps.sum():.0f} steps of a run at batch {batch:g}"
                )
            loss, _, noise = self._objectives(epochs, batches, steps, budget, kappa)
            self._static[batch] = (kappa, loss, noise)
        return self._static[batch]

    def of(self, log: StepLog, static_batch: float, in_steps: bool = False) -> dict[str, float]:
        """The job's final loss and weighted noise, raw and relative to its static batch
        (``in_steps``: its work was the static run's steps, ``tail_geometry: steps``)."""
        kappa, static_loss, static_noise = self.static(static_batch)
        budget = None
        if self.lr_aware:
            budget = np.diff(example_budget(self.profile, static_batch))
            budget = budget / static_batch if in_steps else budget
        loss, tuned, noise = self._objectives(
            np.asarray(log.epochs, dtype=np.int64),
            np.asarray(log.batches, dtype=np.float64),
            np.asarray(log.steps, dtype=np.float64),
            budget,
            kappa,
            in_steps,
        )
        return {
            "lr_noise": noise,
            "lr_noise_vs_static": noise / static_noise,
            "final_loss": loss,
            "final_loss_vs_static": loss / static_loss,
            "final_loss_tuned": tuned,
            "final_loss_tuned_vs_static": tuned / static_loss,
        }
