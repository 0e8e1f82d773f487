"""Toy models showing that higher examples/s can mean a longer time to a fixed loss target.

Two scalar problems on L(w) = w^2 / 2, both timed with one invented cost model
(``overhead + batch * per_example`` seconds per update), never with a stopwatch:

* :func:`counterexample` - every example has gradient ``w``, so a bigger batch adds no
  information; the update loop is actually run until the target loss is met.
* :func:`noisy_recurrence` - each example's gradient is ``w`` plus zero-mean noise of variance
  ``sigma^2``; the exact expected-loss recurrence is stepped until the target is met, and
  configurations whose target lies at or below the loss floor are marked unreachable.
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Literal

DEFAULT_COUNTEREXAMPLE_BATCHES: tuple[int, ...] = (64, 1024)
DEFAULT_RECURRENCE_BATCHES: tuple[int, ...] = (16, 32, 64, 128, 256, 512, 1024, 2048)
DEFAULT_SIGMAS: tuple[float, ...] = (0.0, 0.2, 0.8)

Status = Literal["reached", "unreachable", "not_reached_within_limit"]


def update_seconds(batch: int, overhead: float = 0.01, per_example: float = 1e-4) -> float:
    """Modeled seconds for one update: fixed overhead plus per-example processing cost."""
    return overhead + batch * per_example


@dataclass(frozen=True)
class CounterexampleRow:
    """Outcome of the noise-free scalar run for one batch size."""

    batch: int
    updates: int
    final_loss: float
    seconds: float
    examples: int
    examples_per_second: float


def _batch_gradient(w: float, batch: int) -> float:
    """Average of ``batch`` per-example gradients, each equal to ``w`` (identical examples)."""
    return math.fsum(w for _ in range(batch)) / batch


def counterexample(
    batches: Iterable[int] = DEFAULT_COUNTEREXAMPLE_BATCHES,
    lr: float = 0.25,
    target: float = 1e-4,
    overhead: float = 0.01,
    per_example: float = 1e-4,
    w0: float = 1.0,
    max_updates: int = 100_000,
) -> list[CounterexampleRow]:
    """Run gradient descent on w^2/2 per batch size until loss <= target; report modeled cost.

    Raises ValueError if the target is not met within ``max_updates`` (e.g. a divergent lr).
    """
    rows: list[CounterexampleRow] = []
    for batch in batches:
        if batch < 1:
            raise ValueError(f"batch must be >= 1, got {batch}")
        w, updates = w0, 0
        while w * w / 2 > target:
            if updates >= max_updates:
                raise ValueError(f"batch {batch}: loss > {target} after {max_updates} updates")
            w -= lr * _batch_gradient(w, batch)
            updates += 1
        step = update_seconds(batch, overhead, per_example)
        rows.append(
            CounterexampleRow(
                batch=batch,
                updates=updates,
                final_loss=w * w / 2,
                seconds=updates * step,
                examples=updates * batch,
                examples_per_second=batch / step,
            )
        )
    return rows


@dataclass(frozen=True)
class RecurrenceRow:
    """Time to the expected-loss target for one (sigma, batch); times are None unless reached."""

    sigma: float
    batch: int
    status: Status
    updates: int | None
    seconds: float | None
    examples: int | None
    floor: float

    @property
    def reached(self) -> bool:
        """True when the target was met within the step limit."""
        return self.status == "reached"


def loss_floor(sigma: float, batch: int, eta: float = 0.25) -> float:
    """Limit of the expected loss: half the fixed point eta*sigma^2 / (B*(2-eta)) of E[w^2]."""
    if not 0.0 < eta < 2.0:
        raise ValueError(f"eta must lie in (0, 2) for the recurrence to converge, got {eta}")
    return eta * sigma**2 / (batch * (2.0 - eta)) / 2.0


def noisy_recurrence(
    sigmas: Iterable[float] = DEFAULT_SIGMAS,
    batches: Iterable[int] = DEFAULT_RECURRENCE_BATCHES,
    eta: float = 0.25,
    target: float = 1e-4,
    overhead: float = 0.01,
    per_example: float = 1e-4,
    second_moment0: float = 1.0,
    max_steps: int = 100_000,
) -> list[RecurrenceRow]:
    """Step E[w^2] <- (1-eta)^2 E[w^2] + eta^2 sigma^2 / B until E[w^2]/2 <= target.

    Every (sigma, batch) pair yields a row: a target at or below the loss floor is
    ``unreachable``; a reachable target not met within ``max_steps`` is
    ``not_reached_within_limit``. Neither gets a time.
    """
    batches = tuple(batches)
    rows: list[RecurrenceRow] = []
    for sigma in sigmas:
        for batch in batches:
            if batch < 1:
                raise ValueError(f"batch must be >= 1, got {batch}")
            floor = loss_floor(sigma, batch, eta)
            status: Status = "unreachable"
            updates = None
            if target > floor:
                m, steps = second_moment0, 0
                while m / 2 > target and steps < max_steps:
                    m = (1 - eta) ** 2 * m + eta**2 * sigma**2 / batch
                    steps += 1
                if m / 2 <= target:
                    status, updates = "reached", steps
                else:
                    status = "not_reached_within_limit"
            step = update_seconds(batch, overhead, per_example)
            rows.append(
                RecurrenceRow(
                    sigma=sigma,
                    batch=batch,
                    status=status,
                    updates=updates,
                    seconds=None if updates is None else updates * step,
                    examples=None if updates is None else updates * batch,
                    floor=floor,
                )
            )
    return rows


def fastest_per_sigma(rows: Iterable[RecurrenceRow]) -> dict[float, RecurrenceRow | None]:
    """Fastest reached row per sigma (ties go to the smaller batch); None if none reached."""
    best: dict[float, RecurrenceRow | None] = {}
    for row in rows:
        current = best.setdefault(row.sigma, None)
        if not row.reached:
            continue
        assert row.seconds is not None
        if current is None or (row.seconds, row.batch) < (current.seconds, current.batch):
            best[row.sigma] = row
    return best
