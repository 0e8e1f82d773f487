"""What a run produced: per-job and per-round tables plus run metadata, and the inputs from
which each job's finish-time fairness is computed when first read."""

from __future__ import annotations

import functools
from collections.abc import Callable
from dataclasses import dataclass, field

import pandas as pd

from goodput_sim.inputs.cluster import ClusterSpec
from goodput_sim.profiles.base import ApplicationProfile
from goodput_sim.profiles.typed import as_typed
from goodput_sim.sim.fairness import IsolatedTimes, fairness_table
from goodput_sim.sim.jobbook import JobBook, request_of, truth_on
from goodput_sim.sim.jobs import Job
from goodput_sim.sim.threads import one_blas_thread


@dataclass
class SimResult:
    """Everything a run produced: per-job and per-round tables plus run metadata."""

    jobs: pd.DataFrame
    rounds: pd.DataFrame
    policy: dict
    agent: dict
    config: dict
    cluster: dict
    wall_seconds: float
    policy_seconds: list[float] = field(default_factory=list)
    stopped: str | None = None  # why a run ended before every job finished, if a guard did
    cluster_summary: dict = field(default_factory=dict)  # node-hours, failures, cost
    # Finish-time fairness per job (goodput_sim.sim.fairness), computed when first read: most runs
    # in tests and sweeps read it once, through the summary, and many never do.
    fairness_source: Callable[[], pd.DataFrame | None] | None = field(default=None, repr=False)

    @functools.cached_property
    def fairness(self) -> pd.DataFrame | None:
        """Each job's rho (None where the run's progress model has no isolated time), on one
        BLAS thread as the run itself."""
        if self.fairness_source is None:
            return None
        with one_blas_thread():
            return self.fairness_source()

    @functools.cached_property
    def summary(self) -> dict:
        """The run's statistics (:func:`goodput_sim.results.metrics.run_summary`), as its
        manifest holds them."""
        from goodput_sim.results.metrics import run_summary

        return run_summary(self)

    @property
    def manifest(self) -> dict:
        """What a results folder's ``manifest.json`` says of the run itself (``write_run``
        adds the inputs, seed and parameters it was given)."""
        from goodput_sim import __version__
        from goodput_sim.units import manifest_units

        return {
            "goodput_sim_version": __version__,
            "policy": self.policy,
            "agent": self.agent,
            "config": self.config,
            "cluster": self.cluster,
            "wall_seconds": self.wall_seconds,
            "complete": self.stopped is None,
            "stopped": self.stopped,
            "summary": self.summary,
            "units": manifest_units(),
        }

    def __getstate__(self) -> dict:
        """Pickled (sent back from a worker process) with the fairness table computed, not
        the profiles and closures it is computed from."""
        state = dict(self.__dict__)
        state["fairness"] = self.fairness
        state["fairness_source"] = None
        return state


def fairness_source(
    jobs: pd.DataFrame,
    book: JobBook,
    cluster: ClusterSpec,
    adapts: bool,
    restart_delay: Callable[[Job], float],
) -> Callable[[], pd.DataFrame]:
    """What computes each job's finish-time fairness (:mod:`goodput_sim.sim.fairness`) for the
    ``jobs`` table of a run on ``cluster``, holding only its inputs (``adapts``: whether the
    run's agent chooses batch sizes)."""
    home, profiles = cluster.type_order[0], book.profiles

    def truth(app: str, gpu_type: str | None) -> ApplicationProfile:
        profile = profiles[app]
        return as_typed(profile, home).for_type(gpu_type) if gpu_type else truth_on(profile, home)

    def rule(job: Job) -> tuple[int | None, int, int, float]:
        lim = job.belief.limits
        own = lim.fixed_batch_size or job.spec.requested_batch
        batch = None if adapts and lim.fixed_batch_size is None else own
        cap = lim.cap(max(lim.max_batch_size // lim.min_local_bsz, 1))
        return batch, lim.min_replicas or 1, cap, restart_delay(job)

    # A job never made is as it was made: its rule is its request's (one per request).
    by_request = {request_of(job.spec): rule(job) for job in book.request_jobs}
    made = book.made
    rules = [
        rule(made[index]) if index in made else by_request[book.request(index)]
        for index in range(len(book))
    ]
    return functools.partial(
        fairness_table, jobs, cluster.total_gpus, IsolatedTimes(cluster, truth), rules
    )
