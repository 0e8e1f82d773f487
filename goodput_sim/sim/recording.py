"""What a run writes: one row per scheduling round, one per job, and the cluster's summary;
plus the frozen :class:`~goodput_sim.sim.observe.RoundRecord` handed to round observers."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

import pandas as pd

from goodput_sim.sim.jobs import Job
from goodput_sim.sim.observe import RoundRecord, RunningJob


def round_row(now: float, active: Sequence[Job], nodes_up: int, down: int, starting: int) -> dict:
    """The ``rounds.csv`` row of a round: counts, every running job as
    ``name=GPUs.per.node@total_batch``, and the nodes up, down and booting."""
    running = [j for j in active if j.replicas]
    return {
        "time": now,
        "active": len(active),
        "running": len(running),
        "queued": len(active) - len(running),
        "gpus_in_use": int(sum(j.replicas for j in running)),
        "allocations": ";".join(
            f"{j.name}={'.'.join(map(str, j.placement))}@{j.total_batch}" for j in running
        ),
        "nodes_up": nodes_up,
        "nodes_down": down,
        "nodes_starting": starting,
    }


def round_record(now: float, active: Sequence[Job], offline: set[int]) -> RoundRecord:
    """The frozen record observers receive."""
    running = tuple(
        RunningJob(
            j.name,
            j.spec.application,
            j.gpu_type,
            tuple(int(g) for g in j.allocation),
            int(j.local_bsz),
            int(j.accum_steps),
        )
        for j in active
        if j.replicas
    )
    return RoundRecord(now, tuple(j.name for j in active), running, frozenset(offline))


def jobs_table(
    made: Mapping[int, Job],
    fresh: Job,
    workload: tuple[Sequence[str], Sequence[str], Sequence[float]],
    typed: bool,
    extra: Callable[[Job], Mapping[str, Any]] = lambda job: {},
) -> pd.DataFrame:
    """``jobs.csv``: one row per workload row (``workload``: names, applications and arrivals
    in file order), finished or not. ``made`` holds the jobs that ran by row; every other row
    is as ``fresh``, a job that never arrived, is. ``extra`` gives the cells the run's
    dynamics add (such as ``crashes`` and ``saves``), after the common ones; GPU types come
    last on typed runs."""
    names, applications, arrivals = workload
    template = _job_row(fresh, typed, extra)
    columns = {key: [value] * len(names) for key, value in template.items()}
    columns["name"], columns["application"], columns["arrival"] = names, applications, arrivals
    for index, job in made.items():
        for key, value in _job_row(job, typed, extra).items():
            columns[key][index] = value
    return pd.DataFrame(columns)


def _job_row(job: Job, typed: bool, extra: Callable[[Job], Mapping[str, Any]]) -> dict:
    """One job's ``jobs.csv`` row."""
    finish = job.finish_time
    row = {
        "name": job.name,
        "application": job.spec.application,
        "arrival": job.spec.arrival,
        "start": job.start_time,
        "finish": finish,
        "jct": finish - job.spec.arrival if finish is not None else None,
        "queueing": (job.start_time - job.spec.arrival) if job.start_time is not None else None,
        "restarts": job.num_restarts,
        "gpu_seconds": job.gpu_seconds,
        "final_batch_size": job.last_batch,
        "epochs": job.epoch,
        "examples": job.examples,
        "train_seconds": job.train_seconds,
        "train_gpu_seconds": job.train_gpu_seconds,
        "finished": job.finished,
        "restart_gpu_seconds": job.restart_gpu_seconds,
        "failures": job.failures,
        "restores": job.restores,
        "lost_gpu_seconds": job.lost_gpu_seconds,
        "lost_epochs": job.lost_epochs,
    }
    row.update(extra(job))
    if typed:
        row["gpu_types"] = ">".join(job.type_history)
        row["gpu_hours_by_type"] = ";".join(
            f"{t}={s / 3600:.6f}" for t, s in job.gpu_seconds_by_type.items()
        )
    return row


OBJECTIVE_COLUMNS = (
    "lr_noise",
    "lr_noise_vs_static",
    "final_loss",
    "final_loss_vs_static",
    "final_loss_tuned",
    "final_loss_tuned_vs_static",
)


def gpu_hours_by_type(jobs: Sequence[Job], types: Sequence[str]) -> dict:
    """GPU-hours every type gave the jobs, and how often jobs moved between types."""
    out = {
        f"gpu_hours_{t}": sum(j.gpu_seconds_by_type.get(t, 0.0) for j in jobs) / 3600.0
        for t in types
    }
    out["type_moves"] = sum(max(len(j.type_history) - 1, 0) for j in jobs)
    return out
