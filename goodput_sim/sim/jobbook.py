"""The workload as the engine holds it: its rows as columns, and the jobs made from them.

A job's state is made when it arrives (or when every job is read), so a million-row workload
cut short by a horizon costs what its arrived jobs cost. Every job of one application shares
that application's ground truth, learning-rate recipe and limits objects (one per GPU type and
category rule), so a belief bound to them is recognised by identity.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Mapping
from dataclasses import replace

import numpy as np
import pandas as pd

from goodput_sim.inputs.cluster import ClusterSpec
from goodput_sim.inputs.workload import job_category
from goodput_sim.models.limits import Limits, for_category
from goodput_sim.models.lr import schedule_for
from goodput_sim.models.throughput import ThroughputParams
from goodput_sim.profiles.base import ApplicationProfile
from goodput_sim.profiles.typed import TypedProfile, as_typed
from goodput_sim.sim.jobs import FitMemo, Job, JobBelief, JobSpec
from goodput_sim.sim.lr_progress import static_batch_of
from goodput_sim.sim.lr_progress import static_steps as static_steps_of


class JobBook:
    """The workload's rows in file order, and the jobs made from them so far (by row)."""

    def __init__(
        self,
        workload: pd.DataFrame,
        profiles: Mapping[str, ApplicationProfile],
        cluster: ClusterSpec,
        oracle: Mapping[str, ThroughputParams],
        config_schedule: str | None,
        reads_noise_prior: bool,
        fit_method: str = "engine",
        static_runs: bool = False,
    ):
        self.cluster = cluster
        self.profiles = profiles
        # Owned by this run: no other simulation shares its entries.
        self.fit_memo = FitMemo(method=fit_method)
        self._oracle = oracle
        home = cluster.type_order[0]
        self.truths = {app: truth_on(profile, home) for app, profile in profiles.items()}
        self.schedules = {
            app: schedule_for(app, truth.limits.lr_schedule, config_schedule)
            for app, truth in self.truths.items()
        }
        # What a job's agent knows of its application besides its beliefs: its learning-rate
        # schedule and, for agents that forecast the noise, an earlier run's trajectory.
        self._recipes = {
            app: {
                "lr_schedule": self.schedules[app].spelled(),
                "noise_prior": noise_prior(truth) if reads_noise_prior else None,
            }
            for app, truth in self.truths.items()
        }
        self._limits: dict[tuple, Limits] = {}
        # Under ``tail_geometry: steps`` each request's limits carry its static run.
        self._static_runs: dict[tuple[str, float], tuple] | None = {} if static_runs else None
        self.names = workload["name"].astype(str).tolist()
        self.apps = workload["application"].astype(str).tolist()
        self.arrivals = workload["time"].to_numpy(dtype=np.float64)
        self.replicas = workload["num_replicas"].to_numpy(dtype=np.int64)
        self.batches = workload["batch_size"].to_numpy(dtype=np.int64)
        self.categories = (
            [job_category(c) for c in workload["category"]]
            if "category" in workload.columns
            else None
        )
        self.order = np.argsort(self.arrivals, kind="stable")  # stable: file order
        self.made: dict[int, Job] = {}
        self.typed = cluster.mixed or any(
            isinstance(profiles[a], TypedProfile) for a in set(self.apps)
        )
        self._typed: dict[str, TypedProfile] = {}
        if self.typed:
            self._typed = {app: as_typed(profiles[app], home) for app in self.truths}
        self.on_made: Callable[[Job], object] = lambda job: None  # the engine's

    def __len__(self) -> int:
        return len(self.names)

    def job(self, index: int) -> Job:
        """The job of workload row ``index``, made on first use (and announced)."""
        job = self.made.get(index)
        if job is None:
            job = self.made[index] = self.fresh(index)
            self.on_made(job)
        return job

    def all_jobs(self) -> list[Job]:
        """Every job of the workload, in file order (made now where not yet arrived)."""
        return [self.job(index) for index in range(len(self.names))]

    def made_in_order(self) -> list[Job]:
        """The jobs made so far, in file order."""
        return [self.made[index] for index in sorted(self.made)]

    def request(self, index: int) -> tuple[str, int, int, str]:
        """Row ``index``'s request (see :func:`request_of`)."""
        category = self.categories[index] if self.categories is not None else "adaptive"
        return self.apps[index], int(self.replicas[index]), int(self.batches[index]), category

    def spec(self, index: int) -> JobSpec:
        app, gpus, batch, category = self.request(index)
        return JobSpec(self.names[index], app, float(self.arrivals[index]), gpus, batch, category)

    def fresh(self, index: int) -> Job:
        """Workload row ``index`` as a job that has not arrived: its truth, its beliefs (one
        per GPU type on typed runs) and nothing run."""
        spec = self.spec(index)
        truth = self.truths[spec.application]
        belief = JobBelief(
            self.limits(spec, None, truth), self._oracle.get(spec.application), self.fit_memo
        )
        job = Job(spec, truth, belief, self.cluster.nodes)
        if self.typed:
            job.typed = self._typed[spec.application]
            job.type_beliefs = {
                t: JobBelief(self.limits(spec, t, job.typed.for_type(t)), None, self.fit_memo)
                for t in self.cluster.type_order
            }
        return job

    @functools.cached_property
    def request_jobs(self) -> list[Job]:
        """The first job of each distinct request (see :meth:`request`), in file order and not
        arrived: what every per-request check reads (a request's first job is the one named).
        Made once; the checks only read them."""
        requests = pd.DataFrame(
            {
                "app": self.apps,
                "gpus": self.replicas,
                "batch": self.batches,
                "category": self.categories or "adaptive",
            }
        )
        return [self.fresh(index) for index in requests.drop_duplicates().index]

    def limits(self, spec: JobSpec, gpu_type: str | None, profile: ApplicationProfile) -> Limits:
        """The limits of the job's application on ``gpu_type`` (``profile``, its truth there;
        None: before the job is placed) with the application's recipe and the job's category:
        one object per (application, type, category rule and, under ``tail_geometry:
        steps``, static batch) and run, so a belief bound to them is recognised by identity."""
        app = spec.application
        rule = () if spec.category == "adaptive" else category_rule(spec)
        key = (app, gpu_type, *rule)
        static = None
        if self._static_runs is not None:  # the static run on the job's own truth (its work)
            truth = self.truths[app]
            batch = static_batch_of(spec, truth.limits)
            if (app, batch) not in self._static_runs:
                steps = tuple(float(x) for x in static_steps_of(truth, batch))
                self._static_runs[app, batch] = (batch, steps)
            static = self._static_runs[app, batch]
            key += (batch,)
        if key not in self._limits:
            limits = replace(profile.limits, **self._recipes[app])
            if static is not None:
                limits = replace(limits, static_run=static)
            self._limits[key] = for_category(limits, *rule) if rule else limits
        return self._limits[key]


def truth_on(profile: ApplicationProfile, gpu_type: str) -> ApplicationProfile:
    """A job's ground truth before it runs: its profile on the cluster's first GPU type."""
    return profile.for_type(gpu_type) if isinstance(profile, TypedProfile) else profile


def noise_prior(profile: ApplicationProfile) -> tuple[float, ...]:
    """tr(Sigma) = M0 * grad_var in every epoch of a run at batch M0 (Limits.noise_prior)."""
    lim = profile.limits
    _, var = profile.grad_stats(lim.init_batch_size, np.arange(lim.max_epochs))
    return tuple(float(v) for v in lim.init_batch_size * np.asarray(var, dtype=np.float64))


def category_rule(spec: JobSpec) -> tuple[str, int, int]:
    """(category, requested GPUs, requested batch): what a job's category fixes."""
    return spec.category, spec.requested_replicas, spec.requested_batch


def request_of(spec: JobSpec) -> tuple[str, int, int, str]:
    """A job's request: (application, GPUs, batch, category), all its limits, checks and
    fairness rule read besides its name and arrival."""
    return spec.application, spec.requested_replicas, spec.requested_batch, spec.category
