"""Workloads: load and validate workload CSVs, derive Philly statistics, generate new workloads.

A workload CSV has one job per row (columns :data:`WORKLOAD_COLUMNS`); it is the format of the
Pollux OSDI'21 artifact (SPEC 1.5). New workloads are drawn from statistics derived once from the
public Philly trace (SPEC 8.2) and shipped as ``traces/philly_stats.yaml``, so the trace itself is
never needed (nor copied) to generate a workload.
"""

from __future__ import annotations

import contextlib
import csv
import datetime as dt
import hashlib
import math
import numbers
import warnings
import zlib
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from types import MappingProxyType
from typing import Any

import numpy as np
import pandas as pd
import yaml

from goodput_sim import bundled
from goodput_sim.errors import InputError, regular_file
from goodput_sim.inputs.safe_yaml import load_yaml
from goodput_sim.models.limits import CATEGORIES
from goodput_sim.usertext import parse_float, read_csv, refuse_repeated_columns

WORKLOAD_COLUMNS = ("name", "time", "application", "num_replicas", "batch_size")
CATEGORY_COLUMN = "category"  # optional: adaptive (the default), scale-gpus or rigid
MAX_ARRIVAL_SECONDS = 10 * 365 * 86400.0  # ten years: later arrivals are input errors
MAX_LOAD = 16.0  # a load factor's largest: 16 times a workload's own arrival rate
MAX_GENERATED_JOBS = 10_000_000  # a generated workload's most jobs
MAX_GENERATED_HOURS = int(MAX_ARRIVAL_SECONDS // 3600)  # arrivals a workload may hold
_MAX_COUNT = 1e12  # GPUs or batch sizes beyond this are typos, not requests
_NAME_FORBIDDEN = (";", "=")  # they separate entries of the rounds.csv allocations column

# Pollux OSDI'21 artifact, TunedJobs, SPEC 7.3: the (num_replicas, batch_size) options per app,
# chosen by the artifact's get_configurations(0.5, 0.8) (scaling efficiency 50-80 %, JCT < 12 h).
TUNED_CONFIGURATIONS: Mapping[str, tuple[tuple[int, int], ...]] = MappingProxyType(
    {
        "bert": ((6, 384), (8, 384), (12, 384), (16, 384)),
        "cifar10": ((6, 2048), (8, 2048), (12, 4096), (16, 4096)),
        "deepspeech2": ((6, 320), (8, 320), (12, 640)),
        "imagenet": ((24, 3200), (32, 6400), (48, 6400)),
        "ncf": ((1, 32768),),
        "yolov3": ((4, 64),),
    }
)

# The Sia artifact's imagenet menu (its rtx-computed TunedJobs, Sia README "Workload CSVs"): its
# heterogeneous clusters have no type with the 24-48 GPUs of the T4 menu's imagenet sizes.
SIA_IMAGENET_CONFIGURATIONS = ((10, 1600), (12, 3200), (14, 3200))


def heterogeneous_variant(df: pd.DataFrame, seed: int = 0) -> pd.DataFrame:
    """A workload for the Sia artifact's 64-GPU heterogeneous cluster, made the way its philly
    set was made from Pollux's (Sia README): every ncf job becomes cifar10 with a configuration
    of the T4 cifar10 menu, and every imagenet job asking for more than 16 GPUs takes one of
    the Sia imagenet menu; arrivals and other jobs are unchanged. Drawn with ``seed``."""
    rng = np.random.default_rng(seed)
    out = df.copy()
    for row in np.flatnonzero(out["application"].to_numpy() == "ncf"):
        replicas, batch = TUNED_CONFIGURATIONS["cifar10"][rng.integers(4)]
        out.loc[row, ["application", "num_replicas", "batch_size"]] = ["cifar10", replicas, batch]
    big = (out["application"] == "imagenet") & (out["num_replicas"] > 16)
    for row in np.flatnonzero(big.to_numpy()):
        replicas, batch = SIA_IMAGENET_CONFIGURATIONS[rng.integers(3)]
        out.loc[row, ["num_replicas", "batch_size"]] = [replicas, batch]
    out["name"] = [f"{app}-{rank}" for rank, app in enumerate(out["application"])]
    if np.all(out["time"] == np.round(out["time"])):
        out["time"] = out["time"].astype("int64")
    return out


# Pollux OSDI'21 artifact, per-app constants, SPEC 1.6: initial batch size M0 and max batch size.
_M0: Mapping[str, int] = MappingProxyType(
    {"bert": 12, "cifar10": 128, "deepspeech2": 20, "imagenet": 200, "ncf": 256, "yolov3": 8}
)
_MAX_BATCH: Mapping[str, int] = MappingProxyType(
    {
        "bert": 384,
        "cifar10": 4096,
        "deepspeech2": 640,
        "imagenet": 12800,
        "ncf": 32768,
        "yolov3": 512,
    }
)
_REALISTIC_MAX_GPUS = 64  # realistic GPU requests are capped at the 16x4-GPU reference cluster

# gpu_time buckets in GPU-hours (SPEC 8.2 step 5), lower edge inclusive.
BUCKETS = ("<1h", "1-10h", "10-100h", ">=100h")
_BUCKET_EDGES_HOURS = (0.0, 1.0, 10.0, 100.0, math.inf)
# Application per bucket: each listed app equally likely (1-10h is deepspeech2, or bert half the
# time, as in SPEC 8.2 step 7).
_BUCKET_APPS: Mapping[str, tuple[str, ...]] = MappingProxyType(
    {
        "<1h": ("cifar10", "ncf"),
        "1-10h": ("deepspeech2", "bert"),
        "10-100h": ("yolov3",),
        ">=100h": ("imagenet",),
    }
)

# Philly filtering and the arrival window (SPEC 8.1-8.2).
_PHILLY_COLUMNS = ("timestamp", "duration", "num_gpus", "gpu_time")
_MIN_DURATION_S = 60.0
_MAX_GPU_HOURS = 1000.0
_SHIFT_HOURS = 2
_WINDOW_HOURS = 8
_REALISTIC_MAX_DURATION_S = 24 * 3600


@dataclass(frozen=True)
class Preset:
    """A named set of generate_workload arguments."""

    num_jobs: int
    hours: int = _WINDOW_HOURS
    days: int | None = None
    seed: int = 1
    realistic: bool = False


PRESETS: Mapping[str, Preset] = MappingProxyType(
    {
        "default": Preset(num_jobs=160, hours=8, seed=1),
        "realistic": Preset(num_jobs=160, hours=8, seed=1, realistic=True),
        "scale": Preset(num_jobs=10_000, days=7, seed=1),
    }
)


def bundled_path(name: str) -> Path:
    """Path of a file shipped in the repository's ``traces/`` folder (e.g. philly_stats.yaml)."""
    return bundled.path(f"traces/{name}")


def bundled_workload() -> Path:
    """The default workload shipped in ``traces/workloads/``."""
    return bundled_path("workloads/default.csv")


# --------------------------------------------------------------------------- loading workloads


def load_workload(
    path: str | Path,
    applications: Iterable[str] | None = None,
    max_gpus: int | None = None,
) -> pd.DataFrame:
    """Read a workload CSV and check it with :func:`check_workload` (the checks a DataFrame
    given to the Python API passes too); return its jobs sorted by (time, file order).

    Rows stream into columns of text, so a million-job file costs its columns, not a record
    per job."""
    path = Path(path)
    columns: dict[str, list] = {}
    lines: list[int] = []
    for line, values in _read_jobs(path):
        if not columns:
            columns = {c: [] for c in values}
        lines.append(line)
        for column, value in values.items():
            columns[column].append(value)
    if not columns:
        raise InputError(path, "workload has no jobs (only a header)")
    frame = check_workload(pd.DataFrame(columns), path, applications, max_gpus, lines=lines)
    frame["application"] = frame["application"].astype(str)
    if CATEGORY_COLUMN in frame.columns:
        frame[CATEGORY_COLUMN] = [job_category(c) for c in frame[CATEGORY_COLUMN]]
    return frame.sort_values("time", kind="stable").reset_index(drop=True)


def check_workload(
    frame: pd.DataFrame,
    source: str | Path | None,
    applications: Iterable[str] | None = None,
    max_gpus: int | None = None,
    lines: Sequence[int] | None = None,
) -> pd.DataFrame:
    """Check a workload's jobs, read from a CSV or given as a DataFrame: its columns (each
    once, none missing), at least one job, and each job in row order: a name (text, not empty,
    without ``;`` or ``=``, not a repeat), an arrival ``time`` in [0, 10 years] seconds, an
    application (one of ``applications`` when given), ``num_replicas`` and ``batch_size``
    positive integers, a category, a batch within the application's largest validated batch
    (when ``applications`` maps names to profiles) and at most ``max_gpus`` GPUs. Numbers may
    be given as numbers or as their text (``4``, ``4.0``, never ``1_0``).

    Returns the frame with its number columns as numbers (as given when they are number
    columns already). ``lines`` (one per row) puts file lines in the messages, else rows are
    named by their index label; the first bad row is the one reported.

    A job larger than the cluster can never be placed: without this check the gang policies
    (fifo, tiresias) would wait for it forever and the run would never end.
    """
    if not isinstance(frame, pd.DataFrame):
        raise InputError(
            source, f"expected a DataFrame of jobs or a CSV path, found {type(frame).__name__}"
        )
    refuse_repeated_columns(source, [str(c) for c in frame.columns], 1 if lines else None)
    missing = [c for c in WORKLOAD_COLUMNS if c not in frame.columns]
    if missing:
        raise InputError(
            source,
            f"missing column(s) {', '.join(missing)}; expected {', '.join(WORKLOAD_COLUMNS)}",
        )
    if frame.empty:
        raise InputError(source, "has no jobs; expected one row per job")

    def where(row: int) -> str | int:
        return lines[row] if lines is not None else f"row {frame.index[row]}"

    parsed = {c: _numbers(frame[c]) for c in _NUMBER_COLUMNS}
    _check_cells(frame, source, parsed, where)
    typed = _typed(frame, parsed)
    known = None if applications is None else sorted(set(applications))
    profiles = applications if isinstance(applications, Mapping) else {}
    apps = typed["application"]
    bad = np.zeros(len(typed), dtype=bool)
    if known is not None:
        bad |= ~apps.isin(known).to_numpy()
    largest = {
        app: limits.max_batch_size
        for app, profile in profiles.items()
        if (limits := getattr(profile, "limits", None)) is not None
    }
    if largest:
        ceiling = apps.map(largest).to_numpy(dtype=float, na_value=np.inf)
        bad |= typed["batch_size"].to_numpy() > ceiling
    if max_gpus is not None:
        bad |= typed["num_replicas"].to_numpy() > max_gpus
    if bad.any():
        row = int(np.argmax(bad))
        _refuse_job(typed.iloc[row], source, known, largest, max_gpus, where(row))
    return typed


_NUMBER_COLUMNS = ("time", "num_replicas", "batch_size")


def _numbers(column: pd.Series) -> tuple[np.ndarray, np.ndarray]:
    """A column's cells as floats (NaN where a cell is no number) and which cells are numbers:
    numbers (not booleans), or text that :func:`~goodput_sim.usertext.parse_float` reads."""
    if pd.api.types.is_bool_dtype(column):
        return np.full(len(column), np.nan), np.zeros(len(column), dtype=bool)
    if pd.api.types.is_numeric_dtype(column):
        return column.to_numpy(dtype=float, na_value=np.nan), np.ones(len(column), dtype=bool)
    values = np.full(len(column), np.nan)
    ok = np.zeros(len(column), dtype=bool)
    for row, cell in enumerate(column.to_numpy(dtype=object)):
        if isinstance(cell, str):
            with contextlib.suppress(ValueError):
                values[row], ok[row] = parse_float(cell), True
        elif isinstance(cell, numbers.Real) and not isinstance(cell, bool | np.bool_):
            values[row], ok[row] = float(cell), True
    return values, ok


def _check_cells(
    frame: pd.DataFrame,
    source: str | Path | None,
    parsed: Mapping[str, tuple[np.ndarray, np.ndarray]],
    where,
) -> None:
    """Refuse the first row (in row order; within a row, in the order of the rules below)
    whose cells break a rule of their own."""
    names = frame["name"].to_numpy(dtype=object)
    text = np.array([isinstance(n, str) for n in names], dtype=bool)
    blank = text & np.array([isinstance(n, str) and not n.strip() for n in names], dtype=bool)
    forbidden = np.array(
        [isinstance(n, str) and any(c in n for c in _NAME_FORBIDDEN) for n in names], dtype=bool
    )
    repeated = frame["name"].duplicated().to_numpy() & text
    apps = frame["application"].to_numpy(dtype=object)
    app_text = np.array([isinstance(a, str) and bool(a.strip()) for a in apps], dtype=bool)
    time, time_ok = parsed["time"]
    with np.errstate(invalid="ignore"):
        time_bad = ~time_ok | ~(np.isfinite(time) & (time >= 0) & (time <= MAX_ARRIVAL_SECONDS))
        counts = {
            c: ~parsed[c][1]
            | ~(
                np.isfinite(parsed[c][0])
                & (parsed[c][0] >= 1)
                & (parsed[c][0] <= _MAX_COUNT)
                & (np.mod(parsed[c][0], 1) == 0)
            )
            for c in ("num_replicas", "batch_size")
        }
    categories = np.zeros(len(frame), dtype=bool)
    if CATEGORY_COLUMN in frame.columns:
        categories = np.array(
            [job_category(c) not in CATEGORIES for c in frame[CATEGORY_COLUMN]], dtype=bool
        )
        categories |= np.array(
            [not (isinstance(c, str) or _missing(c)) for c in frame[CATEGORY_COLUMN]], dtype=bool
        )
    rules = (
        ~text | blank,
        forbidden,
        ~app_text,
        time_bad,
        counts["num_replicas"],
        counts["batch_size"],
        categories,
        repeated,
    )
    bad = np.logical_or.reduce(rules)
    if not bad.any():
        return
    row = int(np.argmax(bad))
    name, at = names[row], where(row)
    if not text[row]:
        raise InputError(source, f"job name must be text, found {_shown(name)}", at)
    if blank[row]:
        raise InputError(source, "empty job name", at)
    if forbidden[row]:
        char = next(c for c in _NAME_FORBIDDEN if c in name)
        raise InputError(source, f"job name {name!r} may not contain {char!r}", at)
    if not app_text[row]:
        found = apps[row]
        if isinstance(found, str):
            raise InputError(source, "empty application", at)
        raise InputError(source, f"application must be text, found {_shown(found)}", at)
    cell = frame["time"].iloc[row]
    if time_bad[row]:
        if not time_ok[row]:
            raise InputError(source, f"time {_shown(cell)} is not a number", at)
        raise InputError(
            source, f"time {_shown(cell)} must lie in [0, {MAX_ARRIVAL_SECONDS:.0f}] seconds", at
        )
    for column in ("num_replicas", "batch_size"):
        if counts[column][row]:
            raise InputError(
                source,
                f"{column} {_shown(frame[column].iloc[row])} must be a positive integer up to "
                f"{_MAX_COUNT:.0e}",
                at,
            )
    if categories[row]:
        text_value = frame[CATEGORY_COLUMN].iloc[row]
        raise InputError(
            source, f"category {_shown(text_value)} must be one of {', '.join(CATEGORIES)}", at
        )
    first = int(np.flatnonzero(frame["name"].to_numpy(dtype=object) == name)[0])
    raise InputError(source, f"duplicate job name {name!r} (first on {_place(where(first))})", at)


def _shown(cell: object) -> str:
    """A cell as a message shows it: text quoted, a numpy number as the plain number."""
    return repr(cell.item() if isinstance(cell, np.generic) else cell)


def _missing(value: object) -> bool:
    """Whether a cell is missing (None, NaN, pandas' NA)."""
    try:
        return bool(pd.isna(value))
    except (TypeError, ValueError):
        return False


def _place(where: str | int) -> str:
    return f"line {where}" if isinstance(where, int) else str(where)


def _typed(
    frame: pd.DataFrame, parsed: Mapping[str, tuple[np.ndarray, np.ndarray]]
) -> pd.DataFrame:
    """``frame`` (checked) with its number columns as numbers: as given when they are number
    columns already, else a copy with the arrival time as float64 and the counts as int64."""
    convert = [c for c in _NUMBER_COLUMNS if not pd.api.types.is_numeric_dtype(frame[c])]
    if not convert:
        return frame
    out = frame.copy()
    for column in convert:
        values = parsed[column][0]
        out[column] = values if column == "time" else values.astype("int64")
    return out


def _refuse_job(
    job: pd.Series,
    source: str | Path | None,
    known: Sequence[str] | None,
    largest: Mapping[str, int],
    max_gpus: int | None,
    line: int | str | None,
) -> None:
    """Raise the message for the first check that ``job`` fails (see check_workload)."""
    name, application = job["name"], job["application"]
    if known is not None and application not in known:
        raise InputError(
            source, f"unknown application {application!r}; known: {', '.join(known)}", line
        )
    if application in largest and job["batch_size"] > largest[application]:
        raise InputError(
            source,
            f"job {name!r} asks for batch {int(job['batch_size'])}, more than {application}'s "
            f"largest validated batch {largest[application]}",
            line,
        )
    raise InputError(
        source,
        f"job {name!r} asks for {int(job['num_replicas'])} GPUs, more than the cluster's "
        f"{max_gpus}",
        line,
    )


def category_text(value: object) -> str:
    """A category cell as text: empty for a missing one (NaN, None), which means adaptive."""
    return value if isinstance(value, str) else ""


def _read_jobs(path: Path) -> Iterator[tuple[int, dict[str, Any]]]:
    """Yield each non-blank data row's 1-based line number and typed values, in file order."""
    try:
        with regular_file(path, "workload CSV").open(newline="", encoding="utf-8-sig") as fh:
            reader = csv.reader(fh)
            header = next(reader, None)
            if header is None:
                raise InputError(
                    path, f"empty file; expected a header {','.join(WORKLOAD_COLUMNS)}"
                )
            _refuse_nul(path, 1, header)
            header = [h.strip() for h in header]
            refuse_repeated_columns(path, header)
            columns = _column_index(path, header)
            for fields in reader:
                if not any(f.strip() for f in fields):
                    continue
                line = reader.line_num
                _refuse_nul(path, line, fields)
                if len(fields) > len(header):  # e.g. an unquoted comma inside a value
                    raise InputError(
                        path,
                        f"expected {len(header)} fields as in the header, got {len(fields)}",
                        line,
                    )
                yield line, _parse_job(path, line, fields, columns)
    except FileNotFoundError:
        raise InputError(path, "file not found") from None
    except (OSError, UnicodeDecodeError, csv.Error) as err:
        raise InputError(path, f"cannot read file: {err}") from None


def _refuse_nul(path: Path, line: int, fields: Sequence[str]) -> None:
    if any("\x00" in f for f in fields):
        raise InputError(path, "holds a NUL byte; expected text", line)


def _column_index(path: Path, header: Sequence[str]) -> dict[str, int]:
    """Map each required column to its position, or fail naming the missing ones."""
    missing = [c for c in WORKLOAD_COLUMNS if c not in header]
    if missing:
        raise InputError(
            path, f"missing column(s) {', '.join(missing)}; header has {', '.join(header)}", 1
        )
    columns = {c: header.index(c) for c in WORKLOAD_COLUMNS}
    if CATEGORY_COLUMN in header:
        columns[CATEGORY_COLUMN] = header.index(CATEGORY_COLUMN)
    return columns


def _parse_job(
    path: Path,
    line: int,
    fields: Sequence[str],
    columns: Mapping[str, int],
) -> dict[str, str]:
    """One data row's cells of the workload's columns, as text without the spaces around it
    (:func:`check_workload` reads and checks them)."""
    if len(fields) <= max(columns.values()):
        raise InputError(
            path, f"expected at least {max(columns.values()) + 1} fields, got {len(fields)}", line
        )
    return {c: fields[i].strip() for c, i in columns.items()}


def job_category(value: object) -> str:
    """A checked category cell's category (``adaptive`` when empty or missing)."""
    return category_text(value).strip() or "adaptive"


def write_workload(df: pd.DataFrame, path: str | Path) -> None:
    """Write a workload DataFrame as CSV in the reference format."""
    Path(path).parent.mkdir(parents=True, exist_ok=True)
    df.loc[:, workload_columns(df)].to_csv(path, index=False)


def workload_columns(df: pd.DataFrame) -> list[str]:
    """The columns a workload frame is written with: the reference's, and ``category`` when
    the frame has one."""
    return [*WORKLOAD_COLUMNS, *([CATEGORY_COLUMN] if CATEGORY_COLUMN in df.columns else [])]


def categorize(df: pd.DataFrame, shares: Mapping[str, float], seed: int = 0) -> pd.DataFrame:
    """``df`` with a ``category`` column drawn i.i.d. per job with the given probabilities
    (e.g. ``{"rigid": 0.25}``; the rest adaptive), seeded: the Sia artifact's way of making its
    limited-adaptivity workloads (SPEC 4.8). Each job draws one uniform number whatever the
    shares, so with one seed a job rigid at 25% is rigid at 50% too (nested mixes)."""
    unknown = sorted(set(shares) - set(CATEGORIES))
    if unknown:
        raise InputError(None, f"unknown category {unknown[0]!r}; known: {', '.join(CATEGORIES)}")
    values = [float(v) for v in shares.values()]
    if any(not math.isfinite(v) or v < 0 for v in values) or sum(values) > 1 + 1e-9:
        raise InputError(
            None, f"category shares must be non-negative and sum to at most 1, got {dict(shares)}"
        )
    draws = np.random.default_rng(seed).random(len(df))
    out = df.copy()
    labels = np.full(len(df), "adaptive", dtype=object)
    edge = 0.0
    for category in ("rigid", "scale-gpus"):
        share = float(shares.get(category, 0.0))
        labels[(draws >= edge) & (draws < edge + share)] = category
        edge += share
    out[CATEGORY_COLUMN] = labels
    return out


def summarize_workload(df: pd.DataFrame) -> str:
    """One-line summary: job count, arrival span and application mix."""
    mix = df["application"].value_counts().sort_index()
    mix_text = " ".join(f"{app}={n}" for app, n in mix.items())
    return f"{len(df)} jobs, arrivals {df['time'].min():g}-{df['time'].max():g} s, mix {mix_text}"


def check_load(load: object) -> float:
    """A load factor: a number in (0, MAX_LOAD]."""
    if isinstance(load, bool) or not isinstance(load, int | float | np.number):
        raise InputError(None, f"must be a number, got {load!r}", "load")
    if not (math.isfinite(load) and 0 < load <= MAX_LOAD):
        raise InputError(None, f"must lie in (0, {MAX_LOAD:g}], got {load!r}", "load")
    return float(load)


def resample_jobs(df: pd.DataFrame, load: float = 1.0, seed: int = 0) -> pd.DataFrame:
    """``load`` times the jobs of ``df`` in the same arrival window, drawn with ``seed``: the
    load and seed axes of a sweep for workloads given as files.

    Seed 0 keeps the file's own jobs, as the reference builds its load sets from one sample: a
    lower load keeps a random subset (arrivals unchanged), a higher load adds copies of randomly
    drawn jobs. Any other seed draws every job anew (a bootstrap: application and size of a
    random job of the file). A drawn job arrives at the time of another random job moved by up to
    5 minutes within the window, so the application mix and the arrival-hour pattern stay the
    file's. Jobs are renamed ``<application>-<rank>`` in arrival order, as generated workloads
    are. Load 1.0 with seed 0 returns ``df`` unchanged."""
    check_load(load)
    if load == 1.0 and seed == 0:
        return df
    # Seeded by the jobs too, so that the workloads of one sweep are not thinned alike.
    content = zlib.crc32(df.loc[:, list(WORKLOAD_COLUMNS)].to_csv(index=False).encode())
    rng = np.random.default_rng([seed, content])
    count = max(1, round(load * len(df)))
    if seed == 0 and count <= len(df):
        picked = df.iloc[np.sort(rng.choice(len(df), size=count, replace=False))]
    else:
        kept = df if seed == 0 else df.iloc[:0]
        drawn = df.iloc[rng.integers(0, len(df), count - len(kept))].copy()
        times = df["time"].to_numpy(dtype=float)
        moved = times[rng.integers(0, len(df), len(drawn))] + rng.uniform(-300, 300, len(drawn))
        drawn["time"] = np.clip(np.round(moved), times.min(), times.max())
        picked = pd.concat([kept, drawn], ignore_index=True)
    out = picked.sort_values("time", kind="stable").reset_index(drop=True)
    out["name"] = [f"{app}-{rank}" for rank, app in enumerate(out["application"])]
    return out.astype({"time": df["time"].dtype})


# --------------------------------------------------------------------------- Philly statistics


def derive_philly_stats(philly_csv_path: str | Path) -> dict[str, Any]:
    """Compute the arrival and job-size statistics the generator needs from the Philly trace."""
    path = Path(philly_csv_path)
    raw = read_philly_csv(path)
    trace = raw[philly_filter(raw)].copy()
    trace["shifted"] = trace["timestamp"] - pd.Timedelta(hours=_SHIFT_HOURS)
    trace["hour"] = trace["shifted"].dt.hour
    trace["bucket"] = bucket_of(trace["gpu_time"] / 3600)
    window = trace[trace["hour"] < _WINDOW_HOURS]
    counts = trace["hour"].value_counts().reindex(range(24), fill_value=0)
    return {
        "provenance": _provenance(path, raw, trace, window),
        "hour_of_day": {
            "counts": [int(c) for c in counts],
            "fractions": [round(float(c) / len(trace), 6) for c in counts],
        },
        "window": _window_stats(window),
        "gpu_time_buckets": {
            "edges_gpu_hours": [0, 1, 10, 100],
            "window": _bucket_stats(window),
            "all_hours": _bucket_stats(trace),
        },
    }


def philly_filter(raw: pd.DataFrame) -> pd.Series:
    """The Philly jobs kept (SPEC 8.1): duration >= 60 s and gpu_time < 1,000 GPU-hours."""
    return (raw["duration"] >= _MIN_DURATION_S) & (raw["gpu_time"] < _MAX_GPU_HOURS * 3600)


def read_philly_csv(path: Path) -> pd.DataFrame:
    """Read the raw Philly CSV: its needed columns, each once, and in every row a date and
    time, ``duration`` and ``gpu_time`` in seconds (finite, not negative) and ``num_gpus`` a
    whole number of at least 1; a bad cell is one line naming the file, line and field."""
    path = Path(path)
    if not path.exists():
        raise InputError(path, "file not found")
    try:
        text = read_csv(
            path, "Philly trace", dtype=str, keep_default_na=False, skip_blank_lines=False
        )
    except (OSError, UnicodeDecodeError, pd.errors.ParserError, pd.errors.EmptyDataError) as err:
        reason = " ".join(str(err).split())
        raise InputError(path, f"cannot read Philly trace: {reason}") from None
    missing = [c for c in _PHILLY_COLUMNS if c not in text.columns]
    if missing:
        raise InputError(path, f"missing column(s) {', '.join(missing)}", 1)
    text = text.fillna("")
    lines = text.index.to_numpy() + 2  # skip_blank_lines=False: row k is on line k + 2
    kept = ~(text.apply(lambda column: column.str.strip() == "").all(axis=1)).to_numpy()
    text, lines = text[kept].reset_index(drop=True), lines[kept]
    if text.empty:
        raise InputError(path, "Philly trace has no rows")
    raw = text.copy()
    raw["timestamp"] = _philly_column(path, text, lines, "timestamp")
    for column in ("duration", "num_gpus", "gpu_time"):
        raw[column] = _philly_column(path, text, lines, column)
    return raw


def _philly_column(path: Path, text: pd.DataFrame, lines: np.ndarray, column: str) -> pd.Series:
    """One Philly column read and checked (see read_philly_csv)."""
    cells = text[column].str.strip()
    if column == "timestamp":
        with warnings.catch_warnings():  # a garbled first cell: pandas guesses per cell
            warnings.simplefilter("ignore", UserWarning)
            values = pd.to_datetime(cells, errors="coerce")
        bad, expected = values.isna().to_numpy(), "a date and time"
    else:
        values = pd.to_numeric(cells, errors="coerce")  # ASCII digits only: 1_0 is no number
        numbers = values.to_numpy(dtype=float)
        with np.errstate(invalid="ignore"):
            if column == "num_gpus":
                bad = ~np.isfinite(numbers) | (numbers < 1) | (numbers > _MAX_COUNT)
                bad |= np.mod(numbers, 1) != 0
                expected = f"a whole number of GPUs in [1, {_MAX_COUNT:.0e}]"
            else:
                bad = ~np.isfinite(numbers) | (numbers < 0)
                expected = "a finite number of seconds, not negative"
    if bad.any():
        row = int(np.argmax(bad))
        found = text[column].iloc[row]
        raise InputError(
            path, f"field {column}: found {found!r}, expected {expected}", int(lines[row])
        )
    if column == "timestamp":
        return values
    return values.astype("int64" if column == "num_gpus" else "float64")


def bucket_of(gpu_hours: pd.Series) -> pd.Series:
    """Label each job with its gpu_time bucket (see BUCKETS)."""
    return pd.cut(gpu_hours, list(_BUCKET_EDGES_HOURS), right=False, labels=list(BUCKETS))


def _provenance(
    path: Path, raw: pd.DataFrame, trace: pd.DataFrame, window: pd.DataFrame
) -> dict[str, Any]:
    """Where the statistics came from: file name and hash, row counts, filters, date."""
    return {
        "source": path.name,
        "source_sha256": hashlib.sha256(path.read_bytes()).hexdigest(),
        "reference": "Pollux OSDI'21 artifact (petuum/adaptdl osdi21-artifact), SPEC 8.2",
        "rows": len(raw),
        "rows_filtered": len(trace),
        "rows_window": len(window),
        "filter": f"duration >= {_MIN_DURATION_S:g} s and gpu_time < {_MAX_GPU_HOURS:g} GPU-hours",
        "shift_hours": _SHIFT_HOURS,
        "window_hours": _WINDOW_HOURS,
        "trace_first": str(raw["timestamp"].min()),
        "trace_last": str(raw["timestamp"].max()),
        "derived_on": dt.date.today().isoformat(),
    }


def _window_stats(window: pd.DataFrame) -> dict[str, Any]:
    """Rows, days and inter-arrival times of the jobs submitted in the daily window."""
    times = window.sort_values("shifted")
    gaps = times.groupby(times["shifted"].dt.date)["shifted"].diff().dt.total_seconds().dropna()
    days = int(times["shifted"].dt.date.nunique())
    return {
        "rows": len(window),
        "days": days,
        "mean_jobs_per_day": round(len(window) / days, 3),
        "mean_interarrival_s": round(float(gaps.mean()), 3),
        "median_interarrival_s": round(float(gaps.median()), 3),
    }


def _bucket_stats(jobs: pd.DataFrame) -> dict[str, Any]:
    """Bucket fractions, and per bucket the num_gpus distribution of jobs lasting <= 24 h."""
    fractions = jobs["bucket"].value_counts(normalize=True).reindex(list(BUCKETS), fill_value=0)
    short = jobs[jobs["duration"] <= _REALISTIC_MAX_DURATION_S]
    num_gpus = {}
    for bucket in BUCKETS:
        dist = short.loc[short["bucket"] == bucket, "num_gpus"].value_counts(normalize=True)
        num_gpus[bucket] = {int(g): round(float(f), 6) for g, f in dist.sort_index().items()}
    return {
        "fractions": {b: round(float(f), 6) for b, f in fractions.items()},
        "num_gpus": num_gpus,
    }


def write_philly_stats(stats: Mapping[str, Any], path: str | Path) -> None:
    """Write derived Philly statistics as YAML."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    header = (
        "# Derived by `goodput-sim workload stats` from the public Philly trace (SPEC 8.2).\n"
        "# Hours are of the day shifted back by shift_hours (hour 0 = 02:00); the window is\n"
        "# hours [0, window_hours). Buckets are gpu_time in GPU-hours; num_gpus counts jobs of\n"
        "# <= 24 h per bucket (for realistic GPU requests).\n"
    )
    path.write_text(header + yaml.safe_dump(dict(stats), sort_keys=False), encoding="utf-8")


def load_philly_stats(path: str | Path) -> dict[str, Any]:
    """Read a Philly statistics YAML and check the fields the generator uses."""
    path = Path(path)
    stats = load_yaml(path)
    if not isinstance(stats, dict):
        raise InputError(path, "expected a YAML mapping of Philly statistics")
    _check_weights(path, "hour_of_day.fractions", _get(path, stats, "hour_of_day.fractions"), 24)
    for scope in ("window", "all_hours"):
        where = f"gpu_time_buckets.{scope}"
        fractions = _get(path, stats, f"{where}.fractions")
        _check_weights(path, f"{where}.fractions", [_get(path, fractions, b) for b in BUCKETS])
        num_gpus = _get(path, stats, f"{where}.num_gpus")
        for bucket in BUCKETS:
            dist = _get(path, num_gpus, bucket, f"{where}.num_gpus")
            field = f"{where}.num_gpus.{bucket}"
            if not isinstance(dist, dict) or not all(isinstance(g, int) and g >= 1 for g in dist):
                raise InputError(path, "expected GPU counts (>= 1) mapped to fractions", field)
            _check_weights(path, field, list(dist.values()))
    return stats


def _get(path: Path, mapping: Any, dotted: str, prefix: str = "") -> Any:
    """Look up a dotted key, failing with InputError naming the field."""
    value = mapping
    for key in dotted.split("."):
        if not isinstance(value, dict) or key not in value:
            raise InputError(path, "missing field", f"{prefix}.{dotted}" if prefix else dotted)
        value = value[key]
    return value


def _check_weights(path: Path, field: str, values: Any, length: int | None = None) -> None:
    """Check a list of non-negative finite numbers with a positive sum (and a given length)."""
    ok = isinstance(values, list) and (length is None or len(values) == length)
    ok = ok and all(isinstance(v, int | float) and math.isfinite(v) and v >= 0 for v in values)
    if not ok or sum(values) <= 0:
        size = f"{length} " if length else ""
        raise InputError(path, f"expected {size}non-negative numbers with a positive sum", field)


# --------------------------------------------------------------------------- generator


def generate_workload(
    stats: Mapping[str, Any],
    num_jobs: int,
    hours: int = _WINDOW_HOURS,
    seed: int = 0,
    configurations: Mapping[str, Sequence[tuple[int, int]]] = TUNED_CONFIGURATIONS,
    start_hour: int = 0,
    days: int | None = None,
    realistic: bool = False,
) -> pd.DataFrame:
    """Draw a workload whose arrivals and job sizes follow the Philly statistics.

    Simulation hour k is hour ``(start_hour + k) % 24`` of the shifted Philly day (hour 0 = 02:00).
    The span is ``hours``, or ``days * 24`` hours if ``days`` is given (the full daily pattern
    repeated). Spans inside the reference 8-hour window use the window's gpu_time bucket mix,
    others the all-hours mix. ``realistic`` draws GPU counts from Philly and uses batch = M0 * GPUs.
    """
    span = _check_generate_args(num_jobs, hours, start_hour, days)
    rng = np.random.default_rng(seed)
    times = np.sort(_arrival_times(stats, rng, num_jobs, span, start_hour))
    in_window = days is None and start_hour + span <= _WINDOW_HOURS
    scope = stats["gpu_time_buckets"]["window" if in_window else "all_hours"]
    buckets = rng.choice(
        len(BUCKETS), size=num_jobs, p=_normalized([scope["fractions"][b] for b in BUCKETS])
    )
    apps = draw_applications(rng, buckets)
    if realistic:
        replicas, batches = _realistic_sizes(rng, apps, buckets, scope["num_gpus"])
    else:
        replicas, batches = draw_tuned_sizes(rng, apps, configurations)
    return pd.DataFrame(
        {
            "name": [f"{app}-{rank}" for rank, app in enumerate(apps)],
            "time": times.astype("int64"),
            "application": pd.Series(apps, dtype=str),
            "num_replicas": np.asarray(replicas, dtype="int64"),
            "batch_size": np.asarray(batches, dtype="int64"),
        },
        columns=list(WORKLOAD_COLUMNS),
    )


def _check_generate_args(num_jobs: int, hours: int, start_hour: int, days: int | None) -> int:
    """Validate generator arguments; return the span in hours."""
    for field, value, low, high in (
        ("num_jobs", num_jobs, 1, MAX_GENERATED_JOBS),
        ("hours", hours, 1, MAX_GENERATED_HOURS),
        ("start_hour", start_hour, 0, 23),
        ("days", days, 1, MAX_GENERATED_HOURS // 24),
    ):
        if value is not None and (
            not isinstance(value, int | np.integer) or not low <= value <= high
        ):
            raise InputError(None, f"must be an integer in [{low}, {high}], got {value!r}", field)
    return 24 * days if days is not None else hours


def _normalized(weights: Sequence[float]) -> np.ndarray:
    """Weights scaled to sum to one."""
    w = np.asarray(weights, dtype="float64")
    return w / w.sum()


def _arrival_times(
    stats: Mapping[str, Any], rng: np.random.Generator, n: int, span: int, start_hour: int
) -> np.ndarray:
    """Integer arrival seconds: an hour from the hour-of-day histogram, then a uniform second."""
    daily = np.asarray(stats["hour_of_day"]["fractions"], dtype="float64")
    weights = daily[(start_hour + np.arange(span)) % 24]
    if weights.sum() <= 0:
        raise InputError(
            None,
            "the hour-of-day histogram has no arrivals in the chosen hours",
            "hour_of_day.fractions",
        )
    hour = rng.choice(span, size=n, p=weights / weights.sum())
    return hour * 3600 + rng.integers(0, 3600, size=n)


def draw_applications(rng: np.random.Generator, buckets: np.ndarray) -> list[str]:
    """Pick each job's application uniformly among its bucket's apps."""
    picks = rng.random(len(buckets))
    apps = []
    for bucket, u in zip(buckets, picks, strict=True):
        choices = _BUCKET_APPS[BUCKETS[bucket]]
        apps.append(choices[int(u * len(choices))])
    return apps


def draw_tuned_sizes(
    rng: np.random.Generator,
    apps: Sequence[str],
    configurations: Mapping[str, Sequence[tuple[int, int]]],
) -> tuple[list[int], list[int]]:
    """(num_replicas, batch_size) drawn uniformly from each app's TunedJobs options."""
    missing = sorted(set(apps) - set(configurations))
    if missing:
        raise InputError(None, f"no configurations for {', '.join(missing)}", "configurations")
    picks = rng.random(len(apps))
    chosen = [
        configurations[a][int(u * len(configurations[a]))] for a, u in zip(apps, picks, strict=True)
    ]
    return [r for r, _ in chosen], [b for _, b in chosen]


def _realistic_sizes(
    rng: np.random.Generator,
    apps: Sequence[str],
    buckets: np.ndarray,
    num_gpus: Mapping[str, Mapping[int, float]],
) -> tuple[list[int], list[int]]:
    """GPUs from the bucket's Philly num_gpus distribution (<= 64); batch = M0 * GPUs, clipped."""
    replicas = []
    for bucket in buckets:
        dist = num_gpus[BUCKETS[bucket]]
        gpus = rng.choice(list(dist), p=_normalized(list(dist.values())))
        replicas.append(min(int(gpus), _REALISTIC_MAX_GPUS))
    return replicas, realistic_batches(apps, replicas)


def realistic_batches(apps: Sequence[str], replicas: Sequence[int]) -> list[int]:
    """Batch M0 x GPUs per job, at most the application's largest batch (realistic sizing)."""
    return [min(_M0[a] * int(r), _MAX_BATCH[a]) for a, r in zip(apps, replicas, strict=True)]
