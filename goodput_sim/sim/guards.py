"""Guards that stop a runaway run in bounded time with one line saying why: too much wall time
(``--max-wall``), simulated time beyond every finishable workload, the work budget spent
(``--max-events``), or jobs waiting with none holding a GPU (``--stall-hours``)."""

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

    def start(self) -> None:
        self.started = wallclock.perf_counter()

    def scheduled(self, now: float, active: Sequence[Job]) -> None:
        """A round scheduled ``active``: count its job-rounds, and note whether any job holds
        GPUs."""
        self.events += len(active)
        held = any(job.replicas for job in active)
        if held or self._stalled_since is None:
            self._stalled_since = None if held else now

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
        return None
