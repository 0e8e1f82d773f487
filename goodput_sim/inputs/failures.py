"""Node failures and repairs: drawn per node from a seeded exponential (or Weibull) time between
failures, or read from a failure trace (``time,node,duration`` in seconds, one failure per
line; ``node`` may name a failure domain of the cluster instead of a node id; an optional
fourth column ``kind`` marks a spot node's ``reclaim`` instead of a ``failure``).

A cluster may add its own processes (``goodput_sim.inputs.cluster``): a node group's own MTBF and
repair time in place of the run's, failure domains whose every failure takes down all their
nodes at once, and preemptible groups whose nodes the provider reclaims. Each process draws from
its own seeded stream, so adding one never moves the draws of another.

A failure takes a node down for its repair time; every job with GPUs on it loses the progress
made since its last checkpoint and waits for the next round. Draws are per node, from one
``numpy`` seed sequence spawned per node, so a node's failures do not depend on the others'.
"""

from __future__ import annotations

import csv
import math
import zlib
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from goodput_sim.errors import InputError, regular_file
from goodput_sim.inputs.cluster import NAME, ClusterSpec, FailureDomain, NodeGroup
from goodput_sim.usertext import parse_float, parse_int, refuse_repeated_columns

REPAIRS = ("fixed", "exponential")
LIFETIMES = ("exponential", "weibull")
_MAX_SECONDS = 10 * 365 * 86400.0


@dataclass(frozen=True)
class Failure:
    """Node ``node`` (or every node of failure domain ``domain``, with ``node`` -1) goes down at
    ``time`` for ``duration`` seconds."""

    time: float
    node: int
    duration: float
    domain: str | None = None
    reclaim: bool = False  # a spot node taken back by its provider (away ``duration``)

    @property
    def unit(self) -> int | str:
        """What fails: the node id, or the domain's name."""
        return self.domain if self.domain is not None else self.node


@dataclass(frozen=True)
class FailureModel:
    """Where failures come from: ``mtbf_hours`` per node (exponential, seeded) with a repair
    time of ``repair_hours`` (fixed, or exponential with that mean), or a ``trace`` of them."""

    mtbf_hours: float | None = None
    repair_hours: float = 1.0
    repair: str = "fixed"
    trace: tuple[Failure, ...] = ()
    seed: int = 0
    # Node lifetimes between failures: exponential, or Weibull of this shape with mean
    # ``mtbf_hours`` (a shape below 1: a failure is likelier soon after a repair).
    lifetime: str = "exponential"
    weibull_shape: float = 0.7
    # Job-level crashes: mean hours a job runs between crashes (exponential), None: none
    # (an application's profile may set its own ``crash_hours``).
    job_crash_hours: float | None = None

    def __post_init__(self) -> None:
        if self.mtbf_hours is not None and not (0 < self.mtbf_hours <= _MAX_SECONDS / 3600):
            raise InputError("--mtbf", f"must be positive hours, got {self.mtbf_hours!r}")
        if not (0 < self.repair_hours <= _MAX_SECONDS / 3600):
            raise InputError("--repair-hours", f"must be positive, got {self.repair_hours!r}")
        if self.repair not in REPAIRS:
            raise InputError("--repair", f"expected one of {REPAIRS}, got {self.repair!r}")
        if self.lifetime not in LIFETIMES:
            raise InputError("--lifetime", f"expected one of {LIFETIMES}, got {self.lifetime!r}")
        if not (0.1 <= self.weibull_shape <= 10):
            raise InputError(
                "--weibull-shape", f"must lie in [0.1, 10], got {self.weibull_shape!r}"
            )
        crash = self.job_crash_hours
        if crash is not None and not (0 < crash <= _MAX_SECONDS / 3600):
            raise InputError("--job-crash-hours", f"must be positive hours, got {crash!r}")
        check_trace(self.trace, "failure trace")

    def check_nodes(
        self, nodes: int, domains: tuple[str, ...] = (), spot: frozenset[int] = frozenset()
    ) -> None:
        """Refuse a trace naming a node or failure domain the cluster does not have, or a
        reclaim of a node that is not in a preemptible group (``spot``)."""
        for failure in self.trace:
            if failure.reclaim and failure.node not in spot:
                raise InputError(
                    "failure trace",
                    f"reclaims node {failure.node}, which is not in a preemptible group",
                )
            if failure.domain is not None:
                if failure.domain not in domains:
                    known = ", ".join(domains) if domains else "none"
                    raise InputError(
                        "failure trace",
                        f"domain {failure.domain!r} is not a failure domain of the cluster "
                        f"(its domains: {known})",
                    )
            elif not 0 <= failure.node < nodes:
                raise InputError(
                    "failure trace",
                    f"node {failure.node} does not exist; the cluster has nodes 0-{nodes - 1}",
                )

    @property
    def active(self) -> bool:
        """Whether nodes fail (an MTBF or a trace)."""
        return self.mtbf_hours is not None or bool(self.trace)

    @property
    def fails(self) -> bool:
        """Whether anything fails: nodes, or jobs (a crash rate)."""
        return self.active or self.job_crash_hours is not None

    def node_failures(
        self,
        node: int,
        nodes: int,
        mtbf_hours: float | None = None,
        repair_hours: float | None = None,
    ) -> Iterator[Failure]:
        """The failures of one node in time order (endless for an MTBF, each drawn after the
        previous repair); ``mtbf_hours`` and ``repair_hours`` are its group's own, in place of
        the run's. A trace holds every failure: nothing is drawn beside it."""
        if self.trace:
            own = (f for f in self.trace if f.domain is None and f.node == node)
            yield from (f for f in own if not f.reclaim)
            return
        mtbf = mtbf_hours if mtbf_hours is not None else self.mtbf_hours
        if mtbf is None:
            return
        rng = np.random.default_rng(np.random.SeedSequence(self.seed).spawn(nodes)[node])
        repair = repair_hours if repair_hours is not None else self.repair_hours
        yield from self._drawn(rng, mtbf, repair, lambda at, length: Failure(at, node, length))

    def domain_failures(self, index: int, domain: FailureDomain) -> Iterator[Failure]:
        """The failures of failure domain number ``index`` (the trace's, or drawn from its own
        MTBF and repair time, with the run's lifetime and repair distributions)."""
        if self.trace:
            yield from (f for f in self.trace if f.domain == domain.name)
            return
        if domain.mtbf_hours is None:
            return
        rng = np.random.default_rng(np.random.SeedSequence([self.seed, 2, index]))
        yield from self._drawn(
            rng,
            domain.mtbf_hours,
            domain.repair_hours,
            lambda at, length: Failure(at, -1, length, domain.name),
        )

    def _drawn(self, rng, mtbf_hours: float, repair_hours: float, make) -> Iterator[Failure]:
        """Endless failures: a lifetime, then a repair, again and again."""
        now = 0.0
        mean = mtbf_hours * 3600.0
        while True:
            if self.lifetime == "weibull":
                k = self.weibull_shape
                now += mean / math.gamma(1.0 + 1.0 / k) * rng.weibull(k)
            else:
                now += rng.exponential(mean)
            repair = repair_hours * 3600.0
            if self.repair == "exponential":
                repair = max(rng.exponential(repair), 1.0)
            yield make(now, repair)
            now += repair

    def reclaims(self, node: int, group: NodeGroup) -> Iterator[tuple[float, float]]:
        """(time, seconds away) of each reclaim of a preemptible node: exponential times
        between reclaims with mean ``preemption_hours``, each away ``preempted_hours``, from
        the node's own stream (independent of its failures); or the trace's reclaims."""
        if self.trace:
            yield from ((f.time, f.duration) for f in self.trace if f.reclaim and f.node == node)
            return
        if group.preemption_hours is None:
            return
        rng = np.random.default_rng(np.random.SeedSequence([self.seed, 3, node]))
        now, away = 0.0, group.preempted_hours * 3600.0
        while True:
            now += rng.exponential(group.preemption_hours * 3600.0)
            yield now, away
            now += away

    def crash_seconds(self, job: str, mean_hours: float) -> Iterator[float]:
        """Running seconds between the crashes of the job named ``job`` (exponential with mean
        ``mean_hours``), from its own stream, keyed by the seed and the job's name only (not
        its row, nor the other jobs), independent of the nodes'."""
        key = zlib.crc32(job.encode("utf-8"))
        rng = np.random.default_rng(np.random.SeedSequence([self.seed, 1, key]))
        while True:
            yield float(rng.exponential(mean_hours * 3600.0))

    def describe(self) -> dict:
        return {
            "mtbf_hours": self.mtbf_hours,
            "repair_hours": self.repair_hours,
            "repair": self.repair,
            "trace_failures": len(self.trace),
            "seed": self.seed,
            "lifetime": self.lifetime,
            "job_crash_hours": self.job_crash_hours,
        }


def check_trace(trace: tuple[Failure, ...], where: str) -> None:
    """Refuse failures at impossible times or of impossible lengths, out of time order, or
    failing a node again before its repair (however the trace was made: file or Python)."""
    ends: dict[tuple[int | str, bool], float] = {}
    previous = -math.inf
    for failure in trace:
        if not (math.isfinite(failure.time) and 0 <= failure.time <= _MAX_SECONDS):
            raise InputError(where, f"failure time {failure.time!r} is not seconds in [0, 10 y]")
        if not (math.isfinite(failure.duration) and 0 < failure.duration <= _MAX_SECONDS):
            raise InputError(where, f"repair duration {failure.duration!r} is not positive")
        if failure.time < previous:
            raise InputError(where, "failures must be in time order")
        key = (failure.unit, failure.reclaim)
        if failure.time < ends.get(key, -1.0):
            raise InputError(where, f"{_what(failure.unit)} fails again before its repair")
        previous = failure.time
        ends[key] = failure.time + failure.duration


def _field(path: Path, line: int, name: str, text: str, parse, expected: str):
    """One field of a trace line read by ``parse``, or an error naming the line and field."""
    try:
        return parse(text)
    except ValueError:
        raise InputError(path, f"{name} {text!r} is not {expected}", line) from None


def _what(unit: int | str) -> str:
    return f"node {unit}" if isinstance(unit, int) else f"domain {unit!r}"


def read_failure_trace(
    path: str | Path, nodes: int, cluster: ClusterSpec | None = None
) -> tuple[Failure, ...]:
    """Failures from a CSV with a ``time,node,duration`` header (seconds, node ids from 0, or
    a failure domain's name), optionally with a fourth column ``kind`` (``failure``, the
    default, or ``reclaim`` of a spot node, away ``duration`` seconds); one-line errors naming
    the file and line. A node's (a domain's) failures may not overlap, nor its reclaims.
    Domain names are checked against ``cluster`` when it is given, else when the run starts;
    reclaimed nodes when the run starts."""
    path = Path(path)
    try:
        with regular_file(path, "failure trace").open(newline="", encoding="utf-8-sig") as handle:
            rows = list(csv.reader(handle))
    except (OSError, UnicodeDecodeError) as error:
        problem = f"cannot be read as a failure trace ({error.__class__.__name__})"
        raise InputError(path, problem) from None
    header = [c.strip() for c in rows[0]] if rows else []
    refuse_repeated_columns(path, header)
    if header not in (["time", "node", "duration"], ["time", "node", "duration", "kind"]):
        raise InputError(path, "expected the header time,node,duration (and optionally kind)", 1)
    failures = []
    for line, row in enumerate(rows[1:], start=2):
        if not any(cell.strip() for cell in row):
            continue
        if len(row) != len(header):
            raise InputError(path, f"expected {len(header)} fields, found {len(row)}", line)
        time, node, duration = (cell.strip() for cell in row[:3])
        kind = row[3].strip() if len(row) == 4 else "failure"
        if kind not in ("failure", "reclaim", ""):
            raise InputError(path, f"kind must be failure or reclaim, found {kind!r}", line)
        reclaim = kind == "reclaim"
        domain = node if NAME.match(node) else None
        at = _field(path, line, "time", time, parse_float, "a number of seconds")
        length = _field(path, line, "duration", duration, parse_float, "a number of seconds")
        index = -1
        if domain is None:
            index = _field(
                path, line, "node", node, parse_int, "a node id (digits) or a failure domain's name"
            )
        if domain is not None and cluster is not None:
            names = [d.name for d in cluster.domains]
            if domain not in names:
                known = ", ".join(names) if names else "none"
                raise InputError(
                    path, f"{domain!r} is neither a node id nor a failure domain ({known})", line
                )
        if not (math.isfinite(at) and 0 <= at <= _MAX_SECONDS):
            raise InputError(path, f"time must be seconds in [0, {_MAX_SECONDS:.0f}]", line)
        if not (math.isfinite(length) and 0 < length <= _MAX_SECONDS):
            raise InputError(path, "duration must be positive seconds", line)
        if domain is None and not 0 <= index < nodes:
            raise InputError(
                path, f"node {index} does not exist; the cluster has nodes 0-{nodes - 1}", line
            )
        if reclaim and domain is not None:
            raise InputError(path, "a reclaim names one spot node, not a domain", line)
        failures.append((at, index, length, line, domain, reclaim))
    failures.sort(key=lambda f: (f[0], f[1], f[2], f[3]))
    ends: dict[tuple[int | str, bool], float] = {}
    for at, index, length, line, domain, reclaim in failures:
        unit = (domain if domain is not None else index, reclaim)
        if at < ends.get(unit, -1.0):
            raise InputError(path, f"{_what(unit[0])} fails again before its repair", line)
        ends[unit] = at + length
    return tuple(Failure(at, i, length, d, r) for at, i, length, _, d, r in failures)
