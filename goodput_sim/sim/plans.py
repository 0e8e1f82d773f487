"""Per-epoch plans: what a running job does in each upcoming epoch on its allocation (per-GPU
batch and accumulation from its batch agent, and the progress rate they give on ground truth).

A plan is remade only when something it depends on changed: the allocation (a reallocation
drops the plan), what of the belief the agent reads, the interference slowdown, the policy's
hint or the GPU type. Plans of jobs whose inputs are equal (one application on equal
allocations with equal fits) share their read-only arrays, up to :data:`PLAN_MEMO_SIZE`.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Hashable, Mapping
from typing import Any

import numpy as np
from numpy.typing import NDArray

from goodput_sim.agents import BatchAgent
from goodput_sim.agents.base import validated_plan
from goodput_sim.policies.base import Policy
from goodput_sim.sim.jobs import BeliefView, Job, Plan
from goodput_sim.sim.progress import epoch_rates
from goodput_sim.sim.views import Views

PLAN_MEMO_SIZE = 4096  # plans kept for sharing (a few kilobytes each)


class Planner:
    """Makes and shares one run's plans (its memo belongs to that run)."""

    def __init__(self, agent: BatchAgent, views: Views, measured_stats: bool = False):
        self.agent = agent
        self.views = views
        # Whether a job re-choosing its batch at an epoch boundary knows only the gradient
        # statistics it measured in the epoch before (as the Sia artifact's jobs), rather than
        # those of the epoch it chooses for.
        self.measured_stats = measured_stats
        # Plans by everything they are computed from, oldest first, at most PLAN_MEMO_SIZE.
        self.memo: dict[tuple, tuple[NDArray, ...]] = {}
        # True rates of the plans' configurations by everything they are computed from (jobs
        # whose fits differ often choose the same batches: two plans in three on the Philly
        # log's first day under sia), the same way.
        self.rates: dict[tuple, tuple[NDArray, ...]] = {}

    def replan(self, job: Job, hints: Mapping[str, Any], policy: Policy) -> None:
        """At an epoch boundary inside a round (beliefs fitted as the Sia artifact fits them):
        refit the belief the job's batch is chosen from if it ran a configuration new to it,
        and re-choose the job's batch from the statistics it has just measured, as that
        simulator's jobs do at every epoch boundary."""
        typed = job.typed is not None and policy.type_aware and job.gpu_type is not None
        belief = job.type_beliefs[job.gpu_type] if typed else job.belief
        belief.refresh()
        self.ensure(job, hints.get(job.name))

    def ensure(self, job: Job, hint: Mapping[str, Any] | None) -> None:
        """The job's per-epoch plan on its allocation, asking its agent when something the
        plan depends on changed."""
        belief = self.views.plan_belief(job)
        key = (self.agent.depends_on(belief), job.slowdown, hint_key(hint), job.gpu_type)
        if self.measured_stats:  # re-chosen whenever the job has measured new statistics
            key += (job.measured_at,)
        if job.plan is not None and job.plan.key == key:
            return
        profile = job.profile
        batch = job.total_batch or profile.limits.init_batch_size
        if self.measured_stats and job.last_batch:  # measured at the batch the job last ran
            batch = job.last_batch
        agent_key = self.agent.plan_key(
            belief, job.spec.requested_batch, job.nodes_used, job.replicas
        )
        memo = None
        if agent_key is not None:  # everything the plan is computed from
            memo = (agent_key, hint_key(hint), profile, batch, job.epoch, job.layout)
            memo += (job.slowdown, job.work is None, job.work_in_steps, job.measured_at)
        arrays = self.memo.get(memo) if memo is not None else None
        if arrays is None:
            arrays = self._arrays(job, belief, hint, batch)
            if memo is not None:
                _remember(self.memo, memo, arrays)
        local_bsz, accum = arrays[0], arrays[1]
        job.plan = Plan(key, job.epoch, *arrays)
        job.local_bsz, job.accum_steps = int(local_bsz[0]), int(accum[0])
        job.last_batch = job.total_batch

    def _arrays(
        self,
        job: Job,
        belief: BeliefView,
        hint: Mapping[str, Any] | None,
        batch: int,
    ) -> tuple[NDArray, ...]:
        """A plan's per-epoch arrays (read-only: equal inputs share them): per-GPU batch,
        accumulation, progress rate, step and sync seconds, examples per second."""
        profile = job.profile
        epochs = np.arange(job.epoch, profile.limits.max_epochs)
        # The gradient statistics the job will measure in each upcoming epoch, for agents that
        # re-choose their batch every epoch (each epoch's are passed explicitly, so the plan
        # need not change with the belief's current statistics).
        measured = epochs
        if self.measured_stats:  # each epoch's batch from the statistics of the one before
            measured = np.concatenate(([job.epoch], epochs[:-1]))
        sqr, var = profile.grad_stats(batch, measured)
        if self.measured_stats and job.measured_at is not None:
            # This epoch's choice reads the statistics measured last: in the stretch of
            # training just ended (at an epoch boundary, in the epoch before; at a round, in
            # the epoch it is in unless that stretch ended exactly on the boundary). A job
            # that has not trained yet has measured nothing: the epoch's own, at its batch.
            sqr, var = np.array(sqr, dtype=float), np.array(var, dtype=float)
            sqr[0], var[0] = profile.grad_stats(*job.measured_at)
        limits = profile.limits
        if self.measured_stats:
            belief = placement_limits(belief, profile, job.placement)
            limits = dataclasses.replace(limits, max_local_bsz=belief.limits.max_local_bsz)
        plan = self.agent.configs(
            belief, job.spec.requested_batch, job.nodes_used, job.replicas, sqr, var, hint
        )
        local_bsz, accum = validated_plan(
            self.agent.name, job.name, plan, job.replicas, limits, len(epochs)
        )
        step, sync, total, iteration, rate = self._epoch_rates(job, local_bsz, accum, epochs)
        if job.work is not None:  # lr-aware: the work is examples (or steps)
            rate = (1.0 if job.work_in_steps else total) / iteration
        arrays = (local_bsz, accum, rate, step, sync, total / iteration)
        for array in arrays:
            array.flags.writeable = False
        return arrays

    def _epoch_rates(
        self, job: Job, local_bsz: NDArray, accum: NDArray, epochs: NDArray
    ) -> tuple[NDArray, ...]:
        """:func:`~goodput_sim.sim.progress.epoch_rates` of the job's upcoming ``epochs`` (from
        its current one to its last) at these configurations, memoised (read-only)."""
        profile = job.profile
        # The layout fixes the GPU count; the epoch, which epochs the arrays cover.
        key = (profile, job.layout, job.slowdown, job.epoch, local_bsz.tobytes(), accum.tobytes())
        rates = self.rates.get(key)
        if rates is None:
            rates = epoch_rates(
                profile, job.layout, local_bsz, accum, job.replicas, epochs, job.slowdown
            )
            for array in rates:
                array.flags.writeable = False
            _remember(self.rates, key, rates)
        return rates


def _remember(memo: dict, key: Hashable, value: Any) -> None:
    """Keep ``value`` under ``key``, dropping the oldest entry beyond PLAN_MEMO_SIZE."""
    memo[key] = value
    if len(memo) > PLAN_MEMO_SIZE:
        del memo[next(iter(memo))]


def placement_limits(belief: BeliefView, profile: Any, placement: tuple[int, ...]) -> BeliefView:
    """The belief with the per-GPU batch limited as the Sia artifact's jobs limit their own
    choice: by the largest measured for their placement (Sia SPEC 1.5), not by the
    application's limit, which only prices configurations (SPEC 1.2)."""
    largest = getattr(profile, "max_local_bsz_at", None)
    if largest is None or not placement:
        return belief
    cap = largest(placement)
    if cap == belief.limits.max_local_bsz:
        return belief
    return dataclasses.replace(belief, limits=dataclasses.replace(belief.limits, max_local_bsz=cap))


def hint_key(hint: Mapping[str, Any] | None) -> Hashable:
    """A policy's per-job agent hint as part of a plan key."""
    return None if not hint else tuple(sorted(hint.items()))
