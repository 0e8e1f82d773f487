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

SCHEDULES = ("constant", "step", "cosine")


def learning_rates(schedule: str, steps: int, base: float = 1.0) -> NDArray:
    """Learning rate at each of ``steps`` optimizer steps.

    ``constant``; ``step``: divided by 10 after 50% and again after 75% of training (the
    ResNet recipe); ``cosine``: ``base * (1 + cos(pi t / steps)) / 2`` evaluated at step
    midpoints, so the last step's rate stays positive."""
    if steps < 1:
        raise ValueError("need at least one step")
    t = np.arange(steps, dtype=np.float64)
    if schedule == "constant":
        return np.full(steps, base)
    if schedule == "step":
        return base * np.where(t < 0.5 * steps, 1.0, np.where(t < 0.75 * steps, 0.1, 0.01))
    if schedule == "cosine":
        return base * 0.5 * (1.0 + np.cos(math.pi * (t + 0.5) / steps))
    raise ValueError(f"unknown learning-rate schedule {schedule!r}; known: {', '.join(SCHEDULES)}")


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
    """The optimum under ``low <= B_t <= high``: steps that hit a bound are fixed there and the
    remaining budget is shared by the others in proportion to ``sqrt(c_t s_t)`` again, until
    no step leaves its bounds (the exact solution of the bounded problem)."""
    weight = np.sqrt(np.asarray(coefficients, dtype=np.float64) * np.asarray(noise, np.float64))
    n = weight.size
    if not low * n <= budget <= high * n:
        raise ValueError(f"budget {budget:g} cannot be met by {n} steps within [{low:g}, {high:g}]")
    out = np.empty(n)
    free = np.ones(n, dtype=bool)
    fixed_sum = 0.0
    for _ in range(n + 1):
        share = (budget - fixed_sum) / weight[free].sum() if weight[free].sum() > 0 else None
        out[free] = (
            weight[free] * share if share is not None else (budget - fixed_sum) / max(free.sum(), 1)
        )
        over, under = free & (out > high), free & (out < low)
        if not over.any() and not under.any():
            return out
        # Fix the side that violates most (in budget terms) first; both converge to the optimum.
        fix = over if (out[over] - high).sum() >= (low - out[under]).sum() else under
        out[fix] = high if fix is over else low
        fixed_sum += out[fix].sum()
        free &= ~fix
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
    as if the estimate held from then on; the window keeps its share."""
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
