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

Its parts live in :mod:`goodput_sim.sim`: the clock and the order of events at one instant
(``clock``), training progress on ground truth (``progress``), the nodes' failures, repairs and
autoscaling (``dynamics``), and the output tables and round observers (``recording``,
``observe``). This module keeps the jobs, their beliefs and the round's contract.
"""

from __future__ import annotations

import functools
import time as wallclock
from collections.abc import Callable, Hashable, Iterable, Iterator, Mapping, Sequence
from dataclasses import asdict, dataclass, field, replace
from types import MappingProxyType
from typing import Any

import numpy as np
import pandas as pd
import simpy
from numpy.typing import NDArray

from goodput_sim.agents import BatchAgent, get_agent
from goodput_sim.agents.base import validated_plan
from goodput_sim.autoscale import AutoscaleConfig, pool_groups
from goodput_sim.errors import InputError
from goodput_sim.inputs.cluster import ClusterSpec, interference_flags
from goodput_sim.inputs.failures import Failure, FailureModel
from goodput_sim.inputs.workload import job_category
from goodput_sim.models.goodput import fixed_batch_config
from goodput_sim.models.limits import Limits, for_category
from goodput_sim.models.lr import LRSchedule, schedule_for
from goodput_sim.models.throughput import ThroughputModel, ThroughputParams
from goodput_sim.policies.base import Decision, JobView, Policy, Snapshot
from goodput_sim.profiles.base import ApplicationProfile, FrozenProfile
from goodput_sim.profiles.typed import TypedProfile, as_typed
from goodput_sim.sim.budget import check_work
from goodput_sim.sim.clock import Cause, SimEvent, after, run_clock
from goodput_sim.sim.dynamics import NodeStates, held_nodes
from goodput_sim.sim.fairness import IsolatedTimes, fairness_table
from goodput_sim.sim.jobs import BeliefView, FitMemo, Job, JobBelief, JobSpec
from goodput_sim.sim.lr_progress import SeedObjective, StepLog, example_budget, static_batch
from goodput_sim.sim.observe import RoundObserver
from goodput_sim.sim.progress import (
    Plan,
    advance_job,
    epoch_rates,
    lose_work,
    state_at,
)
from goodput_sim.sim.recording import gpu_hours_by_type, jobs_table, round_record, round_row
from goodput_sim.sim.threads import one_blas_thread
from goodput_sim.spec import MAX_EVENTS, check_config

MAX_IDEAL_SECONDS = 365 * 86400.0  # a job needing longer even alone is an input error
MAX_SIMULATED_SECONDS = 20 * 365 * 86400.0  # beyond every finishable workload: a runaway
DEFAULT_CHECKPOINT_SECONDS = 1800.0  # when neither the run nor the profile sets one
PLAN_MEMO_SIZE = 4096  # plans kept for sharing (a few kilobytes each)


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
    stall_hours: float = 24.0  # simulated hours jobs may wait with none holding a GPU
    max_events: int = MAX_EVENTS  # the work budget: job-rounds plus node failures and repairs
    failures: FailureModel | None = None  # node failures and repairs (none by default)
    checkpoint_interval: float | str | None = None  # seconds or "auto"; default: profile's/30 min
    autoscale: AutoscaleConfig | None = None  # grow and shrink the cluster (fixed by default)
    checkpoint_seconds: float | None = None  # save time; default: the profile's, else 0
    reallocation_checkpoint: str = "free"  # "free" (AdaptDL), "charged" or "none"
    # Training progress (sim.lr_progress): "noise" (Pollux's gain) or "lr-aware" (a fixed
    # example budget, final loss from learning rate and noise); learning-rate schedules; the
    # lr-aware descent; and whether to record seed 004's objective per job under "noise".
    progress: str = "noise"
    lr_schedule: str | None = None
    lr_descent: float = 5.0
    seed_objective: bool = False

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
        schedules = {
            app: schedule_for(app, truth.limits.lr_schedule, self.config.lr_schedule)
            for app, truth in truths.items()
        }
        # What a job's agent knows of its application besides its beliefs: its learning-rate
        # schedule and, for agents that forecast the noise, an earlier run's trajectory.
        self._recipes = {
            app: {
                "lr_schedule": schedules[app].spelled(),
                "noise_prior": _noise_prior(truth) if self.agent.reads_noise_prior else None,
            }
            for app, truth in truths.items()
        }
        self._limits: dict[tuple, Limits] = {}
        self._truths = truths
        self._oracle = oracle_params
        # The workload as columns, in file order; a job's state is made when it arrives (or
        # when ``jobs`` is read), so a million-row workload cut short by a horizon costs what
        # its arrived jobs cost.
        self._names = workload["name"].astype(str).tolist()
        self._apps = workload["application"].astype(str).tolist()
        self._arrivals = workload["time"].to_numpy(dtype=np.float64)
        self._replicas = workload["num_replicas"].to_numpy(dtype=np.int64)
        self._batches = workload["batch_size"].to_numpy(dtype=np.int64)
        self._categories = (
            [job_category(c) for c in workload["category"]]
            if "category" in workload.columns
            else None
        )
        self._order = np.argsort(self._arrivals, kind="stable")  # stable: file order
        self._made: dict[int, Job] = {}  # jobs made so far, by workload row
        self.typed = self.cluster.mixed or any(
            isinstance(profiles[a], TypedProfile) for a in set(self._apps)
        )
        self._typed: dict[str, TypedProfile] = {}
        if self.typed:
            if self.config.oracle:
                raise InputError("--oracle", "is not supported on profiles by GPU type")
            self._typed = {app: as_typed(profiles[app], home) for app in truths}
        self.objectives = self._seed_objectives(truths, schedules)
        self.round_records: list[dict] = []
        self.policy_seconds: list[float] = []
        self.env = simpy.Environment()
        self.active: list[Job] = []
        self.last_advance = 0.0
        self.completions: dict[str, simpy.Event] = {}  # of the jobs made so far
        self._arrived = 0  # jobs of the arrival order that have arrived
        self.stopped: str | None = None
        self._started = 0.0
        self._events = 0  # work done so far, against config.max_events
        self._stalled_since: float | None = None  # when jobs last began to wait with no GPU held
        with one_blas_thread():  # the profiles' first interpolations
            self._check_finishable()
        check_work(self.cluster, self.config, len(self._names))
        self.nodes = NodeStates(
            self.env,
            self.cluster,
            self.config.failures,
            self.config.autoscale,
            self._on_failure,
            self._on_reclaim,
        )
        self._check_reachable()
        if self.nodes.scaler is not None and self.nodes.scaler.probes and not policy.elastic:
            raise InputError(
                "--autoscaler",
                f"search re-runs the policy's own allocation at candidate sizes; {policy.name} "
                "keeps the GPU counts jobs ask for (use an elastic policy, or utility/queue)",
            )
        self._crash_streams: dict[str, Iterator[float]] = {}  # of the jobs made so far
        self._crashes = any(self._crash_hours(job) is not None for job in self._request_jobs)
        self._checkpointing = self._checkpoint_setup()
        self._speeds: dict[tuple[str, str], Mapping[str, float]] = {}
        self._truth_views: dict[ApplicationProfile, FrozenProfile] = {}
        # Plans by everything they are computed from (jobs of one application on equal
        # allocations with equal fits plan alike), oldest first, at most PLAN_MEMO_SIZE.
        self._plans: dict[tuple, tuple[NDArray, ...]] = {}
        self._several_shapes = len({g.gpus_per_node for g in self.cluster.groups}) > 1
        # Event-driven rounds: the last decision stands until this time while no job arrives,
        # finishes or loses its GPUs and the offline nodes stay these.
        self._quiet_until = -np.inf
        self._decided_offline: set[int] = set()
        self._hints: Mapping[str, Mapping[str, Any]] = {}  # the last decision's agent hints
        self.policy.bind(self)  # last, once nothing above can fail: state of this run only
        self.agent.bind(self)

    def _seed_objectives(
        self, truths: Mapping[str, ApplicationProfile], schedules: Mapping[str, LRSchedule]
    ) -> dict[str, SeedObjective] | None:
        """Under ``lr-aware`` progress, or when seed 004's objective is asked for: each
        application's objectives, every job's step log and, under ``lr-aware``, every job's
        example budget as its work (None otherwise: nothing is recorded)."""
        config = self.config
        lr_aware = config.progress == "lr-aware"
        if not (lr_aware or config.seed_objective):
            return None
        if has_failures(config, self.cluster, self.profiles.values()):
            option = "--progress lr-aware" if lr_aware else "--seed-objective"
            raise InputError(
                option, "is not supported with failures (lost work would have to undo loss too)"
            )
        objectives = {
            app: SeedObjective(truth, schedules[app], config.lr_descent, lr_aware)
            for app, truth in truths.items()
        }
        budgets = self._budgets = {}
        for job in self._request_jobs:
            app, batch = job.spec.application, static_batch(job)
            try:
                objectives[app].static(batch)
            except ValueError as problem:
                raise InputError("--lr-descent", f"job {job.name!r}: {problem}") from None
            if lr_aware and (app, batch) not in budgets:
                budgets[app, batch] = example_budget(job.profile, batch)
                budgets[app, batch].flags.writeable = False
        return objectives

    # ------------------------------------------------------------------------------- jobs
    @property
    def jobs(self) -> list[Job]:
        """Every job of the workload, in file order (made now where not yet arrived)."""
        return [self._job(index) for index in range(len(self._names))]

    def _made_in_order(self) -> list[Job]:
        """The jobs made so far, in file order."""
        return [self._made[index] for index in sorted(self._made)]

    def _job(self, index: int) -> Job:
        """The job of workload row ``index``, made on first use with its run state."""
        job = self._made.get(index)
        if job is None:
            job = self._made[index] = self._fresh_job(index)
            if self._crashes:
                hours = self._crash_hours(job)
                if hours is not None:
                    stream = self._crash_streams[job.name] = self._failure_model().crash_seconds(
                        index, hours
                    )
                    job.crash_left = next(stream)
            if self.objectives is not None:
                job.step_log = StepLog()
                if self.config.progress == "lr-aware":
                    job.work = self._budgets[job.spec.application, static_batch(job)]
            self.completions[job.name] = self.env.event()
        return job

    def _spec(self, index: int) -> JobSpec:
        app, gpus, batch, category = self._request(index)
        return JobSpec(self._names[index], app, float(self._arrivals[index]), gpus, batch, category)

    def _fresh_job(self, index: int) -> Job:
        """Workload row ``index`` as a job that has not arrived: its truth, its beliefs (one
        per GPU type on typed runs) and nothing run."""
        spec = self._spec(index)
        truth = self._truths[spec.application]
        belief = JobBelief(
            self._agent_limits(spec, None, truth), self._oracle.get(spec.application), self.fit_memo
        )
        job = Job(spec, truth, belief, self.cluster.nodes)
        if self.typed:
            job.typed = self._typed[spec.application]
            job.type_beliefs = {
                t: JobBelief(
                    self._agent_limits(spec, t, job.typed.for_type(t)), None, self.fit_memo
                )
                for t in self.cluster.type_order
            }
        return job

    def _request(self, index: int) -> tuple[str, int, int, str]:
        """Row ``index``'s request (see :func:`_request_of`)."""
        category = self._categories[index] if self._categories is not None else "adaptive"
        return self._apps[index], int(self._replicas[index]), int(self._batches[index]), category

    @functools.cached_property
    def _request_jobs(self) -> list[Job]:
        """The first job of each distinct request (see :meth:`_request`), in file order and not
        arrived: what every per-request check reads (a request's first job is the one named).
        Made once; the checks only read them."""
        requests = pd.DataFrame(
            {
                "app": self._apps,
                "gpus": self._replicas,
                "batch": self._batches,
                "category": self._categories or "adaptive",
            }
        )
        return [self._fresh_job(index) for index in requests.drop_duplicates().index]

    def has_started(self) -> bool:
        """Whether :meth:`run` has been called (the policy and agent may then be rebound)."""
        return self.env.now > 0 or self.env.peek() < float("inf")

    # ---------------------------------------------------------------------------------- run
    def run(self) -> SimResult:
        """Replay the workload to the end (or the horizon); a simulation runs once."""
        if self.env.now > 0 or self.round_records:
            raise RuntimeError("a Simulation runs once; build a new one to run again")
        started = self._started = wallclock.perf_counter()
        self.nodes.start()
        arrivals = ((float(self._arrivals[i]), self._names[i]) for i in self._order)
        with one_blas_thread():
            run_clock(self.env, arrivals, self._on_arrival, self._round)
        jobs = jobs_table(
            self._made,
            self._fresh_job(0),
            (self._names, self._apps, self._arrivals.tolist()),
            self.typed,
            self.objectives,
            self._counters(),
        )
        return SimResult(
            jobs=jobs,
            fairness_source=self._fairness(jobs),
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

    def _fairness(self, jobs: pd.DataFrame) -> Callable[[], pd.DataFrame] | None:
        """What computes each job's finish-time fairness (:mod:`goodput_sim.sim.fairness`), holding
        only its inputs; None under the lr-aware progress model, whose work is not the noise
        model's epochs."""
        if self.config.progress == "lr-aware" or not len(jobs):
            return None
        home, profiles, cluster = self.cluster.type_order[0], self.profiles, self.cluster

        def truth(app: str, gpu_type: str | None) -> ApplicationProfile:
            profile = profiles[app]
            return as_typed(profile, home).for_type(gpu_type) if gpu_type else _truth(profile, home)

        adapts = self.agent.name != "fixed"

        def rule(job: Job) -> tuple[int | None, int, int, float]:
            lim = job.belief.limits
            own = lim.fixed_batch_size or job.spec.requested_batch
            batch = None if adapts and lim.fixed_batch_size is None else own
            cap = lim.cap(max(lim.max_batch_size // lim.min_local_bsz, 1))
            return batch, lim.min_replicas or 1, cap, self._restart_delay(job)

        # A job never made is as it was made: its rule is its request's (one per request).
        by_request = {_request_of(job.spec): rule(job) for job in self._request_jobs}
        rules = [
            rule(self._made[index]) if index in self._made else by_request[self._request(index)]
            for index in range(len(self._names))
        ]
        return functools.partial(
            fairness_table, jobs, cluster.total_gpus, IsolatedTimes(cluster, truth), rules
        )

    def _on_arrival(self, event: simpy.Event) -> None:
        """A job arrives: it becomes schedulable at the next round (at or after this time).
        Arrival events fire in queue order (time, then creation order)."""
        self.active.append(self._job(int(self._order[self._arrived])))
        self._arrived += 1
        self._quiet_until = -np.inf

    def _round(self, now: float) -> float | None:
        """One scheduling round: bring every job up to date, retire finished ones and, unless
        the run is over, schedule; the wait until the next round, or None to stop.

        A job first becomes schedulable at the first round at or after its arrival (as in the
        reference); with no active job the clock jumps to the first round after the next
        arrival (or, while an idle cluster can still shrink, to the next interval)."""
        interval = self.config.interval
        horizon = self.config.horizon
        self._advance(self.active, self.last_advance, now)
        self.last_advance = now
        self.nodes.account(now)
        self._complete_finished()
        waiting = len(self._names) - self._arrived
        if (not self.active and not waiting) or (horizon is not None and now >= horizon):
            return None
        self.stopped = self._guard(now)
        if self.stopped:
            return None
        if self.active:
            self._schedule(now)
            self._events += len(self.active)
            held = any(job.replicas for job in self.active)
            if held or self._stalled_since is None:
                self._stalled_since = None if held else now
            wait = interval
        else:
            gap = float(self._arrivals[self._order[self._arrived]]) - now
            wait = max(np.ceil(gap / interval), 1) * interval
            if self.nodes.scaler is not None and self._scale_idle():
                wait = interval  # the next idle round may shrink it further
        if horizon is not None:
            wait = min(wait, max(horizon - now, 0.0))
        return wait

    # -------------------------------------------------------------------- nodes that change
    def live_cluster(self) -> ClusterSpec:
        """The cluster as this round's policy sees it: failed, unprovisioned and booting nodes
        offer no GPUs."""
        return self.nodes.live_cluster()

    # ---------------------------------------------------------------- checkpoints, crashes
    def _failure_model(self) -> FailureModel:
        failures = self.config.failures
        return failures if failures is not None else FailureModel()

    def _crash_hours(self, job: Job) -> float | None:
        """The mean running hours between a job's crashes: the run's ``--job-crash-hours``,
        else its application's ``crash_hours`` (None: it never crashes)."""
        return self._failure_model().job_crash_hours or job.profile.crash_hours

    def _checkpoint_setup(self) -> bool:
        """Whether jobs take periodic checkpoints: when work can be lost (node failures, job
        crashes, reallocations that save nothing) or saves cost time; ``--checkpoint-interval
        auto`` checked against both."""
        nodes_fail = self.nodes.fails
        saves = [self._save_seconds(job) > 0 for job in self._request_jobs]
        costly = self._costly_saves = any(saves)
        if self.config.checkpoint_interval == "auto":
            if not costly or not all(saves):
                raise InputError(
                    "--checkpoint-interval", "auto needs a save time (--checkpoint-seconds)"
                )
            every_node = range(self.cluster.nodes)
            if not (self.nodes.failure_rate(every_node) > 0 or self._crashes):
                raise InputError(
                    "--checkpoint-interval", "auto needs an MTBF (--mtbf or job crashes)"
                )
        unsaved = self.config.reallocation_checkpoint == "none"
        return nodes_fail or self._crashes or costly or unsaved

    def _counters(self) -> tuple[str, ...]:
        """Job counters worth a column in this run: crashes where jobs crash, saves where
        checkpoints cost time, preemptions where the cluster has spot nodes."""
        out = ("crashes",) if self._crashes else ()
        spot = any(g.preemptible for g in self.cluster.groups)
        return out + (("saves",) if self._costly_saves else ()) + (("preemptions",) if spot else ())

    def _save_seconds(self, job: Job) -> float:
        """Seconds a checkpoint of the job takes to save: the run's, else its application's."""
        own = self.config.checkpoint_seconds
        return own if own is not None else (job.profile.checkpoint_seconds or 0.0)

    def effective_mtbf(self, job: Job) -> float:
        """Seconds between the events that undo a job's work: failures and reclaims of the
        nodes it runs on (each node's rate, its domains' too; a job not placed counts as on
        the first ``max(nodes_used, 1)`` nodes) and its own crashes, as rates added (inf:
        none)."""
        failures = self.config.failures
        nodes = np.flatnonzero(job.allocation)
        if not nodes.size:
            nodes = np.arange(min(max(job.nodes_used, 1), self.cluster.nodes))
        rate = self.nodes.failure_rate(nodes.tolist())
        if job.name in self._crash_streams:
            hours = (failures.job_crash_hours if failures else None) or job.profile.crash_hours
            rate += 1.0 / (hours * 3600.0)
        return 1.0 / rate if rate > 0 else float("inf")

    def _settle_save(self, job: Job, now: float) -> None:
        """A checkpoint being saved counts once its save has finished by ``now``."""
        if job.saving is not None and job.saving[2] <= now:
            job.checkpoint, job.saving = job.saving, None

    def _lose_work(self, job: Job, now: float) -> None:
        """Back to the last checkpoint whose save had finished by ``now``."""
        self._settle_save(job, now)
        job.saving = None
        lose_work(job, now)

    def _crash_clock(self, job: Job, now: float) -> None:
        """Keep the job's crash clock in step with its allocation: running time counts down;
        a running job has its next crash on the clock (a stale one is ignored)."""
        if job.name not in self._crash_streams:
            return
        if job.crash_from is not None:
            job.crash_left = max(job.crash_left - (now - job.crash_from), 0.0)
        job.crash_token += 1
        job.crash_from = now if job.replicas else None
        if job.replicas:
            event = after(self.env, job.crash_left, Cause.CRASH, job.name)
            event.callbacks.append(
                lambda _e, job=job, token=job.crash_token: self._crash(job, token)
            )

    def _crash(self, job: Job, token: int) -> None:
        """The job crashes now: it falls back to its last checkpoint and waits for the next
        round; its next crash is drawn."""
        if token != job.crash_token or job.finished:
            return
        now = self.env.now
        self._advance(self.active, self.last_advance, now)
        self.last_advance = now
        if job.finished:
            return
        self._lose_work(job, now)
        self._release(job)
        job.crashes += 1
        job.restore_pending = True
        job.crash_left = next(self._crash_streams[job.name])

    def _on_failure(self, failure: Failure) -> None:
        """Node ``failure.node`` goes down now: every job with GPUs on it falls back to its last
        checkpoint and waits for the next round."""
        now = self.env.now
        self._events += 2  # the failure and its repair
        self._advance(self.active, self.last_advance, now)
        self.last_advance = now
        for job in self.active:
            if not job.finished and job.allocation[failure.node] > 0:
                self._lose_work(job, now)
                self._release(job)
                job.failures += 1
                job.restore_pending = True

    def _on_reclaim(self, node: int, notice: float) -> None:
        """Spot node ``node`` is reclaimed in ``notice`` seconds: each job on it stops now. One
        whose save fits in the notice saves and loses nothing (the save is paid at its next
        start, beside the restore); any other falls back to its last checkpoint."""
        now = self.env.now
        self._advance(self.active, self.last_advance, now)
        self.last_advance = now
        for job in self.active:
            if not job.finished and job.allocation[node] > 0:
                if notice > 0 and self._save_seconds(job) <= notice:
                    self._settle_save(job, now)
                    job.checkpoint, job.saving = (job.progress, job.epoch, now), None
                    job.save_due = True
                else:
                    self._lose_work(job, now)
                self._release(job)
                job.preemptions += 1
                job.restore_pending = True

    def _release(self, job: Job) -> None:
        """Take every GPU from a job (a failure or a removed node); it restarts when it is next
        allocated."""
        self._quiet_until = -np.inf
        job.assign(np.zeros_like(job.allocation))
        job.plan = None
        job.local_bsz = job.accum_steps = 0
        job.restart_remaining = 0.0
        self._crash_clock(job, self.env.now)

    def _autoscale(self, views: tuple[JobView, ...]) -> bool:
        """Resize the cluster for the next interval; True if jobs lost GPUs to removed nodes.
        Nodes where a fixed-size job runs stay (it keeps the GPUs it asked for)."""
        allocations = [job.allocation for job in self.active]
        held = set() if self.policy.elastic else held_nodes(allocations)
        removed = self.nodes.autoscale(views, allocations, held, self._prober(views))
        preempted = False
        for node in removed:
            for job in self.active:
                if job.allocation[node] > 0:
                    self._release(job)
                    preempted = True
        return preempted

    def _prober(self, views: tuple[JobView, ...]) -> Callable[[Sequence[int]], list[int]]:
        """What a probing autoscaler asks: the GPUs the policy gives each job of ``views`` if
        only ``nodes`` were up. The policy's attributes are restored after each call, so a
        probe never changes what it decides at the round itself (caches keyed by their inputs
        may keep what the probe computed)."""

        def probe(nodes: Sequence[int]) -> list[int]:
            offline = set(range(self.cluster.nodes)) - set(nodes)
            snapshot = Snapshot(
                self.env.now, self.cluster.with_offline(offline), views, self.config.restart_delay
            )
            state = dict(vars(self.policy))
            try:
                decision = self.policy.allocate(snapshot)
            finally:
                vars(self.policy).clear()
                vars(self.policy).update(state)
            return [int(np.sum(decision.allocations.get(v.name, 0))) for v in views]

        return probe

    def _scale_idle(self) -> bool:
        """A round with no active job: the rule may shrink the cluster; True while it is above
        ``--min-nodes``, so that idle rounds go on."""
        self._autoscale(())
        return self.nodes.can_shrink()

    def _cluster_summary(self) -> dict:
        """The nodes' summary, with GPU-hours by type on typed runs."""
        out = self.nodes.summary(self.env.now)
        if self.typed:
            out.update(gpu_hours_by_type(self._made_in_order(), self.cluster.type_order))
        return out

    def _guard(self, now: float) -> str | None:
        """Why a runaway run must stop now, if it must: too much wall time (``max_wall``) or
        simulated time beyond the bound every finishable workload stays within."""
        limit = self.config.max_wall
        if limit is not None and wallclock.perf_counter() - self._started > limit:
            return f"wall time exceeded --max-wall {limit:g} s at simulated {now:.0f} s"
        if now > MAX_SIMULATED_SECONDS:
            return f"simulated time passed {MAX_SIMULATED_SECONDS:.0f} s with jobs unfinished"
        if self._events > self.config.max_events:
            return (
                f"work budget exceeded: {self._events} events (job-rounds, node failures and "
                f"repairs) by simulated {now:.0f} s; raise --max-events to go on"
            )
        since, hours = self._stalled_since, self.config.stall_hours
        if since is not None and now - since >= hours * 3600:
            return (
                f"stalled: {len(self.active)} jobs waited {hours:g} simulated hours from "
                f"{since:.0f} s with none holding a GPU (the policy or the cluster cannot run "
                "them; raise --stall-hours to wait longer)"
            )
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
                job.release()  # nothing reads a finished job's plan or GPUs again
            else:
                still.append(job)
        if len(still) < len(self.active):
            self._quiet_until = -np.inf
            if self.on_finish is not None:
                self.on_finish(len(self.active) - len(still))
        self.active = still

    # ----------------------------------------------------------------------------- schedule
    def _schedule(self, now: float) -> None:
        active = self.active
        scaler_reads = self.nodes.scaler is not None and self.nodes.scaler.reads_beliefs
        refresh = self.policy.reads_beliefs or self.agent.reads_beliefs or scaler_reads
        typed_refresh = self.typed and self.policy.type_aware
        for job in active:
            self._update_grad_stats(job)
            if refresh:
                job.belief.refresh()
            if typed_refresh:
                for belief in job.type_beliefs.values():
                    belief.refresh()
        offline = self.nodes.offline()
        if now < self._quiet_until and offline == self._decided_offline:
            self.policy_seconds.append(0.0)  # nothing the policy reads changed: same answer
        elif not self._decide(now, active, offline):
            self._record_round(now, active)  # every node offline: nobody runs this interval
            return
        if self.config.interference > 0:  # slowdowns first, so each plan is built once
            slowed = interference_flags(np.array([j.allocation for j in active]))
            for job, flag in zip(active, slowed, strict=True):
                job.slowdown = self.config.interference if flag else 0.0
        for job in active:
            if job.replicas:
                self._ensure_plan(job, self._hints.get(job.name))
        self._record_round(now, active)

    def _decide(self, now: float, active: list[Job], offline: set[int]) -> bool:
        """Ask the policy for this round's allocation and apply it; False if no GPU is up.
        Remembers until when the answer stands while no event happens
        (:meth:`~goodput_sim.policies.base.Policy.quiet_until`) and with which ``offline``
        nodes."""
        views = tuple(self._view(job, now) for job in active)
        if self.nodes.scaler is not None and self._autoscale(views):
            views = tuple(self._view(job, now) for job in active)  # some were preempted
        live = self.live_cluster()
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
        for job in active:
            if not np.array_equal(rows[job.name], job.allocation):
                self._reallocate(job, rows[job.name], now, orders.get(job.name))
        self._hints = decision.agent_hints
        if self.nodes.scaler is None:  # an autoscaler re-reads the jobs every round
            self._quiet_until = self.policy.quiet_until(snapshot, rows)
            self._decided_offline = offline  # without an autoscaler, as at the round's start
        return True

    def _reallocate(
        self, job: Job, row: NDArray[np.int64], now: float, node_order: tuple[int, ...] | None
    ) -> None:
        had = job.replicas > 0 or job.start_time is not None
        if job.replicas:  # a running job stops here: it saves, or not (reallocation_checkpoint)
            mode = self.config.reallocation_checkpoint
            if mode == "none":
                self._lose_work(job, now)
            job.save_due = mode == "charged"
        job.assign(row, node_order)
        job.plan = None
        self._crash_clock(job, now)
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
        if job.save_due:  # the save of its last reallocation, charged on top of the restart
            job.restart_remaining += self._save_seconds(job)
            job.saves += 1
            job.save_due = False
        if job.restore_pending:
            job.restores += 1
            job.restore_pending = False
        # Restarts save the job's state (a checkpoint) and training resumes after the delay.
        resumed = now + job.restart_remaining
        job.checkpoint, job.saving = (job.progress, job.epoch, resumed), None
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
        limits = self._agent_limits(job.spec, job.gpu_type, job.profile)
        return view if view.limits is limits else replace(view, limits=limits)

    def _agent_limits(
        self, spec: JobSpec, gpu_type: str | None, profile: ApplicationProfile
    ) -> Limits:
        """The limits of the job's application on ``gpu_type`` (``profile``, its truth there;
        None: before the job is placed) with the application's recipe and the job's category:
        one object per (application, type, category rule) and run, so a belief bound to them
        is recognised by identity."""
        app = spec.application
        rule = () if spec.category == "adaptive" else _category_rule(spec)
        key = (app, gpu_type, *rule)
        if key not in self._limits:
            limits = replace(profile.limits, **self._recipes[app])
            self._limits[key] = for_category(limits, *rule) if rule else limits
        return self._limits[key]

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
            limits=for_category(job.profile.limits, *_category_rule(job.spec)),
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
            type_speeds=self._type_speeds(job, "measurement") if self.policy.type_aware else None,
            type_peak_speeds=self._type_speeds(job, "peak") if self.policy.type_aware else None,
            restart_delay=self._restart_delay(job),
            restarting=job.restart_remaining > 0,
        )

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
        batch = job.total_batch or profile.limits.init_batch_size
        agent_key = self.agent.plan_key(
            belief, job.spec.requested_batch, job.nodes_used, job.replicas
        )
        memo = None
        if agent_key is not None:  # everything the plan is computed from
            memo = (agent_key, _hint_key(hint), profile, batch, job.epoch, job.layout)
            memo += (job.slowdown, job.work is None)
        arrays = self._plans.get(memo) if memo is not None else None
        if arrays is None:
            arrays = self._plan_arrays(job, belief, hint, batch)
            if memo is not None:
                self._plans[memo] = arrays
                if len(self._plans) > PLAN_MEMO_SIZE:
                    del self._plans[next(iter(self._plans))]  # the oldest
        local_bsz, accum = arrays[0], arrays[1]
        job.plan = Plan(key, job.epoch, *arrays)
        job.local_bsz, job.accum_steps = int(local_bsz[0]), int(accum[0])
        job.last_batch = job.total_batch

    def _plan_arrays(self, job: Job, belief, hint, batch: int) -> tuple[NDArray, ...]:
        """A plan's per-epoch arrays (read-only: equal inputs share them): per-GPU batch,
        accumulation, progress rate, step and sync seconds, examples per second."""
        profile = job.profile
        epochs = np.arange(job.epoch, profile.limits.max_epochs)
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
        step, sync, total, iteration, rate = epoch_rates(
            profile, job.layout, local_bsz, accum, job.replicas, epochs, job.slowdown
        )
        if job.work is not None:  # lr-aware: the work is examples
            rate = total / iteration
        arrays = (local_bsz, accum, rate, step, sync, total / iteration)
        for array in arrays:
            array.flags.writeable = False
        return arrays

    def _advance(self, jobs: list[Job], start: float, end: float) -> None:
        """Move every running job in ``jobs`` from ``start`` to ``end`` (noting, where nodes
        can fail, the state each job last checkpointed by ``end``)."""
        if end > start:
            for job in jobs:
                if job.replicas and not job.finished:
                    if self._checkpointing and job.next_checkpoint <= end:
                        if self._save_seconds(job) > 0:
                            self._advance_saving(job, start, end)
                            continue
                        self._take_checkpoint(job, start, end)
                    advance_job(job, start, end)

    def _advance_saving(self, job: Job, start: float, end: float) -> None:
        """Advance a job whose checkpoints cost time: at each checkpoint in (start, end] it
        stops training for the save (counted with its restart delays), and the saved state
        counts once the save has finished."""
        delay, t = self._save_seconds(job), start
        while not job.finished and job.next_checkpoint <= end:
            when = job.next_checkpoint
            advance_job(job, t, when)
            t = when
            if job.finished:
                return
            self._settle_save(job, when)
            job.saving = (job.progress, job.epoch, when + delay)
            job.restart_remaining += delay
            job.saves += 1
            job.next_checkpoint = when + delay + self._checkpoint_interval(job)
        if not job.finished and end > t:
            advance_job(job, t, end)

    def _take_checkpoint(self, job: Job, start: float, end: float) -> None:
        """Record the job's state at its last periodic checkpoint in (start, end], computed
        from its plan aside, so that the advance itself is the same with or without it."""
        every = self._checkpoint_interval(job)
        count = np.floor((end - job.next_checkpoint) / every)
        when = job.next_checkpoint + count * every
        progress, epoch = state_at(job, start, when)
        job.checkpoint = (progress, epoch, when)
        job.next_checkpoint = when + every

    def _checkpoint_interval(self, job: Job) -> float:
        """Seconds of training between checkpoints: the run's, ``auto`` (Young/Daly:
        ``sqrt(2 x save seconds x effective MTBF)``), the profile's, else 30 minutes."""
        if self.config.checkpoint_interval == "auto":
            return young_daly(self._save_seconds(job), self.effective_mtbf(job))
        own = getattr(job.profile, "checkpoint_interval", None)
        return self.config.checkpoint_interval or own or DEFAULT_CHECKPOINT_SECONDS

    # ------------------------------------------------------------------------------ records
    def _record_round(self, now: float, active: list[Job]) -> None:
        nodes = self.nodes
        offline = nodes.offline()
        row = round_row(
            now, active, self.cluster.nodes - len(offline), len(nodes.failed), len(nodes.starting)
        )
        if self._several_shapes:  # else gpus up = nodes_up x GPUs per node
            row["gpus_up"] = self.cluster.with_offline(offline).total_gpus
        self.round_records.append(row)
        if self.observers:
            record = round_record(now, active, offline)
            for observe in self.observers:
                observe(record)

    def _check_reachable(self) -> None:
        """Refuse, under a policy that keeps requested GPU counts, a job asking for more GPUs
        than an autoscaled pool with per-group bounds ever provisions at once (nodes start
        cheapest first, so ``--max-nodes`` of them may hold fewer GPUs than the pool's
        largest): it would wait for ever."""
        if self.config.autoscale is None or not self.cluster.group_bounds or self.policy.elastic:
            return
        most = self.nodes.reachable_gpus()
        for index in np.flatnonzero(self._replicas > most)[:1]:
            raise InputError(
                f"job {self._names[index]!r}",
                f"asks for {self._replicas[index]} GPUs; the autoscaled groups "
                f"provision at most {most} at once within --max-nodes "
                f"{self.config.autoscale.max_nodes} (nodes start cheapest first)",
            )

    def _check_finishable(self) -> None:
        """Refuse a job that could not finish within ``MAX_IDEAL_SECONDS`` even alone on its
        requested GPUs at its requested batch, or that asks for more GPUs than one GPU type
        has: its profile (or request) would make the run endless. One estimate per distinct
        request, on its first job."""
        most = self.cluster.max_job_gpus
        for job in self._request_jobs:
            spec, profile = job.spec, job.profile
            if self.cluster.mixed and spec.requested_replicas > most:
                raise InputError(
                    f"job {job.name!r}",
                    f"asks for {spec.requested_replicas} GPUs; a job never spans two GPU types "
                    f"and the largest type of this cluster has {most}",
                )
            lim = profile.limits
            replicas = spec.requested_replicas
            b, s = fixed_batch_config(spec.requested_batch, replicas, lim)
            layout = self.cluster.packed_layout(replicas)
            epochs = np.arange(lim.max_epochs)
            *_, rate = epoch_rates(profile, layout, b, s, replicas, epochs)
            with np.errstate(divide="ignore", invalid="ignore"):
                seconds = float(np.sum(np.diff(profile.progress_thresholds) / rate))
            if not (np.isfinite(seconds) and seconds <= MAX_IDEAL_SECONDS):
                raise InputError(
                    f"job {job.name!r}",
                    f"would need {seconds / 86400:.3g} days alone on {replicas} GPUs at batch "
                    f"{spec.requested_batch} with the {spec.application!r} profile; at most "
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


def _truth(profile: ApplicationProfile, gpu_type: str) -> ApplicationProfile:
    """A job's ground truth before it runs: its profile on the cluster's first GPU type."""
    return profile.for_type(gpu_type) if isinstance(profile, TypedProfile) else profile


NO_FAILURE_INTERVAL = 86400.0
"""Seconds between checkpoints that ``auto`` takes when nothing fails: a day."""


def young_daly(save_seconds: float, mtbf_seconds: float) -> float:
    """The checkpoint interval that minimises expected lost time to first order (Young 1974,
    Daly 2006): ``sqrt(2 x save x MTBF)``; :data:`NO_FAILURE_INTERVAL` when nothing fails."""
    if not np.isfinite(mtbf_seconds):
        return NO_FAILURE_INTERVAL
    return float(np.sqrt(2.0 * save_seconds * mtbf_seconds))


def has_failures(
    config: SimConfig | None, cluster: ClusterSpec, profiles: Iterable[ApplicationProfile] = ()
) -> bool:
    """Whether anything fails in a run of ``config`` on ``cluster``: nodes fail or are
    reclaimed, or jobs crash (by the run's rate, or any of ``profiles``' own)."""
    failures = config.failures if config is not None else None
    crashes = any(getattr(profile, "crash_hours", None) for profile in profiles)
    return (failures is not None and failures.fails) or crashes or cluster.declares_failures


def _noise_prior(profile: ApplicationProfile) -> tuple[float, ...]:
    """tr(Sigma) = M0 * grad_var in every epoch of a run at batch M0 (Limits.noise_prior)."""
    lim = profile.limits
    _, var = profile.grad_stats(lim.init_batch_size, np.arange(lim.max_epochs))
    return tuple(float(v) for v in lim.init_batch_size * np.asarray(var, dtype=np.float64))


def pool_cluster(cluster: ClusterSpec, scale: AutoscaleConfig | None) -> ClusterSpec:
    """The machines a run may use: the cluster, or with autoscaling ``max_nodes`` nodes taken
    from the cluster's node groups in order, repeated as needed (:func:`pool_groups`)."""
    if scale is None:
        return cluster
    return replace(cluster, groups=pool_groups(cluster.groups, scale.max_nodes))


def _hint_key(hint: Mapping[str, Any] | None) -> Hashable:
    """A policy's per-job agent hint as part of a plan key."""
    return None if not hint else tuple(sorted(hint.items()))


def _category_rule(spec: JobSpec) -> tuple[str, int, int]:
    """(category, requested GPUs, requested batch): what a job's category fixes."""
    return spec.category, spec.requested_replicas, spec.requested_batch


def _request_of(spec: JobSpec) -> tuple[str, int, int, str]:
    """A job's request: (application, GPUs, batch, category), all its limits, checks and
    fairness rule read besides its name and arrival."""
    return spec.application, spec.requested_replicas, spec.requested_batch, spec.category
