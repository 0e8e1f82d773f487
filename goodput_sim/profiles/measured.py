"""Read the reference measurement format (SPEC 1-2) into an interpolating application profile.

A measurement folder has ``<app>/placements.csv``, ``<app>/scalability.csv`` and
``<app>/validation-<B>.csv``. Deliberate deviations from the reference oracle, so that any
allocation a policy picks has a defined answer instead of a crash:

* a per-GPU batch outside a placement's measured range is clamped to that range (the reference
  raises);
* a placement on more than 4 nodes outside the convex hull of the (nodes, replicas, batch)
  point cloud takes the nearest measured point (the reference returns NaN and asserts);
* a total batch outside the validated batch sizes, or an epoch past the last row, is clamped.
"""

from __future__ import annotations

import re
from functools import cached_property
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np
import pandas as pd
from numpy.typing import ArrayLike, NDArray

from goodput_sim.errors import InputError
from goodput_sim.models.limits import Limits
from goodput_sim.profiles.base import (
    ApplicationProfile,
    Placement,
    canonical_placement,
    interp_rows,
    linear_or_nearest,
)
from goodput_sim.profiles.legacy_floats import legacy_floats
from goodput_sim.usertext import read_csv

if TYPE_CHECKING:
    from goodput_sim.profiles.base import LinearOnTriangulation, NearestOnTree

PLACEMENT_COLUMNS = ("placement", "local_bsz", "step_time", "sync_time")
SCALABILITY_COLUMNS = ("num_nodes", "num_replicas", "local_bsz", "step_time", "sync_time")
VALIDATION_COLUMNS = ("progress", "iteration", "metric", "grad_sqr", "grad_var")
MAX_INTERPOLATED_NODES = 16  # the reference clamps node counts to its largest measured count

# Per-application overrides of limits derived from the traces (SPEC 1.6: yolov3's max local
# batch is 8 although its trace goes to 16).
LIMIT_OVERRIDES: dict[str, dict[str, int]] = {
    "yolov3": {"max_local_bsz": 8},  # SPEC 1.6: the trace's largest is 16
    "ncf": {"max_replicas": 1, "fixed_batch_size": 32768},  # SPEC 5.5, 6.2, 7.1
}

# Per-(application, GPU type) overrides for typed folders (Sia SPEC 1.2: deepspeech2 on rtx
# fits at most 57 per GPU, although its file goes to 80). The Pollux overrides above are rules
# of the Pollux artifact's T4 data and are not applied to typed folders.
TYPE_LIMIT_OVERRIDES: dict[tuple[str, str], dict[str, int]] = {
    ("deepspeech2", "rtx"): {"max_local_bsz": 57},
}

# Pipeline-parallel applications, whose files time one micro-batch on one stage rather than an
# optimizer step (Sia SPEC 7): out of scope, skipped when a typed folder is read.
PIPELINE_APPS = ("gpt_pmp",)

_MAX_LOCAL_BSZ = 1e9  # examples per GPU
_MAX_STEP_SECONDS = 1e5  # a measured optimizer step longer than a day is not a measurement
_VALIDATION_NAME = re.compile(r"^validation-(\d+)\.csv$")


class _RowLines:
    """File line of each data row, found only when an error needs one (blank lines, which the
    parser skips, must not shift the line numbers that errors report)."""

    def __init__(self, path: Path, rows: int):
        self.path, self.rows = path, rows
        self._lines: list[int] | None = None

    def __getitem__(self, row: int) -> int:
        if self._lines is None:
            lines = _data_lines(self.path)
            # e.g. quoted fields spanning lines: fall back to row + 2
            self._lines = lines if len(lines) == self.rows else list(range(2, self.rows + 2))
        return self._lines[row]


def _read_clean_table(
    path: Path, columns: tuple[str, ...], positive: tuple[str, ...], legacy: bool = False
) -> pd.DataFrame | None:
    """The table when every check passes, parsed by pandas' C parser; None otherwise (then the
    slower cell-by-cell reading finds and reports the first problem). ``legacy``: decimals
    read as pandas before 2.0 read them (:mod:`~goodput_sim.profiles.legacy_floats`)."""
    try:
        frame = read_csv(path, "measurement CSV")
    except (
        InputError,
        OSError,
        pd.errors.ParserError,
        pd.errors.EmptyDataError,
        UnicodeDecodeError,
        ValueError,
    ):
        return None
    if frame.empty or any(
        c not in frame.columns or frame[c].dtype.kind not in "iuf" for c in columns
    ):
        return None
    arrays = {c: frame[c].to_numpy(dtype=np.float64) for c in columns}
    if legacy:
        texts = read_csv(path, "measurement CSV", dtype=str, keep_default_na=False)
        arrays.update({c: legacy_floats(texts[c]) for c in columns if frame[c].dtype.kind == "f"})
    # Checked on the arrays: a pandas comparison costs a hundred times numpy's on these sizes.
    if not all(np.isfinite(a).all() for a in arrays.values()) or any(
        (arrays[c] <= 0).any() for c in positive
    ):
        return None
    return pd.DataFrame(arrays)


def _read_table_lines(
    path: Path, columns: tuple[str, ...], positive: tuple[str, ...] = (), legacy: bool = False
) -> tuple[pd.DataFrame, _RowLines]:
    """A measurement CSV, checking columns, numbers and signs, and the file line of every data
    row (errors name file and line); ``legacy`` as :func:`_read_clean_table`."""
    if not path.is_file():
        raise InputError(path, "file is missing")
    clean = _read_clean_table(path, columns, positive, legacy)
    if clean is not None:
        return clean, _RowLines(path, len(clean))
    try:
        frame = read_csv(path, "measurement CSV", dtype=str, keep_default_na=False)
    except (pd.errors.ParserError, pd.errors.EmptyDataError, UnicodeDecodeError) as err:
        reason = " ".join(str(err).split())  # parser messages may span lines: keep one line
        raise InputError(path, f"not a readable CSV file ({reason})") from None
    lines = _RowLines(path, len(frame))
    missing = [c for c in columns if c not in frame.columns]
    if missing:
        raise InputError(
            path, f"missing column(s) {', '.join(missing)}; expected {', '.join(columns)}"
        )
    if frame.empty:
        raise InputError(path, "has no data rows")
    out = pd.DataFrame(index=frame.index)
    for column in columns:
        values = pd.to_numeric(frame[column].str.strip(), errors="coerce")
        bad = values.isna() | ~np.isfinite(values)
        if bad.any():
            row = int(np.argmax(bad.to_numpy()))
            raise InputError(
                path,
                f"column {column!r} must be a number, found {frame[column].iloc[row]!r}",
                where=lines[row],
            )
        if column in positive and (values <= 0).any():
            row = int(np.argmax((values <= 0).to_numpy()))
            raise InputError(
                path,
                f"column {column!r} must be positive, found {values.iloc[row]}",
                where=lines[row],
            )
        out[column] = legacy_floats(frame[column]) if legacy else values.to_numpy(np.float64)
    return out, lines


def _check_ranges(path: Path, table: pd.DataFrame, lines: _RowLines) -> None:
    """Whole per-GPU batches and step times of a measurement, not typos."""
    checks = (
        (
            "local_bsz",
            (table["local_bsz"] > _MAX_LOCAL_BSZ) | (table["local_bsz"] % 1 != 0),
            f"a whole batch size up to {_MAX_LOCAL_BSZ:g}",
        ),
        (
            "step_time",
            table["step_time"] > _MAX_STEP_SECONDS,
            f"at most {_MAX_STEP_SECONDS:g} seconds",
        ),
    )
    for column, bad, valid in checks:
        if bad.any():
            row = int(np.argmax(bad.to_numpy()))
            raise InputError(
                path,
                f"column {column!r} must be {valid}, found {table[column].iloc[row]:g}",
                where=lines[row],
            )


def _check_unique(path: Path, table: pd.DataFrame, key: tuple[str, ...], lines: _RowLines) -> None:
    """Each measurement key appears once (SPEC 1.1): a repeat is a copy-paste error."""
    repeated = table.duplicated(list(key), keep="first").to_numpy()
    if repeated.any():
        row = int(np.argmax(repeated))
        values = ", ".join(f"{k}={table[k].iloc[row]:g}" for k in key)
        raise InputError(path, f"repeats the measurement {values}", where=lines[row])


def _averaged(table: pd.DataFrame, key: tuple[str, ...]) -> tuple[pd.DataFrame, list[int]]:
    """One row per key, repeated measurements averaged (rows in order of first appearance); the
    line numbers no longer name single rows, so later checks report row positions."""
    merged = table.groupby(list(key), sort=False, as_index=False).mean(numeric_only=True)
    return merged[list(table.columns)], list(range(2, len(merged) + 2))


def _data_lines(path: Path) -> list[int]:
    """1-based file line of every data row: the non-blank lines after the header."""
    with path.open(encoding="utf-8") as handle:
        nonblank = [number for number, text in enumerate(handle, start=1) if text.strip()]
    return nonblank[1:]


class MeasuredProfile(ApplicationProfile):
    """Ground truth read straight from a measurement folder, interpolated as SPEC 2 describes.

    With ``gpu_type``, the step times are those of that GPU type (``placements-<type>.csv`` and
    ``scalability-<type>.csv``, the Sia artifact's layout); the gradient statistics and progress
    (``validation-*.csv``) are shared by every type."""

    def __init__(
        self,
        folder: str | Path,
        name: str | None = None,
        gpu_type: str | None = None,
        legacy_floats: bool = False,
    ):
        folder = Path(folder)
        self.folder = folder
        self.name = name or folder.name
        self.gpu_type = gpu_type
        suffix = f"-{gpu_type}" if gpu_type else ""
        placements_path = folder / f"placements{suffix}.csv"
        scalability_path = folder / f"scalability{suffix}.csv"
        placements, lines = _read_table_lines(
            placements_path, PLACEMENT_COLUMNS, PLACEMENT_COLUMNS[:3], legacy_floats
        )
        self._check_sync(placements_path, placements, lines)
        _check_ranges(placements_path, placements, lines)
        if gpu_type:  # the Sia files repeat some measurements: averaged, as its oracle does
            placements, lines = _averaged(placements, ("placement", "local_bsz"))
        _check_unique(placements_path, placements, ("placement", "local_bsz"), lines)
        self.placements = self._with_placement_columns(placements_path, placements, lines)
        scalability, lines = _read_table_lines(
            scalability_path, SCALABILITY_COLUMNS, SCALABILITY_COLUMNS[:4], legacy_floats
        )
        self._check_sync(scalability_path, scalability, lines)
        _check_ranges(scalability_path, scalability, lines)
        if gpu_type:
            scalability, lines = _averaged(scalability, ("num_nodes", "num_replicas", "local_bsz"))
        _check_unique(
            scalability_path, scalability, ("num_nodes", "num_replicas", "local_bsz"), lines
        )
        self.scalability = scalability
        self.batch_sizes, self.validation = self._read_validation(folder, legacy_floats)
        self._scattered_memo: dict[tuple[int, int, float], NDArray] = {}  # (N, R, b) -> step, sync
        self._by_placement = _rows_by_placement(self.placements)
        stacked = {
            c: np.stack([v[c].to_numpy() for v in self.validation]) for c in VALIDATION_COLUMNS
        }
        self._grad_stats = np.stack([stacked["grad_sqr"], stacked["grad_var"]], axis=-1)
        self._iteration = stacked["iteration"]
        self.progress_table = stacked["progress"]
        epochs = self.progress_table.shape[1]
        self.progress_thresholds = np.concatenate([[0.0], self.progress_table.min(axis=0)])
        overrides = (
            TYPE_LIMIT_OVERRIDES.get((self.name, gpu_type), {})
            if gpu_type
            else LIMIT_OVERRIDES.get(self.name, {})
        )
        self.limits = Limits(
            init_batch_size=int(self.batch_sizes[0]),
            max_batch_size=int(self.batch_sizes[-1]),
            min_local_bsz=int(overrides.get("min_local_bsz", placements["local_bsz"].min())),
            max_local_bsz=int(overrides.get("max_local_bsz", placements["local_bsz"].max())),
            max_epochs=epochs,
            max_replicas=overrides.get("max_replicas"),
            fixed_batch_size=overrides.get("fixed_batch_size"),
        )
        for field, problem in self.limits.problems():
            raise InputError(folder, f"derived limit {field} {problem}")

    @staticmethod
    def _check_sync(path: Path, frame: pd.DataFrame, lines: _RowLines) -> None:
        bad = (frame["sync_time"] < 0) | (frame["sync_time"] > frame["step_time"])
        if bad.any():
            row = int(np.argmax(bad.to_numpy()))
            raise InputError(path, "sync_time must lie in [0, step_time]", where=lines[row])

    @staticmethod
    def _with_placement_columns(path: Path, frame: pd.DataFrame, lines: _RowLines) -> pd.DataFrame:
        digits = []
        canonical: dict[float, Placement] = {}  # a placement repeats once per batch size
        for row, value in enumerate(frame["placement"].tolist()):
            if value not in canonical:
                text = str(int(value))
                if value != int(value) or any(d == "0" for d in text):
                    raise InputError(
                        path, f"placement must be digits 1-9, found {value}", where=lines[row]
                    )
                canonical[value] = canonical_placement([int(d) for d in text])
            digits.append(canonical[value])
        frame = frame.copy()
        frame["key"] = digits
        frame["num_nodes"] = [len(d) for d in digits]
        frame["num_replicas"] = [sum(d) for d in digits]
        return frame

    @staticmethod
    def _read_validation(folder: Path, legacy: bool) -> tuple[NDArray, list[pd.DataFrame]]:
        files = sorted(
            (int(m.group(1)), p)
            for p in folder.glob("validation-*.csv")
            if (m := _VALIDATION_NAME.match(p.name))
        )
        if not files:
            raise InputError(folder / "validation-<B>.csv", "file is missing (no validation files)")
        read = [_read_table_lines(p, VALIDATION_COLUMNS, (), legacy) for _, p in files]
        tables = [table for table, _ in read]
        for (_, path), (table, lines) in zip(files, read, strict=True):
            for column in ("grad_sqr", "grad_var", "iteration"):
                bad = table[column].to_numpy() < 0
                if bad.any():
                    row = int(np.argmax(bad))
                    raise InputError(
                        path, f"column {column!r} must not be negative", where=lines[row]
                    )
            # Progress and iterations accumulate over epochs: they must grow from row to row.
            for column in ("progress", "iteration"):
                values = table[column].to_numpy()
                bad = np.flatnonzero(np.diff(values) <= 0)
                if len(bad) or values[0] <= 0:
                    row = int(bad[0]) + 1 if len(bad) else 0
                    raise InputError(
                        path,
                        f"column {column!r} must be positive and increase with the epoch, found "
                        f"{values[row]:g} after {values[row - 1] if row else 0:g}",
                        where=lines[row],
                    )
        lengths = {len(t) for t in tables}
        if len(lengths) != 1:
            raise InputError(
                folder, f"validation files disagree on the number of epochs: {lengths}"
            )
        return np.array([b for b, _ in files], dtype=np.float64), tables

    # ----------------------------------------------------------------------------- throughput
    def step_sync(self, placement: Placement, local_bsz: ArrayLike) -> tuple[NDArray, NDArray]:
        key = canonical_placement(placement)
        local_bsz = np.asarray(local_bsz, dtype=np.float64)
        if key in self._by_placement:
            bsz, step, sync = self._by_placement[key]
            return np.interp(local_bsz, bsz, step), np.interp(local_bsz, bsz, sync)
        # Scattered interpolation is slow, and plans repeat a few batch sizes over many epochs
        # and configurations over many rounds: each (nodes, replicas, b) is interpolated once.
        shape = (min(len(key), MAX_INTERPOLATED_NODES), sum(key))
        sizes, index = np.unique(local_bsz, return_inverse=True)
        memo = self._scattered_memo
        missing = [b for b in sizes.tolist() if (*shape, b) not in memo]
        if missing:
            points = np.column_stack(np.broadcast_arrays(*map(float, shape), missing))
            for b, values in zip(missing, np.column_stack(self._scattered(points)), strict=True):
                memo[(*shape, b)] = values
        values = np.array([memo[(*shape, b)] for b in sizes.tolist()]).reshape(-1, 2)[index]
        return values[..., 0].reshape(local_bsz.shape), values[..., 1].reshape(local_bsz.shape)

    def max_local_bsz_at(self, placement: Placement) -> int:
        """The largest per-GPU batch measured for ``placement`` (Sia SPEC 1.5): among its own
        rows when it is listed, else among the scalability rows with at least its nodes and
        GPUs; the application's ``max_local_bsz`` when neither has a row."""
        key = canonical_placement(placement)
        if key in self._by_placement:
            return int(self._by_placement[key][0].max())
        rows = self.scalability
        wider = rows[(rows["num_nodes"] >= len(key)) & (rows["num_replicas"] >= sum(key))]
        return int(wider["local_bsz"].max()) if len(wider) else self.limits.max_local_bsz

    def _scattered(self, points: NDArray) -> tuple[NDArray, NDArray]:
        linear, nearest = self._scattered_interpolators
        values = linear(points)
        missing = np.isnan(values).any(axis=1)
        if missing.any():
            values[missing] = nearest(points[missing])
        return values[:, 0], values[:, 1]

    @cached_property
    def _scattered_interpolators(
        self,
    ) -> tuple[LinearOnTriangulation | NearestOnTree, NearestOnTree]:
        """3-D (nodes, replicas, local batch) interpolators, built once (the reference rebuilt
        its triangulation on every cache miss)."""
        cols = ["num_nodes", "num_replicas", "local_bsz"]
        small = self.placements.groupby(cols, as_index=False)[["step_time", "sync_time"]].mean()
        cloud = pd.concat([small, self.scalability[cols + ["step_time", "sync_time"]]])
        xyz = cloud[cols].to_numpy()
        values = cloud[["step_time", "sync_time"]].to_numpy()
        return linear_or_nearest(xyz, values)

    # ------------------------------------------------------------------ statistical efficiency
    def grad_stats(self, batch_size: ArrayLike, epoch: ArrayLike) -> tuple[NDArray, NDArray]:
        stats = interp_rows(self.batch_sizes, self._grad_stats, batch_size, epoch)
        return stats[..., 0], stats[..., 1]

    def iterations(self, batch_size: ArrayLike, epoch: ArrayLike) -> NDArray:
        return interp_rows(self.batch_sizes, self._iteration, batch_size, epoch)

    def measurements(self) -> pd.DataFrame:
        """Every throughput measurement as rows of (placement, nodes, replicas, b, step, sync);
        scalability rows carry no placement (None)."""
        small = self.placements[
            ["key", "num_nodes", "num_replicas", "local_bsz", "step_time", "sync_time"]
        ]
        small = small.rename(columns={"key": "placement"})
        large = self.scalability.assign(placement=None)[small.columns]
        return pd.concat([small, large], ignore_index=True)


def _rows_by_placement(placements: pd.DataFrame) -> dict[Placement, tuple[NDArray, ...]]:
    """(local batch, step, sync) arrays of each canonical placement, in increasing batch order:
    the rows of ``placements.sort_values("local_bsz").groupby("key")``, gathered by plain
    indexing (pandas' group-by costs more than the whole grouping)."""
    # The sort pandas' sort_values runs (numpy's quicksort), so ties keep the same order.
    order = np.argsort(placements["local_bsz"].to_numpy(), kind="quicksort")
    keys = placements["key"].tolist()
    rows: dict[Placement, list[int]] = {}
    for row in order.tolist():
        rows.setdefault(keys[row], []).append(row)
    columns = [placements[c].to_numpy() for c in ("local_bsz", "step_time", "sync_time")]
    return {key: tuple(c[index] for c in columns) for key, index in rows.items()}


def is_measurement_folder(path: Path) -> bool:
    """True when ``path`` holds per-application measurement sub-folders."""
    return any((child / "placements.csv").is_file() for child in path.iterdir() if child.is_dir())


def load_measured_profiles(
    folder: str | Path, gpu_type: str | None = None, legacy_floats: bool = False
) -> dict[str, MeasuredProfile]:
    """Every application in a measurement folder, keyed by application name; with
    ``gpu_type``, every application measured on that type (``legacy_floats``: decimals read
    as :mod:`~goodput_sim.profiles.legacy_floats` says)."""
    folder = Path(folder)
    if not folder.is_dir():
        raise InputError(folder, "measurement folder does not exist")
    apps = sorted(c for c in folder.iterdir() if c.is_dir() and not c.name.startswith("."))
    if gpu_type is not None:
        apps = [
            a
            for a in apps
            if (a / f"placements-{gpu_type}.csv").is_file() and a.name not in PIPELINE_APPS
        ]
    if not apps:
        what = f"measured on GPU type {gpu_type!r}" if gpu_type else "sub-folders"
        raise InputError(folder, f"no application {what} found")
    return {app.name: MeasuredProfile(app, None, gpu_type, legacy_floats) for app in apps}


def measured_gpu_types(folder: str | Path) -> list[str]:
    """GPU types a typed measurement folder has files for (``placements-<type>.csv``)."""
    names = {p.name for p in Path(folder).glob("*/placements-*.csv")}
    return sorted(n[len("placements-") : -len(".csv")] for n in names)
