"""The real Philly log as a workload: its arrivals, GPU counts and durations, job for job.

Two layouts are read:

* the Pollux artifact's flattened log (``philly.csv``: timestamp, duration, num_gpus,
  gpu_time; one row per job);
* the original ``cluster_job_log`` JSON of the public Philly release (Jeon et al., ATC'19):
  a list of jobs with ``jobid``, ``submitted_time`` and ``attempts``, each attempt with
  ``start_time``, ``end_time`` and ``detail`` (per machine, its list of ``gpus``). A job's
  duration is the sum of its attempts' run times, its GPU count that of its last attempt;
  jobs with no attempt that both started and ended are left out (they never ran to an end).

Jobs are filtered as the workload statistics are (duration >= 60 s, gpu_time < 1,000
GPU-hours; SPEC 8.1) and mapped to applications by the generator's gpu-time bucket rule
(:data:`goodput_sim.inputs.workload.BUCKETS`): the draw among a bucket's applications is made
over the whole filtered log in submission order, so a slice holds the same jobs with the same
applications as the whole trace.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from goodput_sim import bundled
from goodput_sim.errors import InputError
from goodput_sim.inputs import workload as wl
from goodput_sim.usertext import unique_keys

REFERENCE_LOG = "shared/reference/pollux-osdi21/traces/philly.csv"
"""Where the Pollux artifact's flattened log sits beside a source checkout, relative to the
checkout's parent folder. It is reference data, never shipped with the package."""


def reference_log() -> Path | None:
    """The Pollux artifact's flattened log when the package runs from a source checkout with the
    reference data beside it (the default input of ``goodput-sim workload philly``); None
    otherwise (an installed package, or no reference data): the log must then be named."""
    checkout = bundled.source_checkout()
    if checkout is None:
        return None
    log = checkout.parent / REFERENCE_LOG
    return log if log.is_file() else None


def read_philly_log(path: str | Path) -> pd.DataFrame:
    """The log's jobs as (timestamp, duration, num_gpus, gpu_time), in submission order."""
    path = Path(path)
    if not path.is_file():
        raise InputError(path, "file not found")
    json_log = path.suffix.lower() == ".json"
    log = _read_job_log_json(path) if json_log else wl.read_philly_csv(path)
    return log.sort_values("timestamp", kind="stable").reset_index(drop=True)


def _read_job_log_json(path: Path) -> pd.DataFrame:
    """Flatten a ``cluster_job_log`` JSON file (see the module docstring)."""
    try:
        jobs = json.loads(path.read_text(encoding="utf-8"), object_pairs_hook=unique_keys)
    except (OSError, UnicodeDecodeError, ValueError, RecursionError) as err:
        raise InputError(path, f"cannot read Philly job log: {err}") from None
    if not isinstance(jobs, list):
        raise InputError(path, "expected a JSON list of jobs (the cluster_job_log layout)")
    rows = [row for index, job in enumerate(jobs) if (row := _flatten_job(path, index, job))]
    if not rows:
        raise InputError(path, "no job in the log ran to an end (every attempt lacks an end)")
    frame = pd.DataFrame(rows, columns=["timestamp", "duration", "num_gpus"])
    frame["timestamp"] = pd.to_datetime(frame["timestamp"])
    frame["gpu_time"] = frame["duration"] * frame["num_gpus"]
    return frame


def _flatten_job(path: Path, index: int, job: Any) -> tuple | None:
    """(submitted, run seconds, GPUs of the last attempt) of one job; None if it never ended."""
    where = f"job {index}"
    if not isinstance(job, dict):
        raise InputError(path, "expected an object with jobid, submitted_time, attempts", where)
    where = f"job {job.get('jobid', index)!r}"
    submitted = _time(path, where, "submitted_time", job.get("submitted_time"))
    attempts = job.get("attempts")
    if not isinstance(attempts, list):
        raise InputError(path, "attempts must be a list", where)
    seconds, gpus = 0.0, 0
    for number, attempt in enumerate(attempts):
        field = f"{where} attempt {number}"
        if not isinstance(attempt, dict):
            raise InputError(path, "expected an object with start_time, end_time, detail", field)
        start, end = attempt.get("start_time"), attempt.get("end_time")
        if start in (None, "None") or end in (None, "None"):
            continue
        began, ended = _time(path, field, "start_time", start), _time(path, field, "end_time", end)
        if ended < began:
            raise InputError(path, f"end_time {end} is before start_time {start}", field)
        seconds += (ended - began).total_seconds()
        gpus = _gpu_count(path, field, attempt.get("detail"))
    if gpus == 0:
        return None
    return submitted, seconds, gpus


def _time(path: Path, where: str, field: str, text: Any) -> pd.Timestamp:
    """A timestamp field, or an error naming it."""
    value = _timestamp(text)
    if value is None:
        raise InputError(path, f"{field} {text!r} is not a date and time", where)
    return value


def _timestamp(text: Any) -> pd.Timestamp | None:
    """``text`` as a timestamp, or None if it is not one."""
    try:
        value = pd.Timestamp(text)
    except (TypeError, ValueError):
        return None
    return None if pd.isna(value) else value


def _gpu_count(path: Path, where: str, detail: Any) -> int:
    """GPUs of an attempt: the lengths of its machines' ``gpus`` lists."""
    if not isinstance(detail, list) or not all(
        isinstance(m, dict) and isinstance(m.get("gpus"), list) for m in detail
    ):
        raise InputError(path, "detail must be a list of machines, each with a gpus list", where)
    return sum(len(machine["gpus"]) for machine in detail)


_MAX_DAYS = 3650  # ten years: longer spans are typos (and overflow pandas' timestamps)


def philly_workload(
    log: pd.DataFrame,
    start: str | pd.Timestamp | None = None,
    days: float | None = None,
    realistic: bool = False,
    seed: int = 0,
    max_gpus: int | None = None,
) -> pd.DataFrame:
    """A workload of the log's jobs submitted in ``[start, start + days)`` (default: the whole
    filtered log from its first job), arrivals in seconds after ``start``.

    ``realistic`` keeps each job's GPU count from the log (at most ``max_gpus``) with batch
    M0 x GPUs as the generator's realistic sizing does; otherwise sizes are drawn from the
    TunedJobs menus. Both draws use ``seed`` over the whole log. Adds the log's ``duration``
    and ``gpu_time`` (seconds) as extra columns, which the simulator ignores."""
    if days is not None and not 0 < days <= _MAX_DAYS:
        raise InputError(
            None, f"must be a positive number of days up to {_MAX_DAYS}, got {days!r}", "--days"
        )
    kept = log[wl.philly_filter(log)].reset_index(drop=True)
    if kept.empty:
        raise InputError(None, "no job of the log passes the filter (duration >= 60 s)", "log")
    rng = np.random.default_rng(seed)
    buckets = wl.bucket_of(kept["gpu_time"] / 3600).cat.codes.to_numpy()
    apps = wl.draw_applications(rng, buckets)
    if realistic:
        replicas = kept["num_gpus"].to_numpy(dtype=np.int64)
        if max_gpus is not None:
            replicas = np.minimum(replicas, max_gpus)
        batches = wl.realistic_batches(apps, replicas)
    else:
        replicas, batches = wl.draw_tuned_sizes(rng, apps, wl.TUNED_CONFIGURATIONS)
    begin = kept["timestamp"].iloc[0] if start is None else _start(start)
    end = pd.Timestamp.max if days is None else begin + pd.Timedelta(days=days)
    inside = ((kept["timestamp"] >= begin) & (kept["timestamp"] < end)).to_numpy()
    if not inside.any():
        raise InputError(
            None,
            f"no job submitted in [{begin}, {end}); the log spans "
            f"{kept['timestamp'].iloc[0]} to {kept['timestamp'].iloc[-1]}",
            "--start/--days",
        )
    arrivals = (kept["timestamp"][inside] - begin).dt.total_seconds().round().astype("int64")
    chosen = np.asarray(apps, dtype=object)[inside]
    return pd.DataFrame(
        {
            "name": [f"{app}-{rank}" for rank, app in enumerate(chosen)],
            "time": arrivals.to_numpy(),
            "application": chosen.astype(str),
            "num_replicas": np.asarray(replicas, dtype=np.int64)[inside],
            "batch_size": np.asarray(batches, dtype=np.int64)[inside],
            "duration": kept["duration"].to_numpy()[inside],
            "gpu_time": kept["gpu_time"].to_numpy()[inside],
        }
    )


def _start(text: str | pd.Timestamp) -> pd.Timestamp:
    """A start date (``2017-10-02`` or with a time), or a one-line error."""
    value = _timestamp(text)
    if value is None:
        raise InputError(None, f"expected a date such as 2017-10-02, got {text!r}", "--start")
    return value
