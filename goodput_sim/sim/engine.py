"""The discrete-event engine's core: arrivals, scheduling rounds and completions on a simpy
clock, with job progress advanced analytically between events (whole epochs at a time).

The contract it enforces, once per round:

1. the engine brings every active job's belief up to date (refitting only where new
   observations call for it) and freezes it into the snapshot;
2. the policy answers with a :class:`~goodput_sim.policies.base.Decision` (GPUs per node per
   job), validated in one place;
3. the engine asks each running job's batch agent for its per-GPU batch and accumulation on the
   new allocation, from the job's frozen belief and the gradient statistics it measures.

Everything else that changes the world under the jobs (node failures, spot reclaims, job
crashes, checkpoints, autoscaling, interference, learning-rate-aware progress) is a dynamic
(:mod:`goodput_sim.sim.dynamics`), called at named points and talking back only through the
:class:`~goodput_sim.sim.dynamics.World` calls this class provides. Ground truth (profiles)
advances jobs; policies and agents see beliefs. Between two events a job's configuration is
fixed, so its progress rate is piecewise constant over epochs and its exact completion time
follows from a cumulative sum.
"""

from __future__ import annotations

import functools
import time as wallclock
import zlib
from collections.abc import Callable, Mapping, Sequence
from dataclasses import asdict
from typing import Any

import numpy as np
import pandas as pd
import simpy
from numpy.typing import NDArray

from goodput_sim.agents import BatchAgent, get_agent
from goodput_sim.autoscale import pool_cluster
from goodput_sim.errors import InputError
from goodput_sim.inputs.cluster import ClusterSpec
from goodput_sim.policies.base import Decision, Policy, Snapshot
from goodput_sim.profiles.base import ApplicationProfile
from goodput_sim.sim.budget import check_work
from goodput_sim.sim.checks import check_categories, check_finishable, oracle_params
from goodput_sim.sim.clock import Cause, SimEvent, after, run_clock
from goodput_sim.sim.dynamics import (
    Dynamic,
    DynamicFactory,
    Interruption,
    LossCause,
    build_dynamics,
)
from goodput_sim.sim.guards import Guards
from goodput_sim.sim.jobbook import JobBook
from goodput_sim.sim.jobs import Job
from goodput_sim.sim.nodes import NodePool
from goodput_sim.sim.observe import RoundObserver
from goodput_sim.sim.plans import Planner
from goodput_sim.sim.progress import advance_job, lose_work, settle_save
from goodput_sim.sim.recording import Recorder
from goodput_sim.sim.result import SimResult, fairness_source
from goodput_sim.sim.threads import one_blas_thread
from goodput_sim.sim.views import Views
from goodput_sim.spec import SimConfig


class Simulation:
    """One run: a workload replayed on a cluster under one policy and one batch agent (the
    policy's default unless given), with the registered dynamics and any ``dynamics`` given.

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
        dynamics: Sequence[DynamicFactory] = (),
        seed: int | None = None,
    ):
        self.on_finish = on_finish  # told how many jobs finished at each round, for progress
        config = self.config = config or SimConfig()
        self.cluster = pool_cluster(cluster or ClusterSpec(), config.autoscale)
        self.policy = policy
        self.agent = agent or get_agent(policy.default_agent)
        self.profiles = profiles
        failures = config.failures
        self.seed = seed if seed is not None else (failures.seed if failures else 0)
        oracle = (
            oracle_params(workload["application"], profiles, self.cluster) if config.oracle else {}
        )
        # Under the steps geometry every plan is laid on the static run's steps, a whole-run
        # plan from the application's noise trajectory (sim.dynamics.lr_aware).
        steps = config.tail_geometry == "steps"
        prior = self.agent.reads_noise_prior or steps
        book = self.book = JobBook(
            workload,
            profiles,
            self.cluster,
            oracle,
            config.lr_schedule,
            prior,
            policy.belief_fit,
            steps,
        )
        book.on_made = self._job_made
        if book.typed and config.oracle:
            raise InputError("--oracle", "is not supported on profiles by GPU type")
        self.views = Views(book, policy, self.cluster, config.restart_delay)
        self.planner = Planner(self.agent, self.views, self.book.fit_memo.every_configuration)
        self.recorder = Recorder(self.cluster, observers)
        self.policy_seconds: list[float] = []
        self.env = simpy.Environment()
        self.active: list[Job] = []
        self.last_advance = 0.0
        self.completions: dict[str, simpy.Event] = {}  # of the jobs made so far
        self._arrived = 0  # jobs of the arrival order that have arrived
        self.stopped: str | None = None
        self.guards = Guards(config)
        self._releases = 0  # jobs that lost every GPU so far (a changed world)
        with one_blas_thread():  # the profiles' first interpolations
            self._check_finishable()
        check_work(self.cluster, config, len(book))
        self.pool = NodePool(self.cluster, failures, config.autoscale)
        self.dynamics = build_dynamics(self, tuple(dynamics))
        for dynamic in self.dynamics:
            dynamic.check()
        self._advancers = [d for d in self.dynamics if type(d).advance is not Dynamic.advance]
        self.views.move_costs = [
            d.move_cost for d in self.dynamics if type(d).move_cost is not Dynamic.move_cost
        ]
        # Event-driven rounds: the last decision stands until this time while no job arrives,
        # finishes or loses its GPUs and the offline nodes stay these.
        self._quiet_until = -np.inf
        self._decided_offline: set[int] = set()
        self._hints: Mapping[str, Mapping[str, Any]] = {}  # the last decision's agent hints
        self.policy.bind(self)  # last, once nothing above can fail: state of this run only
        self.agent.bind(self)

    def _check_finishable(self) -> None:
        check_categories(self.book.request_jobs)
        check_finishable(self.book.request_jobs, self.cluster)

    @property
    def jobs(self) -> list[Job]:
        """Every job of the workload, in file order (made now where not yet arrived)."""
        return self.book.all_jobs()

    def dynamic(self, name: str) -> Any:
        """This run's dynamic ``name`` (None where the run leaves it out)."""
        return next((d for d in self.dynamics if d.name == name), None)

    def has_started(self) -> bool:
        """Whether :meth:`run` has been called (the policy and agent may then be rebound)."""
        return self.env.now > 0 or self.env.peek() < float("inf")

    def _job_made(self, job: Job) -> None:
        for dynamic in self.dynamics:
            dynamic.job_made(job)
        self.completions[job.name] = self.env.event()

    # ---------------------------------------------------------------------------------- run
    def run(self) -> SimResult:
        """Replay the workload to the end (or the horizon); a simulation runs once."""
        if self.env.now > 0 or self.recorder.rows:
            raise RuntimeError("a Simulation runs once; build a new one to run again")
        self.guards.start()
        for dynamic in self.dynamics:
            dynamic.start()
        book = self.book
        arrivals = ((float(book.arrivals[i]), book.names[i]) for i in book.order)
        with one_blas_thread():
            run_clock(self.env, arrivals, self._on_arrival, self._round)
        jobs = self.recorder.jobs(book, self.dynamics)
        fairness = None
        if len(jobs) and not any(d.replaces_work for d in self.dynamics):
            adapts = self.agent.name != "fixed"
            fairness = fairness_source(jobs, book, self.cluster, adapts, self.views.restart_delay)
        return SimResult(
            jobs=jobs,
            fairness_source=fairness,
            rounds=pd.DataFrame(self.recorder.rows),
            policy=self.policy.describe(),
            agent=self.agent.describe(),
            config=asdict(self.config),
            cluster=self.cluster.describe(),
            wall_seconds=wallclock.perf_counter() - self.guards.started,
            policy_seconds=self.policy_seconds,
            stopped=self.stopped,
            cluster_summary=self.recorder.cluster_summary(
                self.pool, book, self.dynamics, self.env.now
            ),
        )

    def _on_arrival(self, event: simpy.Event) -> None:
        """A job arrives: it becomes schedulable at the next round (at or after this time).
        Arrival events fire in queue order (time, then creation order)."""
        if not self.active:  # nothing was owed while no job was active
            self.guards.idle(self.env.now)
        self.active.append(self.book.job(int(self.book.order[self._arrived])))
        self._arrived += 1
        self._quiet_until = -np.inf

    def _round(self, now: float) -> float | None:
        """One scheduling round: bring every job up to date, retire finished ones and, unless
        the run is over, schedule; the wait until the next round, or None to stop.

        A job first becomes schedulable at the first round at or after its arrival (as in the
        reference); with no active job the clock jumps to the first round after the next
        arrival (or, while a dynamic asks for idle rounds, to the next interval)."""
        interval, horizon = self.config.interval, self.config.horizon
        self.catch_up()
        self.pool.account(now)
        self._complete_finished()
        waiting = len(self.book) - self._arrived
        if (not self.active and not waiting) or (horizon is not None and now >= horizon):
            return None
        self.stopped = self.guards.why_stop(now, self.active)
        if self.stopped:
            return None
        if self.active:
            self._schedule(now)
            self.guards.scheduled(now, self.active)
            wait = interval
        else:
            gap = float(self.book.arrivals[self.book.order[self._arrived]]) - now
            wait = max(np.ceil(gap / interval), 1) * interval
            if any([dynamic.idle_round() for dynamic in self.dynamics]):
                wait = interval  # the next idle round may change the world again
        if horizon is not None:
            wait = min(wait, max(horizon - now, 0.0))
        return wait

    def _complete_finished(self) -> None:
        """Drop finished jobs from the active set and succeed their completion events (at this
        round; the event's value carries the exact finish time)."""
        still = []
        for job in self.active:
            if job.finished:
                self.completions[job.name].succeed(
                    SimEvent(Cause.COMPLETION, job.finish_time, job.name)
                )
                job.release()  # nothing reads a finished job's plan or GPUs again
            else:
                still.append(job)
        if len(still) < len(self.active):
            self._quiet_until = -np.inf
            self.guards.finished(self.env.now)
            if self.on_finish is not None:
                self.on_finish(len(self.active) - len(still))
        self.active = still

    # ----------------------------------------------------------------------------- schedule
    def _schedule(self, now: float) -> None:
        active, views = self.active, self.views
        refresh = self.policy.reads_beliefs or self.agent.reads_beliefs
        refresh = refresh or any(d.reads_beliefs for d in self.dynamics)
        typed_refresh = self.book.typed and self.policy.type_aware
        for job in active:
            if refresh or typed_refresh:  # nobody reads the statistics otherwise
                views.update_grad_stats(job)
            if refresh:
                job.belief.refresh()
            if typed_refresh:
                for belief in job.type_beliefs.values():
                    belief.refresh()
        offline = self.pool.offline()
        if now < self._quiet_until and offline == self._decided_offline:
            self.policy_seconds.append(0.0)  # nothing the policy reads changed: same answer
        elif not self._decide(now, active, offline):
            self._record_round(now, active)  # every node offline: nobody runs this interval
            return
        for dynamic in self.dynamics:
            dynamic.after_decide(active)
        for job in active:
            if job.replicas:
                self.planner.ensure(job, self._hints.get(job.name))
        self._record_round(now, active)

    def _decide(self, now: float, active: list[Job], offline: set[int]) -> bool:
        """Ask the policy for this round's allocation and apply it; False if no GPU is up.
        Remembers until when the answer stands while no event happens
        (:meth:`~goodput_sim.policies.base.Policy.quiet_until`) and with which ``offline``
        nodes."""
        views = tuple(self.views.view(job, now) for job in active)
        releases = self._releases
        for dynamic in self.dynamics:
            dynamic.before_decide(views)
        if self._releases != releases:  # some lost their GPUs
            views = tuple(self.views.view(job, now) for job in active)
        live = self.pool.live_cluster()
        if live.total_gpus == 0:
            return False
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
            self.policy.name,
            [job.name for job in active],
            live.capacity,
            types,
            {v.name: v.limits for v in views if v.limits.category != "adaptive"},
        )
        orders = decision.node_orders if self.config.placement_order == "allocation" else {}
        free_moves = self.policy.free_same_shape_moves and not any(
            d.prices_moves() for d in self.dynamics
        )
        for job in active:
            row = rows[job.name]
            if row.tobytes() == job.allocation.tobytes():  # both int64 rows of the nodes
                continue
            if free_moves and job.same_shape(row, self.cluster.node_type_index):
                job.move(row, orders.get(job.name))
            else:
                self._reallocate(job, row, now, orders.get(job.name))
        self._hints = decision.agent_hints
        if all(d.keeps_decisions for d in self.dynamics):
            self._quiet_until = self.policy.quiet_until(snapshot, rows)
            self._decided_offline = offline  # as at the round's start
        return True

    def _reallocate(
        self, job: Job, row: NDArray[np.int64], now: float, node_order: tuple[int, ...] | None
    ) -> None:
        had = job.replicas > 0 or job.start_time is not None
        if job.replicas:  # a running job stops here
            why = Interruption(LossCause.REALLOCATED, now, "policy")
            for dynamic in self.dynamics:
                dynamic.stopping(job, why)
        job.assign(row, node_order)
        job.plan = None
        for dynamic in self.dynamics:
            dynamic.assigned(job, now)
        if job.replicas == 0:  # preempted: no restart counted until it runs again
            job.local_bsz = job.accum_steps = 0
            return
        if job.typed is not None:
            self._switch_type(job)
        if job.start_time is None:
            job.start_time = now
        elif had:
            job.num_restarts += 1
        job.restart_remaining = self.views.restart_delay(job)
        for dynamic in self.dynamics:
            dynamic.restarting(job, now)
        if job.restore_pending:
            job.restores += 1
            job.restore_pending = False
        # Restarts save the job's state (a checkpoint) and training resumes after the delay.
        resumed = now + job.restart_remaining
        job.checkpoint, job.saving = (job.progress, job.epoch, resumed), None

    def _switch_type(self, job: Job) -> None:
        """Run the job on the GPU type of its new nodes (a job never spans two types)."""
        node = int(np.flatnonzero(job.allocation)[0])
        gpu_type = self.cluster.gpu_types[node]
        if gpu_type != job.gpu_type:
            job.gpu_type = gpu_type
            job.profile = job.typed.for_type(gpu_type)
            job.type_history.append(gpu_type)

    def _advance(self, jobs: list[Job], start: float, end: float) -> None:
        """Move every running job in ``jobs`` from ``start`` to ``end`` (a dynamic may advance
        a job itself, as checkpoints that cost time do)."""
        if end <= start:
            return
        replan = None
        if self.book.fit_memo.every_configuration:
            replan = functools.partial(self.planner.replan, hints=self._hints, policy=self.policy)
        for job in jobs:
            running = job.replicas and not job.finished
            if running and not any(d.advance(job, start, end) for d in self._advancers):
                advance_job(job, start, end, replan)

    def _record_round(self, now: float, active: list[Job]) -> None:
        self.recorder.round(now, active, self.pool)

    # ------------------------------------------------------------- the dynamics' World calls
    def catch_up(self) -> None:
        """Bring every running job's progress up to now."""
        now = self.env.now
        self._advance(self.active, self.last_advance, now)
        self.last_advance = now

    def stop(
        self, job: Job, why: Interruption, *, lose_work: bool = False, restore: bool = False
    ) -> None:
        """Take every GPU from a running job for ``why``: back to its last checkpoint if
        ``lose_work``; restoring from a checkpoint at its next start if ``restore``. It
        restarts when it is next allocated."""
        for dynamic in self.dynamics:
            dynamic.stopping(job, why)
        if lose_work:
            self.lose_work(job, why.time)
        self.world_changed((job,))
        self._releases += 1
        job.assign(np.zeros_like(job.allocation))
        job.local_bsz = job.accum_steps = 0
        job.restart_remaining = 0.0
        for dynamic in self.dynamics:
            dynamic.assigned(job, self.env.now)
        job.restore_pending = job.restore_pending or restore

    def world_changed(self, jobs: Sequence[Job] = ()) -> None:
        """The last decision no longer stands (the policy decides at the next round), and
        ``jobs`` plan anew."""
        self._quiet_until = -np.inf
        for job in jobs:
            job.plan = None

    def lose_work(self, job: Job, now: float) -> None:
        """Back to the job's last checkpoint whose save had finished by ``now``."""
        lose_work(job, now)

    def save(self, job: Job, now: float) -> None:
        """The job's state at ``now`` is saved (a save under way by then counts first)."""
        settle_save(job, now)
        job.checkpoint, job.saving = (job.progress, job.epoch, now), None

    def schedule(
        self, delay: float, cause: Cause, then: Callable[[], Any], job: str | None = None
    ) -> None:
        """Call ``then`` after ``delay`` seconds, ordered among the events of that instant by
        ``cause`` (:data:`~goodput_sim.sim.clock.ORDER`)."""
        after(self.env, delay, cause, job).callbacks.append(lambda _event: then())

    def random(self, name: str, job: str = "") -> np.random.Generator:
        """A random stream of dynamic ``name`` for job ``job``: keyed by the run's seed and the
        two names only, never by row or creation order."""
        keys = [zlib.crc32(text.encode()) for text in (name, job)]
        return np.random.default_rng(np.random.SeedSequence([self.seed, *keys]))

    def count_events(self, count: int) -> None:
        """Charge ``count`` events to the work budget."""
        self.guards.events += count

    def jobs_on(self, node: int) -> list[Job]:
        """The active, unfinished jobs holding GPUs on ``node``."""
        return [j for j in self.active if not j.finished and j.allocation[node] > 0]

    def failure_rate(self, job: Job) -> float:
        """Events per second that undo the job's work: failures and reclaims of the nodes it
        runs on (a job not placed counts as on the first ``max(nodes_used, 1)`` nodes), then
        every dynamic's own."""
        nodes = np.flatnonzero(job.allocation)
        if not nodes.size:
            nodes = np.arange(min(max(job.nodes_used, 1), self.cluster.nodes))
        rate = self.pool.failure_rate(nodes.tolist())
        for dynamic in self.dynamics:
            rate += dynamic.failure_rate(job)
        return rate
