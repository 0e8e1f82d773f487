"""The simulated clock: typed engine events, the order of events due at the same instant, and
the loop that replays arrivals and scheduling rounds (:func:`run_clock`).

simpy runs events in order of (time, priority, creation). Timeouts all share one priority, so
two events due at the same instant would run in the order they were *created*, an accident of
history (a node repaired at a round's time would be usable in that round if it had failed
early enough, not if it failed shortly before). Every engine event is therefore scheduled with
an explicit priority, and at one instant they run in this order:

1. failures, then job crashes: a node failing (a job crashing) at a round's time is down
   (waiting) for that round;
2. repairs: a node repaired at a round's time is usable in that round;
3. node starts: a node the autoscaler started that finishes booting then is usable too;
4. arrivals, in workload order: a job arriving at a round's time is scheduled in that round;
5. the round last. Completions happen inside rounds: progress is advanced and finished jobs
   are retired when a round (or a failure) brings the clock up to date, each with its exact
   finish time.
"""

from __future__ import annotations

import enum
import math
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any

import simpy
from simpy.events import Event


class Cause(enum.Enum):
    """Why the clock stopped: the typed value of every engine event."""

    ARRIVAL = "arrival"
    ROUND = "round"
    COMPLETION = "completion"
    FAILURE = "failure"  # a node goes down
    CRASH = "crash"  # a job crashes
    REPAIR = "repair"  # a failed node is back
    NODE_READY = "node-ready"  # a node the autoscaler started has booted


ORDER = (Cause.FAILURE, Cause.CRASH, Cause.REPAIR, Cause.NODE_READY, Cause.ARRIVAL, Cause.ROUND)
"""Causes in the order they run when due at the same instant (completions: inside rounds)."""

_FIRST_PRIORITY = 2  # after simpy's own URGENT (0) and NORMAL (1) events at that instant
PRIORITY = {cause: _FIRST_PRIORITY + rank for rank, cause in enumerate(ORDER)}


@dataclass(frozen=True)
class SimEvent:
    """The value of an engine event: its cause, its time and the job it concerns, if any."""

    cause: Cause
    time: float
    job: str | None = None


class At(Event):
    """A timeout whose ties with other engine events follow :data:`ORDER`, not creation."""

    def __init__(self, env: simpy.Environment, delay: float, value: SimEvent):
        if delay < 0:
            raise ValueError(f"negative delay {delay}")
        self.env = env
        self.callbacks: list[Any] = []
        self._value = value
        self._ok = True
        env.schedule(self, PRIORITY[value.cause], delay)


def after(env: simpy.Environment, delay: float, cause: Cause, job: str | None = None) -> At:
    """An event of ``cause`` due ``delay`` seconds from now (its value carries that time)."""
    return At(env, delay, SimEvent(cause, env.now + delay, job))


def at(env: simpy.Environment, time: float, cause: Cause, job: str | None = None) -> At:
    """An event of ``cause`` due at ``time`` exactly (not ``now`` plus a rounded difference:
    the delay is nudged until the two add up to ``time``)."""
    delay = time - env.now
    while env.now + delay < time:
        delay = math.nextafter(delay, math.inf)
    while delay > 0 and env.now + delay > time:
        delay = math.nextafter(delay, -math.inf)
    return At(env, delay, SimEvent(cause, time, job))


def run_clock(
    env: simpy.Environment,
    arrivals: Iterable[tuple[float, str]],
    on_arrival: Callable[[Event], object],
    round_step: Callable[[float], float | None],
) -> None:
    """Replay a run: each (time, job) arrival, in time order, calls ``on_arrival`` at its
    time, and a round calls ``round_step(now)`` at time 0 (after that instant's arrivals) and
    then after each wait it returns, until it returns None. One arrival is pending at a time
    (the next is scheduled as one fires), so a long workload costs no memory in the queue."""
    upcoming = iter(arrivals)

    def arrive(event: Event) -> None:
        on_arrival(event)
        schedule_next()

    def schedule_next() -> None:
        nxt = next(upcoming, None)
        if nxt is not None:
            at(env, nxt[0], Cause.ARRIVAL, nxt[1]).callbacks.append(arrive)

    schedule_next()

    def rounds():
        yield after(env, 0.0, Cause.ROUND)
        while (wait := round_step(env.now)) is not None:
            yield after(env, wait, Cause.ROUND)

    env.run(until=env.process(rounds()))
