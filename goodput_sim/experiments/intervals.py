"""Intervals for experiment reports: means and paired changes over samples (a workload drawn
once under one seed) with 95% percentile bootstrap intervals, none below :data:`MIN_SAMPLES`
samples, and their text. Every interval has its own generator, seeded from
:data:`BOOTSTRAP_SEED` and the statistic's name, so a report is the same bytes for the same
summary and an interval does not move when other rows are added."""

from __future__ import annotations

import json
import math
import zlib
from collections.abc import Mapping
from pathlib import Path

import numpy as np
import pandas as pd

from goodput_sim.errors import InputError
from goodput_sim.results.stats import bootstrap_mean_ci
from goodput_sim.usertext import read_csv

BOOTSTRAP_SEED = 20_251
MIN_SAMPLES = 5  # fewer samples than this get no interval (the values say enough)
SAMPLE = ("workload", "load", "interval", "agent", "params", "seed")
"""The columns of a sweep's summary.csv that name one sample: a workload drawn (or replayed)
once, under one seed."""
NO_INTERVAL = f"n<{MIN_SAMPLES}: no interval"
FIGURE_SUFFIXES = (".png", ".pdf", ".svg")


def read_summary(
    folder: Path, needed: tuple[str, ...], hints: Mapping[str, str] | None = None
) -> tuple[Path, pd.DataFrame]:
    """A sweep's ``summary.csv`` and its path, with the columns a report needs; one-line
    errors for a folder that is not a sweep's (``hints``: what to add when a column is
    missing)."""
    folder = Path(folder)
    if not folder.is_dir():
        raise InputError(folder, "no such results folder")
    path = folder / "summary.csv"
    if not path.is_file():
        raise InputError(folder, "holds no summary.csv: not a sweep's results folder")
    try:
        runs = read_csv(path, "sweep summary", keep_default_na=False, na_values=[""])
    except (ValueError, pd.errors.ParserError) as error:
        raise InputError(path, f"cannot be read ({str(error).splitlines()[0]})") from None
    missing = [c for c in needed if c not in runs.columns]
    if missing:
        hint = "".join((hints or {}).get(c, "") for c in missing)
        raise InputError(path, f"lacks column(s) {missing}{hint}")
    if runs.empty:
        raise InputError(path, "holds no runs")
    return path, runs


def refuse_repeats(
    path: Path,
    runs: pd.DataFrame,
    cell: list[str],
    named: list[str] | None = None,
    advice: str = "",
) -> None:
    """Refuse a summary with more than one run in a report's ``cell`` (columns that make one
    row of its tables), naming the first repeat by its ``named`` columns (default: all of
    ``cell``), then ``advice``."""
    twice = runs.duplicated(cell)
    if twice.any():
        row = runs[twice].iloc[0]
        parts = [f"{column} {row[column]}" for column in named or cell]
        listed = f"{', '.join(parts[:-1])} and {parts[-1]}"
        raise InputError(path, f"has more than one run of {listed}{advice}")


def markdown_table(title: str, columns: list[str]) -> list[str]:
    """The first lines of a report's markdown table: its title, then the header rows."""
    return [title, "", "| " + " | ".join(columns) + " |", "|" + "---|" * len(columns)]


def figure_path(name: str, out: Path) -> Path:
    """Where a report's figure goes: ``name`` as given, or inside ``out`` for a bare name;
    PNG, PDF or SVG by its suffix."""
    path = Path(name)
    if path.suffix.lower() not in FIGURE_SUFFIXES:
        raise InputError("--figure", f"expected a .png, .pdf or .svg file, got {name!r}")
    return path if path.parent != Path() else out / path


def settings_of(path: Path, text: object) -> dict:
    """A run's ``settings`` cell (JSON of its non-default engine settings)."""
    if isinstance(text, float) and math.isnan(text):
        return {}
    try:
        value = json.loads(str(text))
    except ValueError:
        raise InputError(path, f"settings {text!r} is not JSON") from None
    if not isinstance(value, dict):
        raise InputError(path, f"settings {text!r} is not a JSON mapping")
    return value


def sample_name(row: tuple) -> str:
    """One sample's name: its workload and seed, and what else names it when not default."""
    workload, load, interval, agent, params, seed = row
    name = f"{workload}/seed{int(seed)}"
    if float(load) != 1.0:
        name += f"/load{float(load):g}"
    if float(interval) != 60.0:
        name += f"/i{float(interval):g}"
    if str(params) not in ("{}", "nan"):
        name += f"/{agent}{params}"
    return name


def seeded_rng(*names: object) -> np.random.Generator:
    """A generator of its own for one statistic, from the fixed seed and the statistic's name."""
    text = "|".join(str(n) for n in names)
    return np.random.default_rng([BOOTSTRAP_SEED, zlib.crc32(text.encode())])


def mean_interval(values: np.ndarray, *names: object) -> tuple[float, float, float, int]:
    """(mean, low, high, n) of ``values`` with a 95% bootstrap interval, over the ``n`` finite
    ones (a run with no finished job has no average JCT: it is not a sample of the mean); NaN
    bounds below :data:`MIN_SAMPLES` values."""
    values = np.asarray(values, dtype=float)
    values = values[np.isfinite(values)]
    n = int(len(values))
    if not n:
        return math.nan, math.nan, math.nan, 0
    if n < MIN_SAMPLES:
        return float(values.mean()), math.nan, math.nan, n
    low, high = bootstrap_mean_ci(values, seeded_rng(*names))
    return float(values.mean()), low, high, n


def change_interval(ours: np.ndarray, theirs: np.ndarray, *names: object) -> tuple:
    """(n, change, low, high): ``mean(ours) / mean(theirs) - 1`` over the finite pairs, with a
    95% paired bootstrap interval (pairs resampled together); NaN bounds below
    :data:`MIN_SAMPLES` pairs."""
    ours, theirs = np.asarray(ours, dtype=float), np.asarray(theirs, dtype=float)
    keep = np.isfinite(ours) & np.isfinite(theirs)
    ours, theirs = ours[keep], theirs[keep]
    n = int(len(ours))
    if not n or theirs.mean() <= 0:
        return n, math.nan, math.nan, math.nan
    change = float(ours.mean() / theirs.mean() - 1.0)
    if n < MIN_SAMPLES:
        return n, change, math.nan, math.nan
    low, high = bootstrap_mean_ci(np.stack([ours, theirs], axis=1), seeded_rng(*names))
    return n, change, low - 1.0, high - 1.0


def format_value(value: float, digits: int) -> str:
    return "-" if not math.isfinite(value) else f"{value:,.{digits}f}"


def format_interval(mean: float, low: float, high: float, n: int, digits: int) -> str:
    """``mean (low..high), n=N``, or ``mean (n=N<5: no interval)``."""
    if not math.isfinite(mean):
        return "-"
    if not math.isfinite(low):
        return f"{format_value(mean, digits)} (n={n}; {NO_INTERVAL})"
    low_text, high_text = format_value(low, digits), format_value(high, digits)
    return f"{format_value(mean, digits)} ({low_text}..{high_text}), n={n}"


def format_change(change: float, low: float, high: float, n: int) -> str:
    """``+x% (lo..hi), n=N``, or without the interval below :data:`MIN_SAMPLES` pairs."""
    if not math.isfinite(change):
        return f"- (n={n})"
    if not math.isfinite(low):
        return f"{change:+.1%} (n={n}; {NO_INTERVAL})"
    return f"{change:+.1%} ({low:+.1%}..{high:+.1%}), n={n}"
