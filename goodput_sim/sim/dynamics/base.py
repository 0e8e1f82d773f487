"""The interface of a dynamic: one way the world changes under the jobs (nodes failing, spot
nodes reclaimed, jobs crashing, checkpoints, autoscaling, interference, progress models).

A dynamic is a :class:`Dynamic` subclass in a module of its own, registered by name
(:func:`goodput_sim.sim.dynamics.register_dynamic`). The engine builds the registered ones for
each run (:meth:`Dynamic.build`, from the run specification), and calls their hooks at named
points; every hook has a default that does nothing, so a dynamic overrides only the points where
it acts. It talks back to the engine only through the :class:`World` it is given, whose calls
keep the engine's rules for it:

* :meth:`World.stop` takes a job's GPUs for a typed :class:`Interruption`, losing its work
  since the last checkpoint if asked; :meth:`World.world_changed` says that something the last
  decision read has changed. Both end the quiet-round window (the last decision no longer
  stands) and stale the plans of the jobs concerned, so no dynamic can forget to.
* :meth:`World.schedule` puts its events on the simpy clock with an explicit priority
  (:class:`~goodput_sim.sim.clock.Cause`), so ties at one instant do not depend on creation.
* :meth:`World.random` gives it a random stream keyed by its own name and a job's name, so
  adding a dynamic or reordering the workload moves no other draw.

Hooks, in the order a run meets them: ``check`` (once every dynamic is built), ``start`` (the
clock starts), ``job_made`` (a job's state is made), ``before_decide`` and ``after_decide`` (each
round), ``move_cost`` (what moving a running job would cost it, shown to policies), ``stopping`` (a
running job is about to lose its GPUs, and why), ``assigned`` (a job's GPUs changed, for any
reason), ``restarting`` (a job starts on new GPUs), ``advance`` (moving a
running job through time), ``idle_round`` (a round with no active job), and at the end
``job_columns`` and ``summary``.
"""

from __future__ import annotations

import enum
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, ClassVar, Protocol

import numpy as np

from goodput_sim.params import Param, resolve
from goodput_sim.sim.clock import Cause

if TYPE_CHECKING:
    import simpy

    from goodput_sim.agents.base import BatchAgent
    from goodput_sim.inputs.cluster import ClusterSpec
    from goodput_sim.policies.base import JobView, Policy
    from goodput_sim.sim.jobbook import JobBook
    from goodput_sim.sim.jobs import Job
    from goodput_sim.sim.nodes import NodePool
    from goodput_sim.spec import SimConfig


class LossCause(enum.Enum):
    """Why a job loses its GPUs."""

    NODE_DOWN = "node-down"  # a node it runs on failed (or went down for maintenance)
    NODE_RECLAIMED = "node-reclaimed"  # the provider takes back a spot node it runs on
    NODE_REMOVED = "node-removed"  # the autoscaler removed a node it runs on
    JOB_CRASHED = "job-crashed"  # the job itself crashed
    REALLOCATED = "reallocated"  # the policy gave it other GPUs, or none


@dataclass(frozen=True)
class Interruption:
    """A typed cause: what stops a running job, when, which dynamic (or ``policy``) says so,
    and the node concerned, if one is."""

    cause: LossCause
    time: float
    by: str
    node: int | None = None


class World(Protocol):
    """What a dynamic may read and call: the engine's side of the interface."""

    env: simpy.Environment
    cluster: ClusterSpec  # every node of the pool (a run's machines)
    config: SimConfig
    pool: NodePool  # which nodes are up, and their accounting
    policy: Policy
    agent: BatchAgent  # the run's batch agent (read-only)
    active: list[Job]  # jobs arrived and not finished, in arrival order
    book: JobBook  # the workload's rows, and the jobs made from them
    dynamics: tuple[Dynamic, ...]  # every dynamic of the run, once all are built
    seed: int

    def catch_up(self) -> None:
        """Bring every running job's progress up to now (before changing what it runs on)."""

    def stop(
        self, job: Job, why: Interruption, *, lose_work: bool = False, restore: bool = False
    ) -> None:
        """Take every GPU from a running job: back to its last checkpoint if ``lose_work``,
        restoring from a checkpoint at its next start if ``restore``."""

    def world_changed(self, jobs: Sequence[Job] = ()) -> None:
        """Something the last decision read has changed: the policy decides again at the next
        round, and ``jobs`` plan anew."""

    def lose_work(self, job: Job, now: float) -> None:
        """Undo a job's progress since its last checkpoint whose save had finished by ``now``."""

    def save(self, job: Job, now: float) -> None:
        """Save the job's state at ``now``: it loses nothing when it next stops."""

    def schedule(
        self, delay: float, cause: Cause, then: Callable[[], Any], job: str | None = None
    ) -> None:
        """Call ``then`` after ``delay`` seconds, ordered among events of that instant by
        ``cause`` (the event's value names ``job``, if it concerns one)."""

    def random(self, name: str, job: str = "") -> np.random.Generator:
        """A random stream of dynamic ``name`` (for job ``job``), from the run's seed."""

    def count_events(self, count: int) -> None:
        """Charge ``count`` events to the run's work budget (``--max-events``)."""

    def jobs_on(self, node: int) -> list[Job]:
        """The active jobs holding GPUs on ``node``."""

    def failure_rate(self, job: Job) -> float:
        """Events per second that undo the job's work: its nodes' and every dynamic's."""


class Dynamic:
    """One way the world changes under the jobs (see the module docstring for the hooks).

    Class attributes declare what a run needs to know without running it: ``settings``, the
    run-specification settings it reads (:mod:`goodput_sim.spec`); ``reads_beliefs``, whether
    the engine must refresh every job's belief each round for it; ``keeps_decisions``, False
    when the policy must be asked at every round (no quiet rounds while it is active);
    ``replaces_work``, True when jobs' work is no longer the profile's epochs (isolated times,
    and so finish-time fairness, are then undefined); ``loses_work``, True when it can undo
    jobs' work other than by taking nodes down (the pool's failure rates count those).
    ``columns`` (set per run) names the ``jobs.csv`` columns :meth:`job_columns` adds.
    ``params`` declares, as data, the parameters of a dynamic that a run names (a plugin's,
    :func:`goodput_sim.sim.dynamics.named_dynamic`); their values are in ``values``."""

    name: ClassVar[str] = ""
    settings: ClassVar[tuple[str, ...]] = ()
    reads_beliefs: ClassVar[bool] = False
    keeps_decisions: ClassVar[bool] = True
    replaces_work: ClassVar[bool] = False
    loses_work: ClassVar[bool] = False
    params: ClassVar[tuple[Param, ...]] = ()

    def __init__(self, world: World, **values: Any):
        self.world = world
        self.columns: tuple[str, ...] = ()
        self.values = resolve(type(self).params, values, f"dynamic {self.name}")

    @classmethod
    def build(cls, world: World, **values: Any) -> Dynamic | None:
        """This dynamic for one run, or None where the run's specification leaves it out.
        Inputs it cannot work with are refused here (an ``InputError`` naming the setting).
        ``values``: the declared ``params`` a run gives a dynamic it names."""
        return cls(world, **values)

    def check(self) -> None:
        """Once every dynamic of the run is built: refuse what needs the others to judge."""

    def prices_moves(self) -> bool:
        """Whether moving a job to other nodes means something to this dynamic in this run (a
        save, lost work, another node's price or neighbours), so that no move goes free; asked
        once the run's dynamics are checked."""
        return True

    def start(self) -> None:
        """The clock starts: put this dynamic's first events on it."""

    def job_made(self, job: Job) -> None:
        """A job's state was made (when it arrives, or when the jobs table is read)."""

    def before_decide(self, views: tuple[JobView, ...]) -> None:
        """A round is about to ask the policy (``views``: the active jobs as it sees them)."""

    def after_decide(self, jobs: Sequence[Job]) -> None:
        """The round's allocation stands; the jobs' plans are made next."""

    def stopping(self, job: Job, why: Interruption) -> None:
        """A running job is about to lose its GPUs (it still holds them)."""

    def assigned(self, job: Job, now: float) -> None:
        """A job's GPUs changed, for whatever reason (it may now hold none)."""

    def restarting(self, job: Job, now: float) -> None:
        """A job starts on new GPUs; it may add to ``job.restart_remaining``."""

    def advance(self, job: Job, start: float, end: float) -> bool:
        """Move a running job from ``start`` to ``end`` itself; True if it did (the engine
        then does not)."""
        return False

    def failure_rate(self, job: Job) -> float:
        """Events per second of this dynamic that undo the job's work."""
        return 0.0

    def move_cost(self, job: Job, now: float) -> float:
        """Seconds a move of the running job would cost it at ``now`` beyond its restart delay
        (work it would lose); policies see it in the job's restart delay."""
        return 0.0

    def idle_round(self) -> bool:
        """A round with no active job; True to keep rounds going at the interval."""
        return False

    def job_columns(self, job: Job) -> dict[str, Any]:
        """This dynamic's ``jobs.csv`` cells of a job (every name of ``columns``)."""
        return {}

    def summary(self, end: float) -> dict[str, Any]:
        """Fields this dynamic adds to the run's cluster summary."""
        return {}
