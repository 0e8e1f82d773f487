"""Job crashes: a job crashes after exponential running times with mean ``job_crash_hours``
(the run's, else its application's ``crash_hours``), falls back to its last checkpoint and
waits for the next round. Its running clock counts down only while it holds GPUs. Each job's
draws come from its own stream, keyed by the run's seed and the job's name only, so a job
crashes alike whatever the workload's row order or the other jobs."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

from goodput_sim.inputs.failures import FailureModel
from goodput_sim.sim.clock import Cause
from goodput_sim.sim.dynamics.base import Dynamic, Interruption, LossCause, World
from goodput_sim.sim.jobs import Job


@dataclass
class _Clock:
    """One crashing job's clock: running seconds left until its next crash, since when it
    runs (None: holding no GPU), and the number of its pending crash event (a stale one is
    ignored)."""

    draws: Iterator[float]
    left: float
    since: float | None = None
    token: int = 0
    crashes: int = 0


class JobCrashes(Dynamic):
    """Crashes of running jobs, and their ``crashes`` column."""

    name = "job-crashes"
    settings = ("job_crash_hours", "crashes")
    loses_work = True

    def __init__(self, world: World):
        super().__init__(world)
        failures = world.config.failures
        self.model = failures if failures is not None else FailureModel()
        self.columns = ("crashes",)
        self._clocks: dict[Job, _Clock] = {}  # of the crashing jobs made so far

    @classmethod
    def build(cls, world: World) -> JobCrashes | None:
        if not world.config.crashes:
            return None
        crashing = cls(world)
        crashes = any(crashing.hours(job) is not None for job in world.book.request_jobs)
        return crashing if crashes else None

    def hours(self, job: Job) -> float | None:
        """The mean running hours between a job's crashes: the run's ``--job-crash-hours``,
        else its application's ``crash_hours`` (None: it never crashes)."""
        return self.model.job_crash_hours or job.profile.crash_hours

    def job_made(self, job: Job) -> None:
        hours = self.hours(job)
        if hours is not None:
            draws = self.model.crash_seconds(job.name, hours)
            self._clocks[job] = _Clock(draws, next(draws))

    def failure_rate(self, job: Job) -> float:
        if job not in self._clocks:
            return 0.0
        return 1.0 / (self.hours(job) * 3600.0)

    def assigned(self, job: Job, now: float) -> None:
        """Keep the job's crash clock in step with its allocation: running time counts down;
        a running job has its next crash on the clock (a stale one is ignored)."""
        clock = self._clocks.get(job)
        if clock is None:
            return
        if clock.since is not None:
            clock.left = max(clock.left - (now - clock.since), 0.0)
        clock.token += 1
        clock.since = now if job.replicas else None
        if job.replicas:
            token = clock.token
            self.world.schedule(clock.left, Cause.CRASH, lambda: self._crash(job, token), job.name)

    def _crash(self, job: Job, token: int) -> None:
        """The job crashes now: it falls back to its last checkpoint and waits for the next
        round; its next crash is drawn."""
        clock = self._clocks[job]
        if token != clock.token or job.finished:
            return
        world = self.world
        world.catch_up()
        if job.finished:
            return
        why = Interruption(LossCause.JOB_CRASHED, world.env.now, self.name)
        world.stop(job, why, lose_work=True, restore=True)
        clock.crashes += 1
        clock.left = next(clock.draws)

    def job_columns(self, job: Job) -> dict[str, int]:
        clock = self._clocks.get(job)
        return {"crashes": clock.crashes if clock is not None else 0}
