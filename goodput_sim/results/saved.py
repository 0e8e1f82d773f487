"""Checked readers of a results folder's files (``manifest.json``, ``jobs.csv``, ``rounds.csv``,
a sweep's ``summary.csv``) for ``report``, ``plot`` and ``run --manifest``.

Each reader checks the keys, columns and types its users rely on and refuses a damaged file in
one line naming the file, the key or column, and the row, so a folder edited by hand, cut short
by a full disk or written by another tool gives an error, never a traceback or a wrong number.
"""

from __future__ import annotations

import hashlib
import json
import math
import numbers
import os
import re
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pandas as pd

from goodput_sim import bundled
from goodput_sim.errors import InputError, regular_file
from goodput_sim.usertext import read_csv, unique_keys

MAX_SEED = 2**32 - 1
"""Seeds are integers in [0, MAX_SEED] everywhere (numpy's and Python's generators alike)."""


def file_hash(path: str | Path) -> str:
    """sha256 of a file, or of every file below a folder (sorted), for the manifest."""
    path = Path(path)
    digest = hashlib.sha256()
    files = sorted(p for p in path.rglob("*") if p.is_file()) if path.is_dir() else [path]
    for file in files:
        digest.update(str(file.relative_to(path) if path.is_dir() else file.name).encode())
        digest.update(file.read_bytes())
    return digest.hexdigest()


def recorded_inputs(
    inputs: Mapping[str, str | Path | None], folder: Path
) -> tuple[dict[str, str | None], dict[str, str]]:
    """A manifest's ``inputs`` (each as :func:`recorded_input` names it) and ``inputs_absolute``:
    where each input recorded by a path out of ``folder`` was when the run was made, so a results
    folder moved without its inputs still replays on the same machine."""
    named = {k: None if v is None else recorded_input(v, folder) for k, v in inputs.items()}
    absolute = {
        k: str(Path(v).resolve())
        for k, v in inputs.items()
        if v is not None and named[k].startswith("../")
    }
    return named, absolute


def recorded_input(path: str | Path, folder: Path) -> str:
    """How the manifest of the results folder ``folder`` names the input ``path`` (relative paths
    are from the working folder): ``bundled:<name>`` for data shipped with the package (found
    again wherever the package is installed); the path from ``folder`` when the two lie below a
    common folder other than the file system's root, so that a results folder copied together
    with its inputs replays from the copy; the absolute path otherwise."""
    mark = bundled.marked(path)
    if mark is not None:
        return mark
    target, here = Path(path).resolve(), Path(folder).resolve()
    try:
        common = Path(os.path.commonpath([target, here]))
    except ValueError:  # on different drives: no relative path joins them
        return str(target)
    if common == Path(common.anchor):
        return str(target)
    return Path(os.path.relpath(target, here)).as_posix()


def read_json(path: Path, what: str) -> Any:
    """The standard JSON of ``path`` (bare NaN or Infinity, invalid UTF-8 and absurd nesting are
    refused as damage, in one line)."""
    try:
        text = regular_file(path, what).read_text(encoding="utf-8")
        return json.loads(text, parse_constant=_no_constant, object_pairs_hook=unique_keys)
    except InputError:
        raise
    except RecursionError:
        raise InputError(path, f"is not a readable {what}: nested too deeply") from None
    except (OSError, ValueError) as error:
        reason = str(error).splitlines()[0] if str(error) else type(error).__name__
        raise InputError(path, f"is not a readable {what}: {reason}") from None


def _no_constant(token: str) -> Any:
    raise ValueError(f"{token} is not standard JSON")


SUMMARY_KEYS = ("jobs", "finished", "unfinished", "avg_jct", "p95_jct", "makespan")
"""Summary statistics every reader of a run's manifest needs."""


def read_manifest(path: Path) -> dict[str, Any]:
    """A run's ``manifest.json``, its shape checked: ``policy`` and ``agent`` with names,
    ``cluster`` groups, ``config``, ``inputs``, a seed and a summary of numbers."""
    manifest = read_json(path, "results manifest")
    if not isinstance(manifest, dict):
        raise InputError(path, "is not a results manifest: expected a JSON object")
    for key in ("policy", "agent"):
        entry = manifest.get(key)
        if not isinstance(entry, dict) or not _name(entry.get("name")):
            raise InputError(path, "expected an object with a name", key)
    for key in ("cluster", "config", "summary"):
        if not isinstance(manifest.get(key), dict):
            raise InputError(path, "expected an object", key)
    for key in ("inputs", "inputs_absolute", "input_sha256", "params"):
        value = manifest.get(key, {})
        if not isinstance(value, dict):
            raise InputError(path, "expected an object", key)
    for key in ("inputs", "inputs_absolute"):
        for name, value in manifest.get(key, {}).items():
            if value is not None and not (isinstance(value, str) and value):
                raise InputError(path, f"expected a path, found {value!r}", f"{key}.{name}")
    seed = manifest.get("seed", 0)
    if not is_seed(seed):
        raise InputError(path, f"expected an integer in [0, {MAX_SEED}], found {seed!r}", "seed")
    summary = manifest["summary"]
    for key in SUMMARY_KEYS:
        if key not in summary:
            raise InputError(path, "is missing; the run's summary is incomplete", f"summary.{key}")
    for key, value in summary.items():
        if value is not None and not (_number(value) and math.isfinite(value)):
            raise InputError(path, f"expected a number, found {value!r}", f"summary.{key}")
    stopped = manifest.get("stopped")
    if stopped is not None and not isinstance(stopped, str):
        raise InputError(path, f"expected text or null, found {stopped!r}", "stopped")
    return manifest


def is_seed(value: object) -> bool:
    """Whether ``value`` is a valid seed: an integer (not a bool) in [0, MAX_SEED]."""
    return (
        isinstance(value, numbers.Integral)
        and not isinstance(value, bool)
        and 0 <= value <= MAX_SEED
    )


def check_seed(value: object, name: str = "seed") -> int:
    """``value`` as a seed, or a one-line error naming the argument ``name``."""
    if not is_seed(value):
        raise InputError(name, f"expected an integer in [0, {MAX_SEED}], got {value!r}")
    return int(value)


def _name(value: object) -> bool:
    return isinstance(value, str) and bool(value.strip())


def _number(value: object) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


@dataclass(frozen=True)
class Column:
    """A column a reader needs: ``text``, ``number`` (finite, at least ``low``), ``count`` (a
    non-negative integer), ``flag`` (True or False) or ``allocations`` (``rounds.csv``'s
    ``name=GPUs.per.node@batch;...``); ``empty`` allows blank cells."""

    kind: str
    empty: bool = False
    low: float | None = None


JOB_COLUMNS = {
    "name": Column("text"),
    "application": Column("text"),
    "arrival": Column("number", low=0),
    "start": Column("number", empty=True, low=0),
    "finish": Column("number", empty=True, low=0),
    "jct": Column("number", empty=True, low=0),
    "finished": Column("flag"),
}
ROUND_COLUMNS = {
    "time": Column("number", low=0),
    "queued": Column("count"),
    "gpus_in_use": Column("count"),
    "allocations": Column("allocations", empty=True),
    "nodes_up": Column("count"),
    "nodes_down": Column("count"),
    "nodes_starting": Column("count"),
}
SWEEP_COLUMNS = {
    "workload": Column("text"),
    "policy": Column("text"),
    "seed": Column("count"),
    "avg_jct": Column("number", empty=True, low=0),
    "p95_jct": Column("number", empty=True, low=0),
    "makespan": Column("number", empty=True, low=0),
    "gpu_utilization": Column("number", empty=True, low=0),
    "unfinished": Column("count"),
}
SWEEP_OPTIONAL = {
    "load": Column("number", low=0),
    "interval": Column("number", low=0),
    "cluster": Column("text"),
    "ftf_rho_max": Column("number", empty=True, low=0),  # blank: no finished job, or older runs
    "ftf_rho_median": Column("number", empty=True, low=0),
    "ftf_unfair_fraction": Column("number", empty=True, low=0),
}

_ALLOCATION = re.compile(r"[^=;@]+=[0-9]+(?:\.[0-9]+)*(?:@[0-9]+(?:\.[0-9]+)?)?")
_FLAGS = {"True": True, "False": False, "true": True, "false": False}


def read_table(
    path: Path,
    columns: Mapping[str, Column],
    what: str,
    optional: Mapping[str, Column] | None = None,
) -> pd.DataFrame:
    """The CSV ``path`` with every column of ``columns`` present and valid (and those of
    ``optional`` valid where present): numbers as floats, counts as ints, flags as bools, blank
    cells as NaN; anything else is one error naming the file, column and row (1 = the first
    row after the header)."""
    try:
        raw = read_csv(path, what, dtype=str, keep_default_na=False)
        frame = pd.read_csv(path, keep_default_na=False, na_values=[""])
    except InputError:
        raise
    except (OSError, ValueError, UnicodeDecodeError, pd.errors.ParserError) as error:
        reason = str(error).strip().splitlines()[-1] if str(error).strip() else "empty"
        raise InputError(path, f"is not a readable {what}: {reason}") from None
    missing = [c for c in columns if c not in raw.columns]
    if missing:
        raise InputError(path, f"lacks column(s) {', '.join(missing)}; is it a {what}?")
    for name, column in {**columns, **(optional or {})}.items():
        if name in raw.columns:
            frame[name] = _checked(raw[name], column, path, name)
    return frame


def _checked(cells: pd.Series, column: Column, path: Path, name: str) -> pd.Series:
    """One column's cells as their type, or the error naming its first bad cell."""
    text = cells.str.strip()
    blank = text == ""
    if column.kind == "text":
        bad = blank
        value = cells
    elif column.kind == "flag":
        value = text.map(_FLAGS)
        bad = value.isna()
    elif column.kind == "allocations":
        value = cells
        bad = ~blank & ~text.map(_allocations_ok).astype(bool)
    else:
        value = pd.to_numeric(text.where(~blank), errors="coerce")
        finite = value.map(lambda x: math.isfinite(x) if x == x else False)
        bad = ~blank & ~finite
        if column.low is not None:
            bad |= finite & (value < column.low)
        if column.kind == "count":
            bad |= finite & ((value < 0) | (value != value.round()))
    if not column.empty and column.kind not in ("text", "flag"):
        bad |= blank
    if bad.any():
        row = int(bad.to_numpy().argmax())
        found = cells.iloc[row]
        raise InputError(
            path, f"{_expected(column)}, found {found!r}", f"column {name}, row {row + 1}"
        )
    if column.kind == "count":
        return value.astype("int64")
    if column.kind == "allocations":
        return cells.where(~blank, "")
    return value


def _allocations_ok(text: str) -> bool:
    return all(_ALLOCATION.fullmatch(entry) for entry in text.split(";") if entry)


def _expected(column: Column) -> str:
    words = {
        "text": "expected text",
        "flag": "expected True or False",
        "count": "expected a non-negative integer",
        "allocations": "expected allocations name=GPUs@batch;...",
    }
    if column.kind in words:
        return words[column.kind]
    low = "" if column.low is None else f" of at least {column.low:g}"
    return f"expected a finite number{low}"
