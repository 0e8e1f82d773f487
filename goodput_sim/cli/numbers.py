"""Number options read by the rule every user file follows (:mod:`goodput_sim.usertext`):
ASCII decimal digits only, so ``--seed 1_0`` is refused instead of read as 10 (click's own
types call ``int()`` and ``float()``, which accept underscores and other scripts' digits)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import click

from goodput_sim.usertext import parse_float, parse_int


def _plain(value: Any, parse: Callable[[str], Any], kind: click.ParamType, param, ctx) -> Any:
    """``value`` parsed by ``parse`` when it is text; click's usage error otherwise."""
    if not isinstance(value, str):
        return value
    try:
        return parse(value)
    except ValueError:
        kind.fail(f"{value!r} is not a plain number (ASCII digits, no '_')", param, ctx)


class _Int(click.types.IntParamType):
    def convert(self, value: Any, param, ctx) -> Any:
        return super().convert(_plain(value, parse_int, self, param, ctx), param, ctx)


class _IntRange(click.IntRange):
    def convert(self, value: Any, param, ctx) -> Any:
        return super().convert(_plain(value, parse_int, self, param, ctx), param, ctx)


class _Float(click.types.FloatParamType):
    def convert(self, value: Any, param, ctx) -> Any:
        return super().convert(_plain(value, parse_float, self, param, ctx), param, ctx)


class _FloatRange(click.FloatRange):
    def convert(self, value: Any, param, ctx) -> Any:
        return super().convert(_plain(value, parse_float, self, param, ctx), param, ctx)


def Int(min: int | None = None, max: int | None = None, **bounds: Any) -> click.ParamType:  # noqa: N802, A002
    """An integer option in plain ASCII digits, within ``min`` and ``max`` where given."""
    if min is None and max is None:
        return _Int()
    return _IntRange(min, max, **bounds)


def Float(min: float | None = None, max: float | None = None, **bounds: Any) -> click.ParamType:  # noqa: N802, A002
    """A number option in plain ASCII digits, within ``min`` and ``max`` where given."""
    if min is None and max is None:
        return _Float()
    return _FloatRange(min, max, **bounds)
