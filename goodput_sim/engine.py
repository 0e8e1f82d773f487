"""The discrete-event engine: arrivals, scheduling rounds and completions on a simpy clock,
with job progress advanced analytically between rounds (whole epochs at a time, with numpy).

The contract it enforces, once per round:

1. the engine brings every active job's belief up to date (refitting only where new
   observations call for it) and freezes it into the snapshot;
2. the policy answers with a :class:`~goodput_sim.policies.base.Decision` (GPUs per node per
   job), validated in one place;
3. the engine asks each running job's batch agent for its per-GPU batch and accumulation on the
   new allocation, from the job's frozen belief and the gradient statistics it measures.

Ground truth (profiles) advances jobs; policies and agents see beliefs. Between two rounds a
job's configuration is fixed, so its progress rate is piecewise constant over epochs and its
exact completion time follows from a cumulative sum. Beliefs are refitted at most once per
round, from the configurations the job has actually run (the reference refits mid-interval at
every new configuration; the production library refits between rounds, as here).
"""

from __future__ import annotations

import time as wallclock
from collections.abc import Callable, Hashable, Mapping, Sequence
from dataclasses import asdict, dataclass, field, replace
from types import MappingProxyType
from typing import Any

import numpy as np
import pandas as pd
import simpy
from numpy.typing import NDArray

from goodput_sim.agents import BatchAgent, get_agent
from goodput_sim.agents.base import validated_plan
from goodput_sim.autoscale import (
    AutoscaleConfig,
    ScaleView,
    make_autoscaler,
    pool_groups,
    removal_order,
)
from goodput_sim.cluster import ClusterSpec, interference_flags
from goodput_sim.errors import InputError
from goodput_sim.failures import Failure, FailureModel
from goodput_sim.jobs import BeliefView, FitMemo, Job, JobBelief, JobSpec
from goodput_sim.models.efficiency import gain
from goodput_sim.models.goodput import fixed_batch_config
from goodput_sim.models.throughput import ThroughputModel, ThroughputParams
from goodput_sim.policies.base import Decision, JobView, Policy, Snapshot
from goodput_sim.profiles.base import ApplicationProfile, FrozenProfile, iteration_seconds
from goodput_sim.profiles.typed import TypedProfile, as_typed
from goodput_sim.sim.clock import At, Cause, SimEvent, after
from goodput_sim.sim.observe import RoundObserver, RoundRecord, RunningJob
from goodput_sim.spec import check_config

MAX_IDEAL_SECONDS = 365 * 86400.0  # a job needing longer even alone is an input error
MAX_SIMULATED_SECONDS = 20 * 365 * 86400.0  # beyond every finishable workload: a runaway
DEFAULT_CHECKPOINT_SECONDS = 1800.0  # when neither the run nor the profile sets one


@dataclass(frozen=True)
class SimConfig:
    """Engine settings (defaults follow the Pollux artifact, SPEC 5.9); their types, ranges,
    units and CLI options are declared once in :mod:`goodput_sim.spec`."""

    interval: float = 60.0  # seconds between scheduling rounds
    restart_delay: float = 30.0  # seconds lost whenever a job's allocation changes
    interference: float = 0.0  # slowdown of distributed jobs sharing a node (0, 0.25, 0.5)
    horizon: float | None = None  # stop here; unfinished jobs are reported as such
    oracle: bool = False  # policies see true throughput instead of online-fitted beliefs
    # How a job split over nodes reads its measured step time: "allocation" takes the GPUs per
    # node in the order the policy filled the nodes, as the reference does (SPEC 5.9 step 5);
    # "node" takes them in node-id order. Placements are canonical up to rotation (SPEC 2.1),
    # so the two differ only for jobs on three or more nodes with unequal shares.
    placement_order: str = "allocation"
    max_wall: float | None = None  # seconds of wall time after which a run stops, marked partial
    failures: FailureModel | None = None  # node failures and repairs (none by default)
    checkpoint_interval: float | None = None  # seconds; default: the profile's, else 30 min
    autoscale: AutoscaleConfig | None = None  # grow and shrink the cluster (fixed by default)

    def __post_init__(self) -> None:
        check_config(self)  # against the declarations of goodput_sim.spec


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


@dataclass
class _Plan:
    """A job's per-epoch configuration and progress rate from ``first_epoch`` on."""

    key: tuple
    first_epoch: int
    local_bsz: NDArray
    accum_steps: NDArray
    rate: NDArray  # progress (M0-steps) per second in each epoch
    step: NDArray  # true seconds per optimizer step without accumulation, per epoch
    sync: NDArray  # of which gradient synchronisation
    samples: NDArray  # examples processed per second in each epoch


class Simulation:
    """One run: a workload replayed on a cluster under one policy and one batch agent (the
    policy's default unless given).

    Clock state lives here: ``active`` (jobs arrived and not finished, in arrival order),
    ``last_advance`` (when progress was last brought up to date) and ``completions`` (one
    simpy event per job, succeeded when it finishes)."""

    def __init__(
        self,
        workload: pd.DataFrame,
        profiles: dict[str, ApplicationProfile],
        policy: Policy,
        cluster: ClusterSpec | None = None,
        config: SimConfig | None = None,
        agent: BatchAgent | None = None,
        on_finish: Callable[[int], object] | None = None,
        observers: Sequence[RoundObserver] = (),
    ):
        self.on_finish = on_finish  # told how many jobs finished at each round, for progress
        self.observers = tuple(observers)  # each called with every round's RoundRecord
        self.config = config or SimConfig()
        self.cluster = pool_cluster(cluster or ClusterSpec(), self.config.autoscale)
        self.policy = policy
        self.agent = agent or get_agent(policy.default_agent)
        self.profiles = profiles
        self.fit_memo = FitMemo()  # owned by this run: no other simulation shares its entries
        oracle_params = self._oracle_params(workload) if self.config.oracle else {}
        home = self.cluster.type_order[0]
        truths = {app: _truth(profile, home) for app, profile in profiles.items()}
        self.jobs = [
            Job(
                JobSpec(
                    str(r.name),
                    str(r.application),
                    float(r.time),
                    int(r.num_replicas),
                    int(r.batch_size),
                ),
                truths[r.application],
                JobBelief(
                    truths[r.application].limits,
                    oracle_params.get(r.application),
                    self.fit_memo,
                ),
                self.cluster.nodes,
            )
            for r in workload.itertuples(index=False)
        ]
        self.typed = self.cluster.mixed or any(
            isinstance(profiles[a], TypedProfile) for a in set(workload["application"])
        )
        if self.typed:
            if self.config.oracle:
                raise InputError("--oracle", "is not supported on profiles by GPU type")
            typed = {app: as_typed(profiles[app], home) for app in truths}
            for job in self.jobs:
                job.typed = typed[job.spec.application]
                job.type_beliefs = {
                    t: JobBelief(job.typed.for_type(t).limits, None, self.fit_memo)
                    for t in self.cluster.type_order
                }
        self.round_records: list[dict] = []
        self.policy_seconds: list[float] = []
        self.env = simpy.Environment()
        self.active: list[Job] = []
        self.last_advance = 0.0
        self.completions = {job.name: self.env.event() for job in self.jobs}
        self._queue = sorted(self.jobs, key=lambda j: j.spec.arrival)  # stable: file order
        self._arrived = 0  # jobs of the queue that have arrived
        self.stopped: str | None = None
        self._started = 0.0
        self._check_finishable()
        # Nodes: failed (repairing), off (not provisioned) and starting (booting) are offline.
        failures = self.config.failures
        self.failure_model = failures if failures is not None and failures.active else None
        if self.failure_model is not None:
            self.failure_model.check_nodes(self.cluster.nodes)
        self.failed: set[int] = set()
        self.failure_log: list[tuple[float, int, float]] = []
        scale = self.config.autoscale
        self.scaler = make_autoscaler(scale.rule, dict(scale.params)) if scale else None
        self.off: set[int] = set(range(scale.min_nodes, self.cluster.nodes)) if scale else set()
        self.starting: dict[int, int] = {}  # node -> generation of its start request
        self._generation = 0
        self.node_seconds = 0.0  # provisioned node-seconds, start-up included
        self.gpu_seconds_provisioned = 0.0  # their GPUs, node by node
        self._speeds: dict[str, Mapping[str, float]] = {}
        self._truth_views: dict[ApplicationProfile, FrozenProfile] = {}
        self._tick = 0.0
        self.policy.bind(self)  # last, once nothing above can fail: state of this run only
        self.agent.bind(self)

    def has_started(self) -> bool:
        """Whether :meth:`run` has been called (the policy and agent may then be rebound)."""
        return self.env.now > 0 or self.env.peek() < float("inf")

    # ---------------------------------------------------------------------------------- run
    def run(self) -> SimResult:
        """Replay the workload to the end (or the horizon); a simulation runs once."""
        if self.env.now > 0 or self.round_records:
            raise RuntimeError("a Simulation runs once; build a new one to run again")
        started = self._started = wallclock.perf_counter()
        env = self.env
        for job in self._queue:
            # Scheduled from time 0: each fires exactly at its arrival time, before the round
            # of that instant (see goodput_sim.sim.clock for the order of ties).
            arrival = after(env, job.spec.arrival, Cause.ARRIVAL, job.name)
            arrival.callbacks.append(self._on_arrival)
        if self.failure_model is not None:
            for node in range(self.cluster.nodes):
                env.process(self._node_failures(node))
        done = env.process(self._rounds())
        env.run(until=done)
        return SimResult(
            jobs=self._jobs_table(),
            rounds=pd.DataFrame(self.round_records),
            policy=self.policy.describe(),
            agent=self.agent.describe(),
            config=asdict(self.config),
            cluster=self.cluster.describe(),
            wall_seconds=wallclock.perf_counter() - started,
            policy_seconds=self.policy_seconds,
            stopped=self.stopped,
            cluster_summary=self._cluster_summary(),
        )

    def _on_arrival(self, event: simpy.Event) -> None:
        """A job arrives: it becomes schedulable at the next round (at or after this time).
        Arrival events fire in queue order (time, then creation order)."""
        self.active.append(self._queue[self._arrived])
        self._arrived += 1

    def _rounds(self):
        """The scheduler's process: one round every ``interval`` seconds while jobs are active.

        A job first becomes schedulable at the first round at or after its arrival (as in the
        reference); with no active job the clock jumps to the first round after the next
        arrival."""
        env = self.env
        interval = self.config.interval
        horizon = self.config.horizon
        yield after(env, 0.0, Cause.ROUND)  # after the arrivals due at time 0
        while True:
            now = env.now
            self._advance(self.active, self.last_advance, now)
            self.last_advance = now
            self.node_seconds += self._provisioned() * (now - self._tick)
            self.gpu_seconds_provisioned += self._provisioned_gpus() * (now - self._tick)
            self._tick = now
            self._complete_finished()
            waiting = len(self._queue) - self._arrived
            if (not self.active and not waiting) or (horizon is not None and now >= horizon):
                return
            self.stopped = self._guard(now)
            if self.stopped:
                return
            if self.active:
                self._schedule(now)
                wait = interval
            else:
                gap = self._queue[self._arrived].spec.arrival - now
                wait = max(np.ceil(gap / interval), 1) * interval
                if self.scaler is not None and self._scale_idle(now):
                    wait = interval  # the next idle round may shrink it further
            if horizon is not None:
                wait = min(wait, max(horizon - now, 0.0))
            yield after(env, wait, Cause.ROUND)

    # -------------------------------------------------------------------- nodes that change
    def live_cluster(self) -> ClusterSpec:
        """The cluster as this round's policy sees it: failed, unprovisioned and booting nodes
        offer no GPUs."""
        return self.cluster.with_offline(self._offline())

    def _offline(self) -> set[int]:
        """Nodes offering no GPUs: failed, not provisioned, or booting."""
        return self.failed | self.off | set(self.starting)

    def _provisioned(self) -> int:
        """Nodes paid for: all but those the autoscaler has not started."""
        return self.cluster.nodes - len(self.off)

    def _provisioned_gpus(self) -> int:
        """GPUs of the nodes paid for, each node counted with its own GPUs."""
        capacity = self.cluster.capacity
        return int(capacity.sum() - sum(int(capacity[n]) for n in self.off))

    def _node_failures(self, node: int):
        """A node's process: down at each failure, up again after its repair."""
        env = self.env
        for failure in self.failure_model.node_failures(node, self.cluster.nodes):
            if failure.time > env.now:
                yield At(env, failure.time - env.now, SimEvent(Cause.FAILURE, failure.time))
            self._fail(failure)
            yield after(env, failure.duration, Cause.REPAIR)
            self.failed.discard(node)

    def _fail(self, failure: Failure) -> None:
        """Node ``failure.node`` goes down now: every job with GPUs on it falls back to its last
        checkpoint and waits for the next round. A node the autoscaler has not started cannot
        fail."""
        node, now = failure.node, self.env.now
        if node in self.off:
            return
        self._advance(self.active, self.last_advance, now)
        self.last_advance = now
        self.failed.add(node)
        self.starting.pop(node, None)
        self.failure_log.append((now, node, failure.duration))
        for job in self.active:
            if not job.finished and job.allocation[node] > 0:
                self._lose_work(job, now)
                self._release(job)
                job.failures += 1
                job.restore_pending = True

    @staticmethod
    def _lose_work(job: Job, now: float) -> None:
        """Undo the job's progress since its last checkpoint; count the GPU-time it cost."""
        progress, epoch, saved = job.checkpoint
        if now <= saved:  # still in its restart delay: nothing trained since the checkpoint
            return
        job.lost_gpu_seconds += job.replicas * (now - saved)
        job.lost_epochs += _epochs(job, job.progress, job.epoch) - _epochs(job, progress, epoch)
        job.progress, job.epoch = progress, epoch

    @staticmethod
    def _release(job: Job) -> None:
        """Take every GPU from a job (a failure or a removed node); it restarts when it is next
        allocated."""
        job.assign(np.zeros_like(job.allocation))
        job.plan = None
        job.local_bsz = job.accum_steps = 0
        job.restart_remaining = 0.0

    def _autoscale(self, now: float, views: tuple[JobView, ...]) -> bool:
        """Resize the cluster for the next interval; True if jobs lost GPUs to removed nodes."""
        scale = self.config.autoscale
        provisioned = self._provisioned()
        removable = self._removable()
        view = ScaleView(provisioned, self._keep_order(removable), views)
        target = self.scaler.target(view)
        waiting = [v.requested_replicas for v in views if not v.allocation.any()]
        if waiting and all(not v.allocation.any() for v in views):  # never strand a request
            target = max(target, view.nodes_for(min(waiting)))
        target = min(max(target, scale.min_nodes), scale.max_nodes)
        if target > provisioned:
            for node in sorted(self.off)[: target - provisioned]:
                self.off.discard(node)
                self._start_node(node, now, scale.startup_delay)
            return False
        preempted = False
        for node in removable[: max(provisioned - target, 0)]:
            self.starting.pop(node, None)
            self.off.add(node)
            for job in self.active:
                if job.allocation[node] > 0:
                    self._release(job)
                    preempted = True
        return preempted

    def _removable(self) -> list[int]:
        """Provisioned nodes the autoscaler may remove, first to go first: booting ones, then
        up ones by ``removal_order``. Failed nodes stay (under repair), and so do nodes holding
        a running job of a policy that does not choose GPU counts (a fixed-size job keeps the
        GPUs it asked for)."""
        held = set()
        if not self.policy.elastic:
            for job in self.active:
                held.update(np.flatnonzero(job.allocation).tolist())
        booting = [n for n in sorted(self.starting, reverse=True) if n not in held]
        up = [
            n
            for n in range(self.cluster.nodes)
            if n not in self.off | self.failed | held and n not in self.starting
        ]
        return booting + removal_order([job.allocation for job in self.active], up)

    def _keep_order(self, removable: list[int]) -> tuple[int, ...]:
        """GPUs of every pool node in the order the autoscaler keeps them: provisioned nodes it
        may not remove, then the removable ones, last to go first, then the others in the order
        they would start."""
        gone = set(removable) | self.off
        kept = [n for n in range(self.cluster.nodes) if n not in gone]
        order = kept + removable[::-1] + sorted(self.off)
        return tuple(int(self.cluster.capacity[n]) for n in order)

    def _scale_idle(self, now: float) -> bool:
        """A round with no active job: the rule may shrink the cluster; True while it is above
        ``--min-nodes``, so that idle rounds go on."""
        self._autoscale(now, ())
        return self._provisioned() > self.config.autoscale.min_nodes and bool(self._removable())

    def _start_node(self, node: int, now: float, delay: float) -> None:
        if delay <= 0:
            return
        self._generation += 1
        generation = self.starting[node] = self._generation
        ready = after(self.env, delay, Cause.NODE_READY)

        def boot(_event, node=node, generation=generation) -> None:
            if self.starting.get(node) == generation:  # not removed or failed meanwhile
                del self.starting[node]

        ready.callbacks.append(boot)

    def _cluster_summary(self) -> dict:
        """Node-hours provisioned and lost to failures, failures, and cost with a price."""
        end = self.env.now
        down = sum(min(duration, end - at) for at, _, duration in self.failure_log)
        price = self.config.autoscale.node_price if self.config.autoscale else None
        node_hours = self.node_seconds / 3600.0
        out = {
            "node_hours": node_hours,
            "provisioned_gpu_hours": self.gpu_seconds_provisioned / 3600.0,
            "node_failures": len(self.failure_log),
            "node_hours_failed": down / 3600.0,
            "cost": node_hours * price if price is not None else float("nan"),
        }
        if self.typed:
            for gpu_type in self.cluster.type_order:
                seconds = sum(j.gpu_seconds_by_type.get(gpu_type, 0.0) for j in self.jobs)
                out[f"gpu_hours_{gpu_type}"] = seconds / 3600.0
            out["type_moves"] = sum(max(len(j.type_history) - 1, 0) for j in self.jobs)
        return out

    def _guard(self, now: float) -> str | None:
        """Why a runaway run must stop now, if it must: too much wall time (``max_wall``) or
        simulated time beyond the bound every finishable workload stays within."""
        limit = self.config.max_wall
        if limit is not None and wallclock.perf_counter() - self._started > limit:
            return f"wall time exceeded --max-wall {limit:g} s at simulated {now:.0f} s"
        if now > MAX_SIMULATED_SECONDS:
            return f"simulated time passed {MAX_SIMULATED_SECONDS:.0f} s with jobs unfinished"
        return None

    def _complete_finished(self) -> None:
        """Drop finished jobs from the active set and succeed their completion events (at this
        round; the event's value carries the exact finish time)."""
        still = []
        for job in self.active:
            if job.finished:
                self.completions[job.name].succeed(
                    SimEvent(Cause.COMPLETION, job.finish_time, job.name)
                )
            else:
                still.append(job)
        if self.on_finish is not None and len(still) < len(self.active):
            self.on_finish(len(self.active) - len(still))
        self.active = still

    # ----------------------------------------------------------------------------- schedule
    def _schedule(self, now: float) -> None:
        active = self.active
        scaler_reads = self.scaler is not None and self.scaler.reads_beliefs
        refresh = self.policy.reads_beliefs or self.agent.reads_beliefs or scaler_reads
        typed_refresh = self.typed and self.policy.type_aware
        for job in active:
            self._update_grad_stats(job)
            if refresh:
                job.belief.refresh()
            if typed_refresh:
                for belief in job.type_beliefs.values():
                    belief.refresh()
        views = tuple(self._view(job, now) for job in active)
        if self.scaler is not None and self._autoscale(now, views):
            views = tuple(self._view(job, now) for job in active)  # some were preempted
        live = self.live_cluster()
        if live.total_gpus == 0:  # every node offline: nobody runs this interval
            self._record_round(now, active)
            return
        snapshot = Snapshot(now, live, views, self.config.restart_delay)
        started = wallclock.perf_counter()
        decision = self.policy.allocate(snapshot)
        self.policy_seconds.append(wallclock.perf_counter() - started)
        if not isinstance(decision, Decision):
            raise RuntimeError(
                f"policy {self.policy.name} returned {type(decision).__name__}, "
                "expected a goodput_sim.policies.Decision"
            )
        types = live.node_type_index if live.mixed else None
        rows = decision.validated(
            self.policy.name, [job.name for job in active], live.capacity, types
        )
        orders = decision.node_orders if self.config.placement_order == "allocation" else {}
        for job in active:
            if not np.array_equal(rows[job.name], job.allocation):
                self._reallocate(job, rows[job.name], now, orders.get(job.name))
        if self.config.interference > 0:  # slowdowns first, so each plan is built once
            slowed = interference_flags(np.array([j.allocation for j in active]))
            for job, flag in zip(active, slowed, strict=True):
                job.slowdown = self.config.interference if flag else 0.0
        hints = decision.agent_hints
        for job in active:
            if job.replicas:
                self._ensure_plan(job, hints.get(job.name))
        self._record_round(now, active)

    def _reallocate(
        self, job: Job, row: NDArray[np.int64], now: float, node_order: tuple[int, ...] | None
    ) -> None:
        had = job.replicas > 0 or job.start_time is not None
        job.assign(row, node_order)
        job.plan = None
        if job.replicas == 0:  # preempted: no restart counted until it runs again
            job.local_bsz = job.accum_steps = 0
            return
        if job.typed is not None:
            self._switch_type(job)
        if job.start_time is None:
            job.start_time = now
        elif had:
            job.num_restarts += 1
        job.restart_remaining = self._restart_delay(job)
        if job.restore_pending:
            job.restores += 1
            job.restore_pending = False
        # Restarts save the job's state (a checkpoint) and training resumes after the delay.
        resumed = now + job.restart_remaining
        job.checkpoint = (job.progress, job.epoch, resumed)
        job.next_checkpoint = resumed + self._checkpoint_interval(job)

    def _switch_type(self, job: Job) -> None:
        """Run the job on the GPU type of its new nodes (a job never spans two types)."""
        node = int(np.flatnonzero(job.allocation)[0])
        gpu_type = self.cluster.gpu_types[node]
        if gpu_type != job.gpu_type:
            job.gpu_type = gpu_type
            job.profile = job.typed.for_type(gpu_type)
            job.type_history.append(gpu_type)

    def _restart_delay(self, job: Job) -> float:
        """The application's own checkpoint-restore delay, else the run's."""
        own = job.profile.restart_delay
        return self.config.restart_delay if own is None else own

    def _plan_belief(self, job: Job) -> BeliefView:
        """The belief a job's batch is chosen from: per GPU type under a type-aware policy, the
        type-blind one otherwise; either way bound to the batch limits of the GPU type the job
        runs on (a GPU's memory is a fact the job's agent sees, whatever the scheduler knows)."""
        if job.typed is not None and self.policy.type_aware and job.gpu_type is not None:
            return job.type_beliefs[job.gpu_type].view()
        view = job.belief.view()
        limits = job.profile.limits
        return view if view.limits == limits else replace(view, limits=limits)

    def _view(self, job: Job, now: float) -> JobView:
        return JobView(
            name=job.name,
            application=job.spec.application,
            arrival=job.spec.arrival,
            age=now - job.spec.arrival,
            attained_service=job.gpu_seconds,
            num_restarts=job.num_restarts,
            allocation=job.allocation,
            requested_replicas=job.spec.requested_replicas,
            requested_batch=job.spec.requested_batch,
            limits=job.profile.limits,
            epoch=job.epoch,
            belief=job.belief.view(),
            truth=self._frozen(job.profile) if self.policy.needs_oracle else None,
            gpu_type=job.gpu_type if job.replicas else None,
            type_beliefs=MappingProxyType({t: b.view() for t, b in job.type_beliefs.items()})
            if job.typed is not None and self.policy.type_aware
            else None,
            type_truths=MappingProxyType(
                {t: self._frozen(job.typed.for_type(t)) for t in self.cluster.type_order}
            )
            if job.typed is not None and self.policy.needs_oracle
            else None,
            type_speeds=self._type_speeds(job) if self.policy.type_aware else None,
            restart_delay=self._restart_delay(job),
            restarting=job.restart_remaining > 0,
        )

    def _type_speeds(self, job: Job) -> Mapping[str, float] | None:
        """One-GPU throughput of the job's application per GPU type (offline profiling), as a
        read-only mapping: one per application and run, keyed by the cluster's types."""
        if job.typed is None:
            return None
        cached = self._speeds.get(job.spec.application)
        if cached is None:
            speeds = {t: job.typed.single_gpu_throughput(t) for t in self.cluster.type_order}
            cached = self._speeds[job.spec.application] = MappingProxyType(speeds)
        return cached

    def _frozen(self, profile: ApplicationProfile) -> FrozenProfile:
        """The read-only view of a ground-truth profile an oracle policy is handed (one per
        profile and run, so a policy may key its caches by it)."""
        frozen = self._truth_views.get(profile)
        if frozen is None:
            frozen = self._truth_views[profile] = FrozenProfile(profile)
        return frozen

    def _update_grad_stats(self, job: Job) -> None:
        """The job measures its gradient statistics while it trains (SPEC 4.4); the scheduler
        receives the current values."""
        key = (job.total_batch or job.profile.limits.init_batch_size, job.epoch)
        if key != job.stats_key:
            job.stats_key = key
            sqr, var = job.profile.grad_stats(*key)
            job.belief.set_grad_stats(float(sqr), float(var))
            for belief in job.type_beliefs.values():  # statistics do not depend on the GPU
                belief.set_grad_stats(float(sqr), float(var))

    # ------------------------------------------------------------------------------ advance
    def _ensure_plan(self, job: Job, hint: Mapping[str, Any] | None) -> None:
        """The job's per-epoch plan on its allocation, asking its agent when something the plan
        depends on changed: the allocation (a reallocation drops the plan), what of the belief
        the agent reads, the interference slowdown, or the policy's hint."""
        belief = self._plan_belief(job)
        key = (self.agent.depends_on(belief), job.slowdown, _hint_key(hint), job.gpu_type)
        if job.plan is not None and job.plan.key == key:
            return
        profile = job.profile
        epochs = np.arange(job.epoch, profile.limits.max_epochs)
        batch = job.total_batch or profile.limits.init_batch_size
        # The gradient statistics the job will measure in each upcoming epoch, for agents that
        # re-choose their batch every epoch (each epoch's are passed explicitly, so the plan
        # need not change with the belief's current statistics).
        sqr, var = profile.grad_stats(batch, epochs)
        plan = self.agent.configs(
            belief, job.spec.requested_batch, job.nodes_used, job.replicas, sqr, var, hint
        )
        local_bsz, accum = validated_plan(
            self.agent.name, job.name, plan, job.replicas, profile.limits, len(epochs)
        )
        step, sync, total, iteration, rate = _epoch_rates(
            profile, job.layout, local_bsz, accum, job.replicas, epochs, job.slowdown
        )
        job.plan = _Plan(key, job.epoch, local_bsz, accum, rate, step, sync, total / iteration)
        job.local_bsz, job.accum_steps = int(local_bsz[0]), int(accum[0])
        job.last_batch = job.total_batch

    def _advance(self, jobs: list[Job], start: float, end: float) -> None:
        """Move every running job in ``jobs`` from ``start`` to ``end`` (noting, where nodes
        can fail, the state each job last checkpointed by ``end``)."""
        if end > start:
            for job in jobs:
                if job.replicas and not job.finished:
                    if self.failure_model is not None and job.next_checkpoint <= end:
                        self._take_checkpoint(job, start, end)
                    self._advance_job(job, start, end)

    def _take_checkpoint(self, job: Job, start: float, end: float) -> None:
        """Record the job's state at its last periodic checkpoint in (start, end], computed
        from its plan aside, so that the advance itself is the same with or without it."""
        every = self._checkpoint_interval(job)
        count = np.floor((end - job.next_checkpoint) / every)
        when = job.next_checkpoint + count * every
        progress, epoch = _state_at(job, start, when)
        job.checkpoint = (progress, epoch, when)
        job.next_checkpoint = when + every

    def _checkpoint_interval(self, job: Job) -> float:
        own = getattr(job.profile, "checkpoint_interval", None)
        return self.config.checkpoint_interval or own or DEFAULT_CHECKPOINT_SECONDS

    def _advance_job(self, job: Job, start: float, end: float) -> None:
        """Move a running job from ``start`` to ``end`` on ground truth."""
        t = start + min(job.restart_remaining, end - start)
        job.restart_remaining -= t - start
        job.restart_gpu_seconds += job.replicas * (t - start)
        stop = end
        if t < end:
            plan = job.plan
            thresholds = job.profile.progress_thresholds
            k0 = job.epoch - plan.first_epoch
            available = end - t
            rate = plan.rate[k0]
            if (thresholds[job.epoch + 1] - job.progress) / rate > available:
                # The common case, no epoch boundary in this interval: scalar arithmetic.
                self._observe(job, plan, k0, 1)
                self._train_within_epoch(job, plan, k0, available)
            else:
                finish = self._cross_epochs(job, plan, k0, t, available)
                stop = end if finish is None else finish
        job.gpu_seconds += job.replicas * (stop - start)
        if job.typed is not None:
            by_type = job.gpu_seconds_by_type
            by_type[job.gpu_type] = by_type.get(job.gpu_type, 0.0) + job.replicas * (stop - start)
        job.train_seconds += max(stop - t, 0.0)
        job.train_gpu_seconds += job.replicas * max(stop - t, 0.0)

    def _cross_epochs(
        self, job: Job, plan: _Plan, k0: int, t: float, available: float
    ) -> float | None:
        """Advance a job whose interval from ``t`` (``available`` seconds) crosses epoch
        boundaries, epoch by epoch at the plan's rates; returns its finish time if it ends."""
        thresholds = job.profile.progress_thresholds
        rates = plan.rate[k0:]
        segments = np.diff(thresholds[job.epoch :])
        segments[0] = thresholds[job.epoch + 1] - job.progress
        durations = segments / rates
        cumulative = np.cumsum(durations)
        crossed = int(np.searchsorted(cumulative, available, side="right"))
        self._observe(job, plan, k0, min(crossed + 1, len(rates)))
        samples = plan.samples[k0:]
        job.examples += float(durations[:crossed] @ samples[:crossed])
        if crossed >= len(rates):  # finishes inside this interval
            job.finish_time = t + float(cumulative[-1])
            job.epoch = job.profile.limits.max_epochs
            job.progress = float(thresholds[-1])
            return job.finish_time
        spent = float(cumulative[crossed - 1]) if crossed else 0.0
        if crossed:
            job.epoch += crossed
            job.progress = float(thresholds[job.epoch])
        self._train_within_epoch(job, plan, k0 + crossed, available - spent)
        return None

    @staticmethod
    def _train_within_epoch(job: Job, plan: _Plan, k: int, seconds: float) -> None:
        """Train ``seconds`` at the plan's ``k``-th epoch configuration, crossing no boundary."""
        job.progress += float(plan.rate[k]) * seconds
        job.examples += float(plan.samples[k]) * seconds
        job.local_bsz = int(plan.local_bsz[k])
        job.accum_steps = int(plan.accum_steps[k])
        job.last_batch = job.total_batch

    @staticmethod
    def _observe(job: Job, plan: _Plan, first: int, count: int) -> None:
        """Record the configurations the job ran in these epochs for its throughput belief."""
        step, sync = plan.step, plan.sync
        seen = set()
        for k in range(first, first + count):
            b = float(plan.local_bsz[k])
            if b not in seen:
                seen.add(b)
                job.belief.observe(job.nodes_used, job.replicas, b, float(step[k]), float(sync[k]))
                if job.typed is not None:
                    job.type_beliefs[job.gpu_type].observe(
                        job.nodes_used, job.replicas, b, float(step[k]), float(sync[k])
                    )

    # ------------------------------------------------------------------------------ records
    def _record_round(self, now: float, active: list[Job]) -> None:
        running = [j for j in active if j.replicas]
        self.round_records.append(
            {
                "time": now,
                "active": len(active),
                "running": len(running),
                "queued": len(active) - len(running),
                "gpus_in_use": int(sum(j.replicas for j in running)),
                "allocations": ";".join(
                    f"{j.name}={'.'.join(map(str, j.placement))}@{j.total_batch}" for j in running
                ),
                "nodes_up": self.cluster.nodes - len(self._offline()),
                "nodes_down": len(self.failed),
                "nodes_starting": len(self.starting),
            }
        )
        if len({g.gpus_per_node for g in self.cluster.groups}) > 1:  # else nodes_up x GPUs
            self.round_records[-1]["gpus_up"] = self.live_cluster().total_gpus
        if self.observers:
            record = RoundRecord(
                now,
                tuple(j.name for j in active),
                tuple(
                    RunningJob(
                        j.name,
                        j.spec.application,
                        j.gpu_type,
                        tuple(int(g) for g in j.allocation),
                        int(j.local_bsz),
                        int(j.accum_steps),
                    )
                    for j in running
                ),
                frozenset(self._offline()),
            )
            for observe in self.observers:
                observe(record)

    def _jobs_table(self) -> pd.DataFrame:
        rows = []
        for job in self.jobs:
            finish = job.finish_time
            rows.append(
                {
                    "name": job.name,
                    "application": job.spec.application,
                    "arrival": job.spec.arrival,
                    "start": job.start_time,
                    "finish": finish,
                    "jct": finish - job.spec.arrival if finish is not None else None,
                    "queueing": (job.start_time - job.spec.arrival)
                    if job.start_time is not None
                    else None,
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
            )
            if self.typed:
                rows[-1]["gpu_types"] = ">".join(job.type_history)
                rows[-1]["gpu_hours_by_type"] = ";".join(
                    f"{t}={s / 3600:.6f}" for t, s in job.gpu_seconds_by_type.items()
                )
        return pd.DataFrame(rows)

    def _check_finishable(self) -> None:
        """Refuse a job that could not finish within ``MAX_IDEAL_SECONDS`` even alone on its
        requested GPUs at its requested batch: its profile (or request) would make the run
        endless. One estimate per distinct (application, GPUs, batch)."""
        seen: dict[tuple, float] = {}
        for job in self.jobs:
            spec, profile = job.spec, job.profile
            key = (spec.application, spec.requested_replicas, spec.requested_batch)
            if key not in seen:
                lim = profile.limits
                replicas = spec.requested_replicas
                b, s = fixed_batch_config(spec.requested_batch, replicas, lim)
                layout = self.cluster.packed_layout(replicas)
                epochs = np.arange(lim.max_epochs)
                *_, rate = _epoch_rates(profile, layout, b, s, replicas, epochs)
                with np.errstate(divide="ignore", invalid="ignore"):
                    seen[key] = float(np.sum(np.diff(profile.progress_thresholds) / rate))
            seconds = seen[key]
            if not (np.isfinite(seconds) and seconds <= MAX_IDEAL_SECONDS):
                raise InputError(
                    f"job {job.name!r}",
                    f"would need {seconds / 86400:.3g} days alone on {key[1]} GPUs at batch "
                    f"{key[2]} with the {key[0]!r} profile; at most "
                    f"{MAX_IDEAL_SECONDS / 86400:.0f} days are simulated (check the profile)",
                )

    def _oracle_params(self, workload: pd.DataFrame) -> dict[str, ThroughputParams]:
        """True throughput as the 7-parameter model fitted to a dense grid of the profile."""
        out = {}
        for app in sorted(set(workload["application"])):
            profile = self.profiles[app]
            lim = profile.limits
            bsz = np.unique(np.geomspace(lim.min_local_bsz, lim.max_local_bsz, 8).round())
            rows = []
            for replicas in range(1, min(self.cluster.total_gpus, 64) + 1):
                placement = self.cluster.packed_layout(replicas)
                step, sync = profile.step_sync(placement, bsz)
                rows += [
                    (len(placement), replicas, b, st - sy, st)
                    for b, st, sy in zip(bsz, step, sync, strict=True)
                ]
            data = np.array(rows)
            out[app] = ThroughputModel().fit(*data.T).params_
        return out


def _epoch_rates(
    profile: ApplicationProfile,
    layout: tuple[int, ...],
    local_bsz,
    accum,
    replicas: int,
    epochs: NDArray,
    slowdown: float = 0.0,
) -> tuple:
    """True (step, sync, total batch, iteration seconds, progress rate) of a configuration in
    each of ``epochs``: the ground truth a plan, and the finishability check, advance by."""
    step, sync = profile.step_sync(layout, local_bsz)
    total = replicas * local_bsz * (accum + 1)
    sqr, var = profile.grad_stats(total, epochs)
    iteration = iteration_seconds(step, sync, accum) / (1.0 - slowdown)
    if profile.slowdown != 1.0:  # calibration to real runs (Sia SPEC 3.5); beliefs are not slowed
        iteration = iteration * profile.slowdown
    rate = gain(total, profile.limits.init_batch_size, sqr, var) / iteration
    return step, sync, total, iteration, rate


def _truth(profile: ApplicationProfile, gpu_type: str) -> ApplicationProfile:
    """A job's ground truth before it runs: its profile on the cluster's first GPU type."""
    return profile.for_type(gpu_type) if isinstance(profile, TypedProfile) else profile


def _state_at(job: Job, start: float, when: float) -> tuple[float, int]:
    """(progress, epoch) the job will have at ``when`` if it runs its plan from ``start``; the
    job itself is left as it is."""
    trained = when - (start + min(job.restart_remaining, when - start))
    if trained <= 0:
        return job.progress, job.epoch
    plan = job.plan
    thresholds = job.profile.progress_thresholds
    rates = plan.rate[job.epoch - plan.first_epoch :]
    segments = np.diff(thresholds[job.epoch :])
    segments[0] = thresholds[job.epoch + 1] - job.progress
    cumulative = np.cumsum(segments / rates)
    crossed = int(np.searchsorted(cumulative, trained, side="right"))
    if crossed >= len(rates):
        return float(thresholds[-1]), job.profile.limits.max_epochs
    spent = float(cumulative[crossed - 1]) if crossed else 0.0
    base = float(thresholds[job.epoch + crossed]) if crossed else job.progress
    return base + float(rates[crossed]) * (trained - spent), job.epoch + crossed


def _epochs(job: Job, progress: float, epoch: int) -> float:
    """Progress as fractional epochs."""
    thresholds = job.profile.progress_thresholds
    if epoch >= len(thresholds) - 1:
        return float(epoch)
    low, high = thresholds[epoch], thresholds[epoch + 1]
    return epoch + (progress - low) / (high - low)


def pool_cluster(cluster: ClusterSpec, scale: AutoscaleConfig | None) -> ClusterSpec:
    """The machines a run may use: the cluster, or with autoscaling ``max_nodes`` nodes taken
    from the cluster's node groups in order, repeated as needed (:func:`pool_groups`)."""
    if scale is None:
        return cluster
    return ClusterSpec(pool_groups(cluster.groups, scale.max_nodes), source=cluster.source)


def _hint_key(hint: Mapping[str, Any] | None) -> Hashable:
    """A policy's per-job agent hint as part of a plan key."""
    return None if not hint else tuple(sorted(hint.items()))
