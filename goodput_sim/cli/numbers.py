"""Number options read by the rule every user file follows (:mod:`goodput_sim.usertext`):
ASCII decimal digits only, so ``--seed 1_0`` is refused instead of read as 10 (click's own
types call ``int()`` and ``float()``, which accept underscores and other scripts' digits)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import click

from goodput_sim.usertext import parse_float, parse_int


class _Plain:
    """Mixed into a click number type: text is read by ``parse`` first (ASCII digits only)."""

    parse: Callable[[str], Any]

    def convert(self, value: Any, param, ctx) -> Any:
        if isinstance(value, str):
            try:
                value = type(self).parse(value)
            except ValueError:
                self.fail(f"{value!r} is not a plain number (ASCII digits, no '_')", param, ctx)
        return super().convert(value, param, ctx)


class _Int(_Plain, click.types.IntParamType):
    parse = staticmethod(parse_int)


class _IntRange(_Plain, click.IntRange):
    parse = staticmethod(parse_int)


class _Float(_Plain, click.types.FloatParamType):
    parse = staticmethod(parse_float)


class _FloatRange(_Plain, click.FloatRange):
    parse = staticmethod(parse_float)


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
