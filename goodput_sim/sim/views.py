"""What policies and batch agents are shown of a job: frozen views of its beliefs (per GPU type
under a type-aware policy), its limits and history, and, for an oracle, its ground truth.

Ground truth advances jobs; policies and agents see beliefs. Every view handed out is
read-only, and the objects views share (truth views, per-type speeds) are one per run, so a
policy may key its caches by them.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import replace
from types import MappingProxyType

from goodput_sim.inputs.cluster import ClusterSpec
from goodput_sim.models.limits import for_category
from goodput_sim.policies.base import JobView, Policy
from goodput_sim.profiles.base import ApplicationProfile, FrozenProfile
from goodput_sim.sim.jobbook import JobBook, category_rule
from goodput_sim.sim.jobs import BeliefView, Job


class Views:
    """Builds the round's views of jobs for one run's policy."""

    def __init__(self, book: JobBook, policy: Policy, cluster: ClusterSpec, restart_delay: float):
        self.book = book
        self.policy = policy
        self.cluster = cluster
        self.default_restart_delay = restart_delay
        # What a move of a running job costs beyond its restart delay (the dynamics' say).
        self.move_costs: list[Callable[[Job, float], float]] = []
        self._speeds: dict[tuple[str, str], Mapping[str, float]] = {}
        self._truth_views: dict[ApplicationProfile, FrozenProfile] = {}

    def restart_delay(self, job: Job) -> float:
        """The application's own checkpoint-restore delay, else the run's."""
        own = job.profile.restart_delay
        return self.default_restart_delay if own is None else own

    def update_grad_stats(self, job: Job) -> None:
        """The job measures its gradient statistics while it trains (SPEC 4.4); the scheduler
        receives the current values."""
        key = (job.total_batch or job.profile.limits.init_batch_size, job.epoch)
        if job.measured_at is not None:  # known only where last measured (the Sia artifact's)
            key = job.measured_at
        if key != job.stats_key:
            job.stats_key = key
            sqr, var = job.profile.grad_stats(*key)
            job.belief.set_grad_stats(float(sqr), float(var))
            for belief in job.type_beliefs.values():  # statistics do not depend on the GPU
                belief.set_grad_stats(float(sqr), float(var))

    def plan_belief(self, job: Job) -> BeliefView:
        """The belief a job's batch is chosen from: per GPU type under a type-aware policy, the
        type-blind one otherwise; either way bound to the batch limits of the GPU type the job
        runs on (a GPU's memory is a fact the job's agent sees, whatever the scheduler knows)."""
        if job.typed is not None and self.policy.type_aware and job.gpu_type is not None:
            return job.type_beliefs[job.gpu_type].view()
        view = job.belief.view()
        limits = self.book.limits(job.spec, job.gpu_type, job.profile)
        return view if view.limits is limits else replace(view, limits=limits)

    def view(self, job: Job, now: float) -> JobView:
        """The job as the policy sees it at ``now``."""
        fixed = job.view_fields
        if fixed is None or fixed[0] is not job.profile:
            fixed = job.view_fields = (job.profile, self._fields_of_profile(job))
        policy = self.policy
        return made_view(
            fixed[1],
            age=now - job.spec.arrival,
            attained_service=job.gpu_seconds,
            num_restarts=job.num_restarts,
            allocation=job.allocation,
            epoch=job.epoch,
            belief=job.belief.view(),
            gpu_type=job.gpu_type if job.replicas else None,
            type_beliefs=MappingProxyType({t: b.view() for t, b in job.type_beliefs.items()})
            if job.typed is not None and policy.type_aware
            else None,
            restarting=job.restart_remaining > 0,
            move_loss=self._move_loss(job, now),
            _replicas=job.replicas,  # known: JobView.replicas need not count it
        )

    def _fields_of_profile(self, job: Job) -> dict:
        """The view's fields that change only with the job's profile (its GPU type): built
        once per profile the job runs on."""
        policy = self.policy
        typed = job.typed is not None
        return {
            "name": job.name,
            "application": job.spec.application,
            "arrival": job.spec.arrival,
            "requested_replicas": job.spec.requested_replicas,
            "requested_batch": job.spec.requested_batch,
            "limits": for_category(job.profile.limits, *category_rule(job.spec)),
            "truth": self.frozen(job.profile) if policy.needs_oracle else None,
            "type_truths": MappingProxyType(
                {t: self.frozen(job.typed.for_type(t)) for t in self.cluster.type_order}
            )
            if typed and policy.needs_oracle
            else None,
            "type_speeds": self._type_speeds(job, "measurement") if policy.type_aware else None,
            "type_peak_speeds": self._type_speeds(job, "peak") if policy.type_aware else None,
            "restart_delay": self.restart_delay(job),
        }

    def _move_loss(self, job: Job, now: float) -> float:
        """Seconds of training a move of the job would throw away now (the dynamics' say), so
        a policy counts what it would lose."""
        costs = self.move_costs
        if len(costs) == 1:  # the usual case (checkpoints), without a generator
            return costs[0](job, now)
        return sum(cost(job, now) for cost in costs) if costs else 0.0

    def _type_speeds(self, job: Job, reading: str) -> Mapping[str, float] | None:
        """One-GPU throughput of the job's application per GPU type (offline profiling), read
        one way (``measurement`` or ``peak``, see :class:`~goodput_sim.profiles.TypedProfile`),
        as a read-only mapping: one per application, reading and run, keyed by the cluster's
        types."""
        if job.typed is None:
            return None
        key = (job.spec.application, reading)
        cached = self._speeds.get(key)
        if cached is None:
            read = (
                job.typed.single_gpu_throughput
                if reading == "measurement"
                else job.typed.peak_single_gpu_throughput
            )
            speeds = {t: read(t) for t in self.cluster.type_order}
            cached = self._speeds[key] = MappingProxyType(speeds)
        return cached

    def frozen(self, profile: ApplicationProfile) -> FrozenProfile:
        """The read-only view of a ground-truth profile an oracle policy is handed (one per
        profile and run, so a policy may key its caches by it)."""
        frozen = self._truth_views.get(profile)
        if frozen is None:
            frozen = self._truth_views[profile] = FrozenProfile(profile)
        return frozen


def made_view(fixed: dict, **fields) -> JobView:
    """``JobView(**fixed, **fields)`` given every field between them (and ``_replicas``, the GPU
    count :attr:`JobView.replicas` would count), without the frozen dataclass's
    attribute-by-attribute ``__init__`` (a twentieth of a fifo round over hundreds of jobs): the
    same view, still frozen."""
    view = object.__new__(JobView)
    view.__dict__.update(fixed)
    view.__dict__.update(fields)
    return view
