"""Guards that stop a runaway run in bounded time with one line saying why: too much wall time
(``--max-wall``), simulated time beyond every finishable workload, the work budget spent
(``--max-events``), or no net work for ``--stall-hours`` simulated hours: jobs waiting with
none holding a GPU, or jobs that hold GPUs but lose their work (to failures, crashes or moves
that save nothing) as fast as they do it, so that no job finishes and none gets further than
it ever was."""

from __future__ import annotations

import time as wallclock
from collections.abc import Sequence

from goodput_sim.sim.jobs import Job
from goodput_sim.spec import SimConfig

MAX_SIMULATED_SECONDS = 20 * 365 * 86400.0  # beyond every finishable workload: a runaway


class Guards:
    """One run's budgets: the wall clock from its start, the events it has done, and since
    when its jobs have waited with none holding a GPU."""

    def __init__(self, config: SimConfig):
        self.config = config
        self.events = 0  # work done so far, against config.max_events
        self.started = wallclock.perf_counter()
        self._stalled_since: float | None = None  # when jobs last began to wait, no GPU held
        self._flat_since = 0.0  # when a job last got further than ever, or finished
        self._furthest: dict[Job, float] = {}  # each active job's furthest progress

    def start(self) -> None:
        self.started = wallclock.perf_counter()

    def finished(self, now: float) -> None:
        """A job finished: net work."""
        self._flat_since = now

    def idle(self, now: float) -> None:
        """A job arrives when none is active: the time without one owed no work."""
        self._flat_since = now

    def scheduled(self, now: float, active: Sequence[Job]) -> None:
        """A round scheduled ``active``: count its job-rounds, note whether any job holds GPUs
        and whether any got further than it ever was."""
        self.events += len(active)
        held = any(job.replicas for job in active)
        if held or self._stalled_since is None:
            self._stalled_since = None if held else now
        furthest = {}
        for job in active:
            before = self._furthest.get(job, -1.0)
            if job.progress > before:
                self._flat_since = now
            furthest[job] = max(before, job.progress)
        self._furthest = furthest

    def why_stop(self, now: float, active: Sequence[Job]) -> str | None:
        """Why the run must stop now, if it must."""
        limit = self.config.max_wall
        if limit is not None and wallclock.perf_counter() - self.started > limit:
            return f"wall time exceeded --max-wall {limit:g} s at simulated {now:.0f} s"
        if now > MAX_SIMULATED_SECONDS:
            return f"simulated time passed {MAX_SIMULATED_SECONDS:.0f} s with jobs unfinished"
        if self.events > self.config.max_events:
            return (
                f"work budget exceeded: {self.events} events (job-rounds, node failures and "
                f"repairs) by simulated {now:.0f} s; raise --max-events to go on"
            )
        since, hours = self._stalled_since, self.config.stall_hours
        if since is not None and now - since >= hours * 3600:
            return (
                f"stalled: {len(active)} jobs waited {hours:g} simulated hours from "
                f"{since:.0f} s with none holding a GPU (the policy or the cluster cannot run "
                "them; raise --stall-hours to wait longer)"
            )
        flat = self._flat_since
        if since is None and now - flat >= hours * 3600:
            return (
                f"stalled: no net work for {hours:g} simulated hours from {flat:.0f} s: "
                f"{len(active)} jobs hold GPUs but lose their work as fast as they do it "
                "(to failures, crashes or moves that save nothing); raise --stall-hours to "
                "wait longer"
            )
        return None
