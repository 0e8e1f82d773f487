"""What a run writes: one row per scheduling round, one per job, and the cluster's summary;
plus the frozen :class:`~goodput_sim.sim.observe.RoundRecord` handed to round observers."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

import pandas as pd

from goodput_sim.sim.jobs import Job
from goodput_sim.sim.observe import RoundObserver, RoundRecord, RunningJob

if TYPE_CHECKING:
    from goodput_sim.inputs.cluster import ClusterSpec
    from goodput_sim.sim.dynamics.base import Dynamic
    from goodput_sim.sim.jobbook import JobBook
    from goodput_sim.sim.nodes import NodePool


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
        "allocations": ";".join(f"{j.placement_label}@{j.total_batch}" for j in running),
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


class Recorder:
    """What one run writes as it goes (a row per round, and each round's record to the
    observers) and at its end (the jobs table and the cluster's summary)."""

    def __init__(self, cluster: ClusterSpec, observers: Sequence[RoundObserver]):
        self.cluster = cluster
        self.observers = tuple(observers)  # each called with every round's RoundRecord
        self.rows: list[dict] = []
        self._several_shapes = len({g.gpus_per_node for g in cluster.groups}) > 1

    def round(self, now: float, active: Sequence[Job], pool: NodePool) -> None:
        """A round's ``rounds.csv`` row, and its record to every observer."""
        offline = pool.offline()
        up = self.cluster.nodes - len(offline)
        row = round_row(now, active, up, len(pool.failed), len(pool.starting))
        if self._several_shapes:  # else gpus up = nodes_up x GPUs per node
            row["gpus_up"] = self.cluster.with_offline(offline).total_gpus
        self.rows.append(row)
        if self.observers:
            record = round_record(now, active, offline)
            for observe in self.observers:
                observe(record)

    def jobs(self, book: JobBook, dynamics: Sequence[Dynamic]) -> pd.DataFrame:
        """``jobs.csv``, with every dynamic's columns in registration order."""

        def extra(job: Job) -> dict[str, Any]:
            out: dict[str, Any] = {}
            for dynamic in dynamics:
                if dynamic.columns:
                    out.update(dynamic.job_columns(job))
            return out

        workload = (book.names, book.apps, book.arrivals.tolist())
        return jobs_table(book.made, book.fresh(0), workload, book.typed, extra)

    def cluster_summary(
        self, pool: NodePool, book: JobBook, dynamics: Sequence[Dynamic], end: float
    ) -> dict:
        """The nodes' summary, with GPU-hours by type on typed runs, and the dynamics'."""
        out = pool.summary(end)
        if book.typed:
            out.update(gpu_hours_by_type(book.made_in_order(), self.cluster.type_order))
        for dynamic in dynamics:
            out.update(dynamic.summary(end))
        return out
