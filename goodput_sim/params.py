"""Parameters of policies and batch agents, declared as data and validated in one place.

Each policy or agent class lists its :class:`Param` declarations; ``--param KEY=VALUE`` (CLI)
and ``params={...}`` (Python) are checked against them, with one-line errors naming the key,
the value and what is valid."""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from goodput_sim.errors import InputError
from goodput_sim.plugins import did_you_mean
from goodput_sim.usertext import parse_float, parse_int

_TRUE, _FALSE = {"true", "yes", "on", "1"}, {"false", "no", "off", "0"}


@dataclass(frozen=True)
class Param:
    """One declared parameter: a type (bool, int, float, or str with ``choices``), a default and
    an inclusive range."""

    name: str
    kind: type
    default: Any
    help: str
    low: float | None = None
    high: float | None = None
    choices: tuple[str, ...] = ()

    def describe_range(self) -> str:
        if self.kind is bool:
            return "true or false"
        if self.kind is str:
            return "one of " + ", ".join(self.choices)
        low = "-inf" if self.low is None else f"{self.low:g}"
        high = "inf" if self.high is None else f"{self.high:g}"
        return f"{self.kind.__name__} in [{low}, {high}]"

    def convert(self, value: Any, owner: str) -> Any:
        """``value`` (text from the command line, or a Python value) as this parameter's type,
        checked against its range."""
        problem = f"{owner} parameter {self.name}={value!r}: expected {self.describe_range()}"
        if self.kind is bool:
            if isinstance(value, bool):
                return value
            text = str(value).strip().lower()
            if text in _TRUE | _FALSE:
                return text in _TRUE
            raise InputError("--param", problem)
        if self.kind is str:
            if isinstance(value, str) and value.strip() in self.choices:
                return value.strip()
            raise InputError("--param", problem)
        try:
            if isinstance(value, bool):
                raise ValueError
            if isinstance(value, str):  # ASCII digits only: float() reads 1_0 and other scripts
                number = parse_int(value) if self.kind is int else parse_float(value)
            else:
                number = self.kind(value)
            if self.kind is int and not isinstance(value, str) and number != value:
                raise ValueError
        except (TypeError, ValueError, OverflowError):
            raise InputError("--param", problem) from None
        if not math.isfinite(number):
            raise InputError("--param", problem)
        if (self.low is not None and number < self.low) or (
            self.high is not None and number > self.high
        ):
            raise InputError("--param", problem)
        return number


def resolve(declared: Iterable[Param], given: Mapping[str, Any], owner: str) -> dict[str, Any]:
    """Every declared parameter's value: the given ones converted and checked, the rest at
    their defaults. An undeclared key is an error."""
    declared = {p.name: p for p in declared}
    unknown = sorted(set(given) - set(declared))
    if unknown:
        known = ", ".join(sorted(declared)) or "none"
        hint = did_you_mean(unknown[0], declared)
        raise InputError(
            "--param", f"{owner} has no parameter {unknown[0]!r}{hint}; its parameters: {known}"
        )
    return {
        name: p.convert(given[name], owner) if name in given else p.default
        for name, p in declared.items()
    }


def parse_assignments(items: Iterable[str]) -> dict[str, str]:
    """``KEY=VALUE`` strings (repeatable ``--param``) as a mapping; a repeated key is an error."""
    out: dict[str, str] = {}
    for item in items:
        key, sep, value = item.partition("=")
        key = key.strip()
        if not sep or not key or not value.strip():
            raise InputError("--param", f"expected KEY=VALUE, got {item!r}")
        if key in out:
            raise InputError("--param", f"{key!r} given twice")
        out[key] = value.strip()
    return out
