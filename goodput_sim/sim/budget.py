"""The work a run is sure to need, checked before it starts against its declared budget, so an
input inside every declared range is refused in one line instead of running for ever.

Failures are the one source of events between rounds: a node that fails every few
milliseconds makes millions of events per round without a round ever ending. Their expected
count per round is known before the run (nodes x interval / (mean time between failures +
repair)); so is a lower bound on job-rounds, one per job. The engine counts the rest as it goes
(``max_events``) and stops a run that exceeds it.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from goodput_sim.errors import InputError

if TYPE_CHECKING:
    from goodput_sim.inputs.cluster import ClusterSpec
    from goodput_sim.spec import SimConfig

MAX_FAILURES_PER_ROUND = 1000.0
"""Node failures, repairs and job crashes expected in one round, at most."""

MAX_GRID_RUNS = 100_000
"""Runs in one sweep, at most (a grid beyond it is a typo, not an experiment)."""

DEFAULT_MAX_RUNS = 1000
"""Runs one sweep may hold unless told otherwise (``--max-runs``, up to MAX_GRID_RUNS): a bigger
grid is usually a list written by a program by mistake, and hours of work."""


def check_work(cluster: ClusterSpec, config: SimConfig, jobs: int) -> None:
    """Refuse a run whose failure rates or job count surely exceed what one run may do."""
    per_round = config.interval / 3600.0
    rates = []  # (what, events per round)
    failures = config.failures
    if failures is not None and failures.mtbf_hours is not None:
        cycle = failures.mtbf_hours + failures.repair_hours
        rates.append(("--mtbf with --repair-hours", 2 * cluster.nodes * per_round / cycle))
    if failures is not None and failures.job_crash_hours is not None:
        rates.append(("--job-crash-hours", jobs * per_round / failures.job_crash_hours))
    for group in cluster.groups:
        for hours, what in (
            (group.mtbf_hours, "mtbf_hours"),
            (group.preemption_hours, "preemption_hours"),
        ):
            if hours is not None:
                rates.append((f"the cluster's {what}", 2 * group.nodes * per_round / hours))
    for domain in cluster.domains:
        if domain.mtbf_hours is not None:
            rates.append(("the cluster's domain mtbf_hours", 2 * per_round / domain.mtbf_hours))
    for what, rate in rates:
        if rate > MAX_FAILURES_PER_ROUND:
            raise InputError(
                what,
                f"gives about {rate:.3g} failure events per {config.interval:g} s round; at most "
                f"{MAX_FAILURES_PER_ROUND:.0f} are supported (use longer times between failures)",
            )
    if jobs > config.max_events:
        raise InputError(
            "--max-events",
            f"{jobs} jobs need at least {jobs} job-rounds, beyond the work budget of "
            f"{config.max_events}; raise --max-events",
        )
