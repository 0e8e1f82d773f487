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
from collections.abc import Iterable
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
    rows = []
    for schedule in SCHEDULES:
        result = plan(learning_rates(schedule, steps), 1.0, steps * static_batch, low, high)
        ints = result.integer_batches
        static = result.static_objective()
        rows.append(
            {
                "schedule": schedule,
                "first_batch": int(ints[0]),
                "last_batch": int(ints[-1]),
                "min_batch": int(ints.min()),
                "max_batch": int(ints.max()),
                "objective": result.objective,
                "integer_objective": result.integer_objective,
                "static_objective": static,
                "reduction_vs_static": 1.0 - result.objective / static,
                "integer_over_continuous": result.integer_objective / result.objective,
            }
        )
    return rows


# ------------------------------------------------------------------ seed 004's own stage-1 toy
NOISE_SHAPES = ("constant", "exponential", "linear", "geometric")


def floored_learning_rates(schedule: str, steps: int, floor: float) -> NDArray:
    """``floor + (1 - floor) * learning_rates(schedule, steps)``: a schedule that decays to the
    fraction ``floor`` of its base rate instead of to zero (a common cosine variant)."""
    if not 0.0 <= floor < 1.0:
        raise ValueError(f"learning-rate floor must lie in [0, 1), got {floor:g}")
    return floor + (1.0 - floor) * learning_rates(schedule, steps)


def falling_noise(
    steps: int, shape: str, end: float = 1.0, time_constant: float | None = None
) -> NDArray:
    """Prescribed noise scales ``s_t`` from 1 at the first step towards ``end``, t = 0..steps-1:
    ``constant`` (1); ``exponential`` ``end + (1 - end) exp(-t / time_constant)``; ``linear``
    from 1 to ``end``; ``geometric`` ``end ** (t / (steps - 1))``. For the stage-1 search."""
    t = np.arange(steps, dtype=np.float64)
    last = max(steps - 1, 1)
    if shape == "constant":
        return np.ones(steps)
    if shape == "exponential":
        if time_constant is None or time_constant <= 0:
            raise ValueError("exponential noise needs a positive time constant")
        return end + (1.0 - end) * np.exp(-t / time_constant)
    if shape == "linear":
        return 1.0 + (end - 1.0) * t / last
    if shape == "geometric":
        if end <= 0:
            raise ValueError("geometric noise needs a positive end")
        return end ** (t / last)
    raise ValueError(f"unknown noise shape {shape!r}; known: {', '.join(NOISE_SHAPES)}")


STAGE1_PUBLISHED = {
    "steps": 64,
    "static_batch": 16,
    "first_batch": 26,
    "last_batch": 18,
    "min_batch": 8,
    "max_batch": 26,
    "static_objective": 0.0364224,
    "integer_objective": 0.0326175,
    "integer_reduction_vs_static": 0.1044,  # printed as "10.44% lower than static"
    "integer_over_continuous": 1.00043,
}
"""Seed 004's stage-1 result as its text prints it (64 steps, static batch 16, "batch 26 at step
1 and 18 at step 64, with range 8-26"). Its objectives are in its own units (its base learning
rate times its noise scale), so only their ratio compares; ``1 - 0.0326175 / 0.0364224`` is
10.4466%, which the text prints as 10.44%. The text does not give its learning-rate schedule's
floor, its noise schedule or its batch bounds."""

STAGE1_SETTING = {
    "steps": 64,
    "static_batch": 16,
    "low": 8,
    "high": 64,
    "lr_schedule": "cosine",
    "lr_floor": 0.108,
    "noise_shape": "exponential",
    "noise_end": 0.0905,
    "noise_time_constant": 19.45,
}
"""The closest setting to :data:`STAGE1_PUBLISHED` found, NOT the seed's own (its text does not
give it): cosine decay to a floor of 10.8% of the base rate (``floored_learning_rates``) and noise
falling as ``0.0905 + 0.9095 exp(-t / 19.45)``, batches in [8, 64] (no batch reaches 32, so
[8, 32] gives the same row). It reproduces 26 -> 18 with range 8-26 and a 10.4495% lower
integer objective (seed 10.4466%), but an integer/continuous ratio of 1.000393 (seed 1.00043).

How it was found (deterministic; redo with :func:`stage1_search`), ranking settings by
(integer miss, :func:`stage1_distance`), ties in grid order:

1. Cosine floor 0, 0.01, .., 0.40 x noise {constant; exponential with end 0, 0.02, .., 0.58
   and time constant 2, 4, .., 64; linear and geometric with end 0.01, 0.02, .., 0.99} x high
   in {64, 32}, low 8: 95,038 settings. Best with the four integers right: floor 0.14,
   exponential (0.04, 22), distance 50.5 (integer reduction 10.93%).
2. The exponential family, floor 0.05, 0.055, .., 0.345 x end 0, 0.005, .., 0.295 x time
   constant 10, 10.5, .., 40 (219,600): floor 0.115, (0.08, 20), distance 13.5.
3. A 41 x 41 x 41 grid of floor, end and time constant (steps 0.0005, 0.0005, 0.05) centred on
   the best so far, repeated until the best was the centre (3 rounds): this setting, distance
   4.0 (integers exact; 0.003 points of reduction; 3.7e-5 of ratio).

No setting met all six figures to the seed's printed precision (:func:`stage1_matches`). The
smallest distance regardless of integers, 1.19, was floor 0.1, exponential (0.096, 19.4):
26 -> 17, range 8-26, 10.4463%, ratio 1.000428, one batch off at the last step. Settings near
10.446% with all four integers right had ratios 1.00038-1.00039, and ratios of 1.0002-1.0004
come from almost any setting, so the ratio says little. Cosine to an 18% floor with noise
falling geometrically to 0.07 (an earlier check) gives 26 -> 18, 8-26 but 11.14% and
1.000413 (distance 71). The search covers only these families: the stage-1 toy's own rate and
noise schedules, rounding and bounds are not in its text, so the seed's exact setting cannot
be recovered from it."""


def stage1_schedule(setting: dict) -> TailSchedule:
    """The planned schedule of a stage-1 ``setting`` (keys as in :data:`STAGE1_SETTING`)."""
    steps = setting["steps"]
    rates = floored_learning_rates(setting["lr_schedule"], steps, setting["lr_floor"])
    noise = falling_noise(
        steps, setting["noise_shape"], setting["noise_end"], setting.get("noise_time_constant")
    )
    budget = steps * setting["static_batch"]
    return plan(rates, noise, budget, setting["low"], setting["high"])


def stage1_row(setting: dict) -> dict:
    """A stage-1 setting's row: the keys of :func:`tail_weighted_report` plus
    ``integer_reduction_vs_static`` (the figure the seed printed: integer vs static)."""
    result = stage1_schedule(setting)
    ints = result.integer_batches
    static = result.static_objective()
    return {
        "schedule": f"{setting['lr_schedule']} (floor {setting['lr_floor']:g})",
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


_STAGE1_INTEGERS = ("first_batch", "last_batch", "min_batch", "max_batch")


def stage1_target_reduction() -> float:
    """The seed's integer objective below static, from its two printed objectives (10.4466%)."""
    pub = STAGE1_PUBLISHED
    return 1.0 - pub["integer_objective"] / pub["static_objective"]


def stage1_integer_miss(row: dict) -> int:
    """Sum of the four integer fields' distances from the seed's (first, last, min, max)."""
    return sum(abs(row[k] - STAGE1_PUBLISHED[k]) for k in _STAGE1_INTEGERS)


def stage1_distance(row: dict) -> float:
    """How far a row is from the seed's stage-1 figures, in units of their last printed digit:
    integer misses + |reduction miss| / 0.0001 (0.01 points) + |ratio miss| / 0.00001."""
    reduction = abs(row["integer_reduction_vs_static"] - stage1_target_reduction())
    ratio = abs(row["integer_over_continuous"] - STAGE1_PUBLISHED["integer_over_continuous"])
    return stage1_integer_miss(row) + reduction / 1e-4 + ratio / 1e-5


def stage1_matches(row: dict) -> bool:
    """All six figures at the seed's printed precision: the integers equal, the reduction within
    0.005 points of 10.4466% and the ratio within 0.000005 of 1.00043."""
    return (
        stage1_integer_miss(row) == 0
        and abs(row["integer_reduction_vs_static"] - stage1_target_reduction()) <= 5e-5
        and abs(row["integer_over_continuous"] - STAGE1_PUBLISHED["integer_over_continuous"])
        <= 5e-6
    )


def stage1_search(settings: Iterable[dict]) -> list[tuple[tuple[int, float], dict, dict]]:
    """``(rank, setting, row)`` for each setting, best first; rank is (integer miss, distance).

    Settings the planner rejects (a budget the bounds cannot meet, a non-positive rate) are
    skipped. Ties keep the given order."""
    found = []
    for setting in settings:
        try:
            row = stage1_row(setting)
        except ValueError:
            continue
        found.append(((stage1_integer_miss(row), stage1_distance(row)), setting, row))
    return sorted(found, key=lambda item: item[0])


def stage1_report(setting: dict | None = None) -> dict:
    """The stage-1 row of ``setting`` (default :data:`STAGE1_SETTING`) beside the seed's
    published figures, with the distance, whether all six match, and a sentence saying so."""
    setting = dict(STAGE1_SETTING if setting is None else setting)
    row = stage1_row(setting)
    matches = stage1_matches(row)
    if matches:
        verdict = (
            "This setting matches all six of the seed's stage-1 figures to their printed "
            "precision; the seed's text does not give its setting, so it may still differ."
        )
    else:
        verdict = (
            "Closest setting found by the documented search, not an exact reproduction "
            f"(distance {stage1_distance(row):.2f}): the seed's text does not give its "
            "learning-rate floor, noise schedule or bounds, so its exact setting cannot be "
            "recovered from it."
        )
    return {
        "setting": setting,
        "row": row,
        "published": dict(STAGE1_PUBLISHED),
        "target_integer_reduction": stage1_target_reduction(),
        "distance": stage1_distance(row),
        "integer_miss": stage1_integer_miss(row),
        "matches": matches,
        "verdict": verdict,
    }
