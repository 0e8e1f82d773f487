"""The policy interface: a frozen snapshot in, a typed decision out.

A policy overrides :meth:`Policy.allocate`: GPUs per node for every active job. It does not
choose batch sizes: each job's batch agent (:mod:`goodput_sim.agents`) does, asked by the
engine after the allocation; a policy names its ``default_agent`` and may pass per-job hints.

Policies see frozen beliefs only (:class:`~goodput_sim.sim.jobs.BeliefView`). A policy that is an
oracle by definition (Optimus+Oracle) sets ``needs_oracle = True`` and receives each job's true
profile. Parameters are declared as data (``params``) and validated by :func:`get_policy`.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, ClassVar

import numpy as np
from numpy.typing import NDArray

from goodput_sim.binding import SimulationBound
from goodput_sim.errors import InputError
from goodput_sim.inputs.cluster import ClusterSpec
from goodput_sim.models.limits import Limits
from goodput_sim.params import Param, resolve
from goodput_sim.plugins import did_you_mean, load_group, plugin_distribution
from goodput_sim.profiles.base import ApplicationProfile
from goodput_sim.sim.jobs import BeliefView


@dataclass(frozen=True)
class JobView:
    """What a policy may read about one active job."""

    name: str
    application: str
    arrival: float
    age: float
    attained_service: float  # GPU-seconds so far
    num_restarts: int
    allocation: NDArray[np.int64]  # GPUs per node now (read-only)
    requested_replicas: int
    requested_batch: int
    limits: Limits
    epoch: int
    belief: BeliefView
    truth: ApplicationProfile | None = None  # only for policies with needs_oracle
    # On clusters of several GPU types: the type the job runs on (None when it waits), and for
    # type-aware policies its belief per type (fed only by what it ran on that type) and, for
    # oracle policies, its ground truth per type.
    gpu_type: str | None = None
    type_beliefs: Mapping[str, BeliefView] | None = None
    type_truths: Mapping[str, ApplicationProfile] | None = None
    type_speeds: Mapping[str, float] | None = None  # one-GPU examples/s per type (profiled)
    type_peak_speeds: Mapping[str, float] | None = None  # the same, Sia's max-over-max reading
    restart_delay: float = 30.0  # seconds a restart of this job costs
    restarting: bool = False  # still inside its restart delay
    move_loss: float = 0.0  # seconds of training a move would throw away now (unsaved moves)

    @property
    def replicas(self) -> int:
        """GPUs the job holds (counted once: policies ask for it many times a round)."""
        count = self.__dict__.get("_replicas")
        if count is None:
            count = int(self.allocation.sum())
            object.__setattr__(self, "_replicas", count)
        return count


@dataclass(frozen=True)
class Snapshot:
    """The cluster as a policy sees it at one scheduling round."""

    time: float
    cluster: ClusterSpec
    jobs: tuple[JobView, ...]  # active jobs in arrival order
    restart_delay: float


@dataclass(frozen=True)
class Decision:
    """A policy's answer for one round: GPUs on each node per job (jobs left out, or all
    zeros, get nothing), optional per-job hints for the jobs' batch agents, and optionally the
    order in which a job's nodes were filled (the reference reads a split job's measured
    throughput in that order, SPEC 5.9 step 5; without one, node-id order)."""

    allocations: Mapping[str, NDArray[np.int64]]
    agent_hints: Mapping[str, Mapping[str, Any]] = field(default_factory=dict)
    node_orders: Mapping[str, tuple[int, ...]] = field(default_factory=dict)

    def validated(
        self,
        policy: str,
        names: list[str],
        capacity: NDArray[np.int64],
        node_types: NDArray[np.int64] | None = None,
        rules: Mapping[str, Limits] | None = None,
    ) -> dict[str, NDArray[np.int64]]:
        """Every job's row, after checking the decision in one place: known jobs, integer rows
        of one entry per node, non-negative, no node over its capacity, (given each node's
        GPU type index) no job on two GPU types, and (given the limits of jobs whose category
        fixes their GPUs) each such job on a count its category allows. An illegal decision is
        a bug in the policy: ``RuntimeError`` naming the policy and the job or node."""
        known = set(names)
        kinds = (
            ("allocated", self.allocations),
            ("hinted", self.agent_hints),
            ("ordered", self.node_orders),
        )
        for kind, keys in kinds:
            unknown = sorted(set(keys) - known)
            if unknown:
                raise RuntimeError(f"policy {policy} {kind} unknown job {unknown[0]!r}")
        zeros = np.zeros(len(capacity), dtype=np.int64)
        given = [self.allocations.get(name, zeros) for name in names]
        try:  # the common case: one conversion of well-formed rows
            matrix = np.array(given)
            well_formed = matrix.shape == (len(names), len(capacity)) and (
                matrix.dtype.kind in "iu" or not len(names)
            )
        except ValueError:  # rows of different lengths
            well_formed = False
        if not well_formed:
            for name, row in zip(names, map(np.asarray, given), strict=True):
                if row.shape != zeros.shape or row.dtype.kind not in "iu":
                    raise RuntimeError(
                        f"policy {policy} gave job {name!r} a malformed row {row.tolist()!r}; "
                        f"expected {len(capacity)} integers"
                    )
        matrix = matrix.astype(np.int64, copy=False).reshape(len(names), len(capacity))
        if (matrix < 0).any():
            name = names[int(np.flatnonzero((matrix < 0).any(axis=1))[0])]
            raise RuntimeError(f"policy {policy} gave job {name!r} negative GPUs")
        over = np.flatnonzero(matrix.sum(axis=0) > capacity)
        if len(over):
            raise RuntimeError(f"policy {policy} over-subscribed node(s) {over.tolist()}")
        rows = dict(zip(names, matrix, strict=True))
        if node_types is not None:
            for name, row in rows.items():
                if len(set(node_types[row > 0].tolist())) > 1:
                    raise RuntimeError(f"policy {policy} put job {name!r} on two GPU types")
        for name, limits in (rules or {}).items():
            count = int(rows[name].sum())
            if not limits.runs_on(count):
                raise RuntimeError(
                    f"policy {policy} gave {limits.category} job {name!r} {count} GPUs; it runs "
                    f"on {limits.min_replicas or 1}-{limits.max_replicas} GPUs or none"
                )
        for name, order in self.node_orders.items():
            if sorted(order) != np.flatnonzero(rows[name]).tolist():
                raise RuntimeError(
                    f"policy {policy} gave job {name!r} a node order {list(order)} that is not "
                    "its used nodes"
                )
        return rows


def honour_categories(
    jobs: list[JobView] | tuple[JobView, ...], rows: Mapping[str, NDArray[np.int64]]
) -> dict[str, NDArray[np.int64]]:
    """``rows`` with every job its category does not allow on its count (a rigid job on fewer
    GPUs than it asked for) left without GPUs this round: taking GPUs away keeps any decision
    legal. For optimisers that value counts they then may not use."""
    out = dict(rows)
    for job in jobs:
        row = out.get(job.name)
        if row is not None and not job.limits.runs_on(int(row.sum())):
            out[job.name] = np.zeros_like(row)
    return out


class Policy(SimulationBound, ABC):
    """Base class of every scheduling policy; see the module docstring for the contract.

    A simulation binds its policy when it is built (:meth:`~SimulationBound.bind`): the policy
    returns to its state as constructed, so state it keeps between rounds must live in
    attributes its constructor creates."""

    name: ClassVar[str]
    needs_oracle: ClassVar[bool] = False
    default_agent: ClassVar[str] = "fixed"
    params: ClassVar[tuple[Param, ...]] = ()
    reads_beliefs: ClassVar[bool] = True  # False: the engine may skip belief updates nobody reads
    type_aware: ClassVar[bool] = False  # reads per-GPU-type beliefs (kept fresh for it)
    claim_baseline: ClassVar[bool] = True  # set against goodput in the Pollux claim check
    # Whether the policy chooses each job's GPU count. If not, a running job holds the GPUs it
    # asked for, and the autoscaler never removes a node it runs on.
    elastic: ClassVar[bool] = False

    @property
    def belief_fit(self) -> str:
        """How the engine fits the throughput beliefs this policy reads (``"engine"`` or
        ``"artifact"``, :class:`~goodput_sim.sim.jobs.FitMemo`)."""
        return "engine"

    @property
    def free_same_shape_moves(self) -> bool:
        """Whether moving a running job to other nodes of its GPU type with the same GPUs per
        node is free (the Sia reference's rule) rather than a restart; honoured in runs with
        no dynamics (which may price moves themselves)."""
        return False

    def __init__(self, seed: int = 0, **values: Any):
        self.seed = seed
        self.values = resolve(type(self).params, values, f"policy {self.name}")

    @abstractmethod
    def allocate(self, snapshot: Snapshot) -> Decision:
        """Choose every active job's GPUs per node for the next interval."""

    def quiet_until(self, snapshot: Snapshot, rows: Mapping[str, NDArray[np.int64]]) -> float:
        """Until when (simulated seconds) the allocation ``rows`` just decided stays this
        policy's answer, provided no job arrives, finishes or loses its GPUs and no node goes
        up or down: the engine does not ask again before then (event-driven rounds). Only
        exact answers belong here. Default: ask every round."""
        return snapshot.time

    def describe(self) -> dict:
        """Parameters that define this policy, for the results manifest."""
        return {"name": self.name, "seed": self.seed, **self.values}


_REGISTRY: dict[str, type[Policy]] = {}
_ALIASES: dict[str, str] = {}
PLUGIN_GROUP = "goodput_sim.policies"


def register(*aliases: str) -> Callable[[type[Policy]], type[Policy]]:
    """Class decorator: make a policy available to ``--policy NAME`` (and its aliases). A name
    is given to one policy: registering another class under a taken name is an error."""

    def wrap(cls: type[Policy]) -> type[Policy]:
        for name in (cls.name, *aliases):
            taken = _REGISTRY.get(_ALIASES.get(name, name))
            if taken is not None and not _same_class(taken, cls):
                raise ValueError(f"a policy named {name!r} is registered already ({taken!r})")
        _REGISTRY[cls.name] = cls
        for alias in aliases:
            _ALIASES[alias] = cls.name
        return cls

    return wrap


def _same_class(a: type, b: type) -> bool:
    """One class, or the same class defined again (a module imported anew)."""
    return (a.__module__, a.__qualname__) == (b.__module__, b.__qualname__)


def policy_names() -> list[str]:
    """Every registered policy's name (built-in and plugins), sorted."""
    _load_plugins()
    return sorted(_REGISTRY)


def policy_aliases(name: str) -> list[str]:
    """The aliases of a registered policy (other names than its own)."""
    return sorted(alias for alias, target in _ALIASES.items() if target == name != alias)


def policy_plugin(name: str) -> str | None:
    """The distribution that installed policy ``name`` through an entry point; None for a
    built-in policy."""
    _load_plugins()
    return plugin_distribution(PLUGIN_GROUP, _ALIASES.get(name, name))


def policy_class(name: str, argument: str = "--policy") -> type[Policy]:
    """A registered policy class by name or alias; an unknown name is an error naming
    ``argument`` (a flag, shown as the Python argument to Python callers: :class:`InputError`),
    each known policy once and the closest name."""
    _load_plugins()
    key = _ALIASES.get(name, name) if isinstance(name, str) else None
    if key not in _REGISTRY:
        known = ", ".join(
            n + (f" ({', '.join(policy_aliases(n))})" if policy_aliases(n) else "")
            for n in policy_names()
        )
        hint = did_you_mean(name, [*_REGISTRY, *_ALIASES])
        raise InputError(argument, f"unknown policy {name!r}{hint}; known: {known}")
    return _REGISTRY[key]


def get_policy(name: str, params: Mapping[str, Any] | None = None, seed: int = 0) -> Policy:
    """Instantiate a registered policy by name or alias, its parameters validated."""
    return policy_class(name)(seed=seed, **dict(params or {}))


def _load_plugins() -> None:
    """Third-party policies register through the ``goodput_sim.policies`` entry-point group
    (:mod:`goodput_sim.plugins`)."""
    load_group(PLUGIN_GROUP, _add_plugin, lambda: _REGISTRY)


def _add_plugin(entry: str, obj: object) -> list[str]:
    """Register the policy class an entry point names (its module may have done so already)."""
    if not (isinstance(obj, type) and issubclass(obj, Policy)):
        raise TypeError(f"expected a Policy subclass, found {obj!r}")
    if entry != obj.name:
        raise ValueError(f"the entry point is named {entry!r} but the policy {obj.name!r}")
    if _REGISTRY.get(obj.name) is not obj:
        register()(obj)
    return [obj.name]
