"""Numbers and CSV headers read from user text, by one rule for every reader.

Python's ``int()`` and ``float()`` read more than a file shows: ``1_00`` is 100 and ``٣`` is 3.
A number in a user's file is written with ASCII digits only: an optional sign, digits with an
optional decimal point, an optional exponent (``nan`` and ``inf`` are read too, for the range
checks that follow to refuse by name). A CSV whose header names a column twice is ambiguous
(pandas would keep one of them under a changed name), so it is refused.
"""

from __future__ import annotations

import csv
import re
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from goodput_sim.errors import InputError, regular_file

_FLOAT = re.compile(
    r"[+-]?(?:(?:[0-9]+\.?[0-9]*|\.[0-9]+)(?:[eE][+-]?[0-9]+)?|inf|infinity|nan)",
    re.IGNORECASE,
)
_INT = re.compile(r"[+-]?[0-9]+")


def parse_float(text: str) -> float:
    """``text`` (spaces around it ignored) as a float; ValueError unless it is a plain decimal
    number in ASCII digits (no ``_``, no other script's digits)."""
    stripped = text.strip()
    if not _FLOAT.fullmatch(stripped):
        raise ValueError(f"not a number: {text!r}")
    return float(stripped)


def parse_int(text: str) -> int:
    """``text`` (spaces around it ignored) as an int; ValueError unless it is ASCII digits with
    an optional sign."""
    stripped = text.strip()
    if not _INT.fullmatch(stripped):
        raise ValueError(f"not an integer: {text!r}")
    return int(stripped)


def is_number_text(text: str) -> bool:
    """Whether :func:`parse_float` reads ``text``."""
    return _FLOAT.fullmatch(text.strip()) is not None


def refuse_repeated_columns(
    path: str | Path | None, header: Sequence[str], where: int | str | None = 1
) -> None:
    """Refuse a header that names a column twice (``where``: line 1 of a file by default)."""
    seen: dict[str, int] = {}
    for number, name in enumerate(header, start=1):
        key = name.strip()
        if key in seen:
            raise InputError(
                path,
                f"column {key!r} appears twice (columns {seen[key]} and {number}); expected "
                "each column once",
                where,
            )
        seen[key] = number


def csv_header(path: str | Path, encoding: str = "utf-8-sig") -> list[str]:
    """The first row of the CSV ``path`` (empty for an empty file, or one the csv module cannot
    split: the reader that follows reports it)."""
    with Path(path).open(newline="", encoding=encoding) as handle:
        try:
            return next(csv.reader(handle), [])
        except csv.Error:
            return []


def read_csv(path: str | Path, what: str = "CSV file", **options: Any):
    """``pandas.read_csv(path, **options)`` of a regular file whose header names each column
    once; OSError, UnicodeDecodeError, ``csv.Error`` and pandas' errors pass to the caller."""
    import pandas as pd

    path = regular_file(path, what)
    refuse_repeated_columns(path, csv_header(path, options.get("encoding") or "utf-8-sig"))
    return pd.read_csv(path, **options)


def unique_keys(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    """A JSON object's pairs as a dict (``json.loads``' ``object_pairs_hook``); a key given
    twice is a ValueError, not the last value silently kept."""
    out: dict[str, Any] = {}
    for key, value in pairs:
        if key in out:
            raise ValueError(f"key {key!r} appears twice in one object")
        out[key] = value
    return out
