"""Tail-weighted batch schedules under a fixed example budget (seed 004).

For SGD with learning rates ``eta_1..eta_tau``, a loss bound weights step t's gradient noise
``s_t / B_t`` by the tail coefficient ``c_t = eta_t^2 / (2 sum_{k>t} eta_k)`` (``c_tau =
eta_tau / 2``). Minimising ``sum_t c_t s_t / B_t`` subject to ``sum_t B_t = C`` gives
``B_t* = C sqrt(c_t s_t) / sum_j sqrt(c_j s_j)``. This module computes that allocation, clips it
to ``[B_min, B_max]`` with the remaining budget renormalised, rounds it to valid batch sizes
keeping the budget, and plans it window by window from smoothed noise estimates, as the seed's
implementation notes describe. Whether it helps is for the evaluation to say (seed 004 failed its
own benchmark).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from numpy.typing import ArrayLike, NDArray

from goodput_sim.models.lr import parse_schedule

SCHEDULES = ("constant", "step", "cosine")


def learning_rates(schedule: str, steps: int, base: float = 1.0) -> NDArray:
    """Learning rate at each of ``steps`` optimizer steps.

    ``constant``; ``step``: divided by 10 after 50% and again after 75% of training (the
    ResNet recipe); ``cosine``: ``base * (1 + cos(pi t / steps)) / 2`` evaluated at step
    midpoints, so the last step's rate stays positive; any other spelling of
    :mod:`goodput_sim.models.lr` (``cosine(floor=0.2)``) is read by its schedule."""
    if steps < 1:
        raise ValueError("need at least one step")
    t = np.arange(steps, dtype=np.float64)
    if schedule == "constant":
        return np.full(steps, base)
    if schedule == "step":
        return base * np.where(t < 0.5 * steps, 1.0, np.where(t < 0.75 * steps, 0.1, 0.01))
    if schedule == "cosine":
        return base * 0.5 * (1.0 + np.cos(math.pi * (t + 0.5) / steps))
    return base * parse_schedule(schedule).on_grid(steps)  # a spelled schedule (models.lr)


def tail_coefficients(rates: ArrayLike) -> NDArray:
    """``c_t = eta_t^2 / (2 sum_{k>t} eta_k)`` for t < tau and ``c_tau = eta_tau / 2``."""
    eta = np.asarray(rates, dtype=np.float64)
    if eta.ndim != 1 or not len(eta) or (eta <= 0).any():
        raise ValueError("learning rates must be a non-empty vector of positive numbers")
    tail = np.cumsum(eta[::-1])[::-1] - eta  # sum over k > t
    out = np.empty_like(eta)
    out[:-1] = eta[:-1] ** 2 / (2.0 * tail[:-1])
    out[-1] = eta[-1] / 2.0
    return out


def batch_objective(coefficients: ArrayLike, noise: ArrayLike, batches: ArrayLike) -> float:
    """The batch-dependent part of the bound, ``sum_t c_t s_t / B_t``."""
    c, s, b = (np.asarray(x, dtype=np.float64) for x in (coefficients, noise, batches))
    return float(np.sum(c * s / b))


def optimal_batches(coefficients: ArrayLike, noise: ArrayLike, budget: float) -> NDArray:
    """The continuous optimum ``B_t* = C sqrt(c_t s_t) / sum_j sqrt(c_j s_j)``."""
    weight = np.sqrt(np.asarray(coefficients, dtype=np.float64) * np.asarray(noise, np.float64))
    if (weight <= 0).all():
        return np.full(weight.shape, budget / weight.size)
    return budget * weight / weight.sum()


def clipped_batches(
    coefficients: ArrayLike, noise: ArrayLike, budget: float, low: float, high: float
) -> NDArray:
    """The optimum under ``low <= B_t <= high``: by the optimality conditions
    ``B_t = clip(lam * sqrt(c_t s_t), low, high)`` for the one ``lam`` that spends the budget, so
    steps that hit a bound stay there and the remaining budget is shared by the others in
    proportion to ``sqrt(c_t s_t)``. The spend is piecewise linear in ``lam`` with breakpoints
    ``low/w`` and ``high/w``; the segment holding the budget is found among them and solved
    exactly."""
    weight = np.sqrt(np.asarray(coefficients, dtype=np.float64) * np.asarray(noise, np.float64))
    n = weight.size
    if not low * n <= budget <= high * n:
        raise ValueError(f"budget {budget:g} cannot be met by {n} steps within [{low:g}, {high:g}]")
    w = weight[weight > 0]
    if not len(w):
        return np.full(n, budget / n)
    budget -= low * (n - len(w))  # steps without weight stay at the lower bound
    enter, leave = np.sort(low / w), np.sort(high / w)  # lam where a step leaves low, hits high
    w_enter = np.concatenate([[0.0], np.cumsum(w[np.argsort(low / w)])])
    w_leave = np.concatenate([[0.0], np.cumsum(w[np.argsort(high / w)])])

    def spend_parts(lam: NDArray) -> tuple[NDArray, NDArray]:
        """(spend of the steps at a bound, weight of the free steps) at each ``lam``."""
        entered = np.searchsorted(enter, lam, side="left")
        left = np.searchsorted(leave, lam, side="right")
        fixed = (len(w) - entered) * low + left * high
        return fixed, w_enter[entered] - w_leave[left]

    points = np.sort(np.concatenate([enter, leave]))
    fixed, free = spend_parts(points)
    j = min(int(np.searchsorted(fixed + points * free, budget, side="left")), len(points) - 1)
    middle = points[j] if j == 0 else 0.5 * (points[j - 1] + points[j])
    fixed, free = spend_parts(np.array([middle]))
    lam = (budget - fixed[0]) / free[0] if free[0] > 0 else points[j]
    out = np.full(n, float(low))
    out[weight > 0] = np.clip(lam * w, low, high)
    return out


def rounded_batches(batches: ArrayLike, budget: int, granule: int = 1) -> NDArray[np.int64]:
    """Batches rounded to multiples of ``granule`` with their sum kept at ``budget`` (rounded to
    the granule): floors first, then the largest remainders get one granule more."""
    b = np.asarray(batches, dtype=np.float64) / granule
    floors = np.maximum(np.floor(b), 1.0)
    missing = int(round(budget / granule - floors.sum()))
    order = np.argsort(-(b - floors), kind="stable")
    out = floors.copy()
    if missing > 0:
        out[order[:missing]] += 1
    elif missing < 0:  # floors of 1 pushed the sum over: take back from the largest
        for k in np.argsort(-out, kind="stable")[:-missing]:
            out[k] -= 1
    return (out * granule).astype(np.int64)


def noise_blind_batches(rates: ArrayLike, budget: float, low: float, high: float) -> NDArray:
    """What every causal (windowed) plan amounts to: the bounded optimum with constant noise,
    batches in proportion to ``sqrt(c_t)``."""
    return clipped_batches(tail_coefficients(rates), 1.0, budget, low, high)


@dataclass(frozen=True)
class TailSchedule:
    """A planned schedule: per-step batches (continuous and integer) and their objectives."""

    coefficients: NDArray
    noise: NDArray
    batches: NDArray  # continuous, within bounds
    integer_batches: NDArray[np.int64]
    budget: float

    @property
    def objective(self) -> float:
        return batch_objective(self.coefficients, self.noise, self.batches)

    @property
    def integer_objective(self) -> float:
        return batch_objective(self.coefficients, self.noise, self.integer_batches)

    def static_objective(self) -> float:
        """The objective of the static batch with the same budget."""
        n = len(self.coefficients)
        return batch_objective(self.coefficients, self.noise, np.full(n, self.budget / n))


def plan(
    rates: ArrayLike,
    noise: ArrayLike,
    budget: float,
    low: float,
    high: float,
    window: int = 0,
    smoothing: float = 0.0,
    granule: int = 1,
) -> TailSchedule:
    """The seed's schedule for one run.

    ``window = 0`` plans all steps at once from the given per-step noise. ``window = W`` plans
    causally: at the start of each window of W steps the noise estimate is updated (an
    exponential moving average with weight ``smoothing`` on the previous estimate) from that
    window's first measurement, and the remaining budget is allocated over the remaining steps
    as if the estimate held from then on; the window keeps its share.

    A causal plan cannot see the noise: an estimate held constant over the remaining steps
    scales their weights alike, which the budget constraint cancels, and the tail of an optimum
    is optimal for the budget it leaves. So every windowed plan equals the all-at-once plan
    with constant noise (:func:`noise_blind_batches`; tested)."""
    c = tail_coefficients(rates)
    s = np.broadcast_to(np.asarray(noise, dtype=np.float64), c.shape).astype(np.float64)
    n = len(c)
    if window <= 0:
        batches = clipped_batches(c, s, budget, low, high)
    else:
        batches = np.empty(n)
        remaining, estimate = float(budget), None
        for start in range(0, n, window):
            measured = s[start]
            estimate = (
                measured if estimate is None else smoothing * estimate + (1 - smoothing) * measured
            )
            rest = slice(start, n)
            planned = clipped_batches(c[rest], np.full(n - start, estimate), remaining, low, high)
            stop = min(start + window, n)
            batches[start:stop] = planned[: stop - start]
            remaining -= float(batches[start:stop].sum())
    integer = rounded_batches(batches, int(round(budget)), granule)
    return TailSchedule(c, s, batches, integer, float(budget))


SEED_SETTING = {"steps": 64, "static_batch": 16, "low": 8, "high": 64}
"""The toy setting of seed 004's mechanism check: 64 steps, a static batch of 16 as the example
budget, batches within [8, 64], constant noise."""


def tail_weighted_report(
    steps: int = 64, static_batch: int = 16, low: int = 8, high: int = 64
) -> list[dict]:
    """Per learning-rate schedule: the planned batches at the first and last step, their range,
    and the objective of the continuous, integer and static schedules (constant noise); the
    headline numbers of ``toy tail-weighted``."""
    return [
        schedule_row(schedule, plan(learning_rates(schedule, steps), 1.0, budget, low, high))
        for schedule in SCHEDULES
        for budget in [steps * static_batch]
    ]


def schedule_row(label: str, result: TailSchedule) -> dict:
    """A planned schedule's headline numbers: first, last, smallest and largest integer batch,
    and the continuous, integer and static objectives with their ratios."""
    ints = result.integer_batches
    static = result.static_objective()
    return {
        "schedule": label,
        "first_batch": int(ints[0]),
        "last_batch": int(ints[-1]),
        "min_batch": int(ints.min()),
        "max_batch": int(ints.max()),
        "objective": result.objective,
        "integer_objective": result.integer_objective,
        "static_objective": static,
        "reduction_vs_static": 1.0 - result.objective / static,
        "integer_over_continuous": result.integer_objective / result.objective,
        "integer_reduction_vs_static": 1.0 - result.integer_objective / static,
    }
