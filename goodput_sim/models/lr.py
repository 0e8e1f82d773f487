"""Learning-rate schedules: their spelling, each application's default, and their values.

A schedule is written ``name`` or ``name(key=value,...)``:

* ``constant``;
* ``step(at=0.5/0.75,factor=0.1)``: multiplied by ``factor`` at each fraction of training in
  ``at`` (the defaults are the ResNet recipe: /10 at 50% and again at 75%);
* ``cosine(floor=0)``: ``floor + (1 - floor) (1 + cos(pi x)) / 2`` at fraction ``x``.

Rates are relative to the schedule's peak (1). A run may override every application's schedule
(``cosine``) or some (``cifar10:step,bert:cosine(floor=0.1)``); otherwise an application uses
the schedule its profile declares (``limits.lr_schedule``), else :data:`DEFAULT_SCHEDULES`.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass

import numpy as np
from numpy.typing import NDArray

SCHEDULES = ("constant", "step", "cosine")

DEFAULT_SCHEDULES: dict[str, str] = {
    "cifar10": "step(at=0.5/0.75,factor=0.1)",
    "imagenet": "step(at=0.333/0.667,factor=0.1)",
    "yolov3": "step(at=0.8/0.9,factor=0.1)",
    "bert": "cosine",
    "deepspeech2": "cosine",
    "ncf": "constant",
}
"""The schedule each bundled application trains with unless a profile or run says otherwise.
They follow the usual recipes of these models (ResNet on CIFAR-10 and ImageNet: step decay by
10x, at 50%/75% and at 30/60 of 90 epochs; YOLOv3: steps at 80% and 90%; BERT fine-tuning and
DeepSpeech2: smooth decay, here cosine; NCF: Adam at a constant rate). The Pollux measurements
do not record the schedules of their runs, so these are documented assumptions, not data."""
FALLBACK_SCHEDULE = "cosine"  # applications outside the table: the seed's suggested schedule

_SPEC = re.compile(r"^\s*([a-z]+)\s*(?:\((.*)\))?\s*$")
_KEYS = {"constant": (), "step": ("at", "factor"), "cosine": ("floor",)}


@dataclass(frozen=True)
class LRSchedule:
    """A learning-rate schedule relative to its peak, as a function of the fraction of
    training done."""

    kind: str
    at: tuple[float, ...] = (0.5, 0.75)
    factor: float = 0.1
    floor: float = 0.0

    def at_fractions(self, x: NDArray) -> NDArray:
        """The rate at fractions ``x`` of training (in [0, 1])."""
        x = np.asarray(x, dtype=np.float64)
        if self.kind == "constant":
            return np.ones_like(x)
        if self.kind == "step":
            passed = np.searchsorted(np.asarray(self.at), x, side="right")
            return self.factor**passed
        return self.floor + (1.0 - self.floor) * 0.5 * (1.0 + np.cos(math.pi * x))

    def per_epoch(self, epochs: int) -> NDArray:
        """The rate of each of ``epochs`` equal epochs, held for the whole epoch: its value at
        the epoch's midpoint."""
        return self.at_fractions((np.arange(epochs) + 0.5) / epochs)

    def on_grid(self, steps: int) -> NDArray:
        """The rate at each of ``steps`` optimizer steps: a step schedule drops at step
        ``at * steps``, a cosine is read at step midpoints (so the last rate stays positive)."""
        if steps < 1:
            raise ValueError("need at least one step")
        t = np.arange(steps, dtype=np.float64)
        if self.kind == "step":
            passed = (t[:, None] >= np.asarray(self.at) * steps).sum(axis=1)
            return self.factor ** passed.astype(np.float64)
        return self.at_fractions((t + 0.5) / steps)

    def spelled(self) -> str:
        """The schedule as it is written (``parse_schedule(s.spelled()) == s``)."""
        if self.kind == "constant":
            return "constant"
        if self.kind == "step":
            return f"step(at={'/'.join(f'{a:g}' for a in self.at)},factor={self.factor:g})"
        return f"cosine(floor={self.floor:g})"


def parse_schedule(text: str) -> LRSchedule:
    """A schedule from its spelling; ``ValueError`` with one line naming what is wrong."""
    match = _SPEC.match(text) if isinstance(text, str) else None
    if not match or match.group(1) not in SCHEDULES:
        raise ValueError(
            f"unknown learning-rate schedule {text!r}; expected constant, "
            "step(at=F/F,factor=F) or cosine(floor=F)"
        )
    kind, body = match.group(1), match.group(2)
    values: dict[str, object] = {}
    for item in filter(None, (p.strip() for p in (body or "").split(","))):
        key, eq, value = (s.strip() for s in item.partition("="))
        if not eq or key not in _KEYS[kind] or key in values:
            known = ", ".join(_KEYS[kind]) or "none"
            raise ValueError(f"{kind}: bad parameter {item!r} (known: {known})")
        try:
            values[key] = tuple(float(v) for v in value.split("/")) if key == "at" else float(value)
        except ValueError:
            raise ValueError(f"{kind}: {key} must be a number, found {value!r}") from None
    schedule = LRSchedule(kind, **values)  # type: ignore[arg-type]
    problem = _problem(schedule)
    if problem:
        raise ValueError(f"{kind}: {problem}")
    return schedule


def _problem(s: LRSchedule) -> str | None:
    """What makes a schedule invalid (every rate must be positive and finite), if anything."""
    if s.kind == "step":
        if not s.at or not all(0.0 < a < 1.0 for a in s.at) or list(s.at) != sorted(set(s.at)):
            return "at must be increasing fractions in (0, 1), e.g. 0.5/0.75"
        if not 0.0 < s.factor <= 1.0:
            return "factor must lie in (0, 1]"
    if s.kind == "cosine" and not 0.0 <= s.floor < 1.0:
        return "floor must lie in [0, 1)"
    return None


def parse_overrides(text: str) -> dict[str, LRSchedule] | LRSchedule:
    """A run's ``lr_schedule``: one schedule for every application, or ``app:schedule`` pairs
    separated by commas outside parentheses."""
    parts, depth, start = [], 0, 0
    for i, ch in enumerate(text):
        depth += {"(": 1, ")": -1}.get(ch, 0)
        if ch == "," and depth == 0:
            parts.append(text[start:i])
            start = i + 1
    parts.append(text[start:])
    if ":" not in parts[0]:
        if len(parts) > 1:
            raise ValueError("give one schedule, or app:schedule pairs separated by commas")
        return parse_schedule(text)
    out: dict[str, LRSchedule] = {}
    for part in parts:
        app, colon, spec = (s.strip() for s in part.partition(":"))
        if not colon or not app or app in out:
            raise ValueError(f"expected app:schedule, found {part.strip()!r}")
        out[app] = parse_schedule(spec)
    return out


def schedule_for(application: str, declared: str | None, override: str | None) -> LRSchedule:
    """The schedule ``application`` trains with: the run's override, else its profile's
    declaration, else its documented default."""
    if override:
        chosen = parse_overrides(override)
        if isinstance(chosen, LRSchedule):
            return chosen
        if application in chosen:
            return chosen[application]
    return parse_schedule(declared or DEFAULT_SCHEDULES.get(application, FALLBACK_SCHEDULE))
