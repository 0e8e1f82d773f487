"""The policy interface: a read-only snapshot in, a typed decision out.

A policy overrides one or two hooks:

* :meth:`Policy.allocate` (required): GPUs per node for every active job;
* :meth:`Policy.batch_configs` (optional): per-GPU batch and accumulation steps a job uses on an
  allocation, for each upcoming epoch. The default keeps the job's requested total batch.

Policies see beliefs only (:class:`~goodput_sim.jobs.JobBelief`). A policy that is an oracle by
definition (Optimus+Oracle) sets ``needs_oracle = True`` and receives each job's true profile.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Callable
from dataclasses import dataclass
from typing import ClassVar

import numpy as np
from numpy.typing import NDArray

from goodput_sim.cluster import ClusterSpec
from goodput_sim.errors import InputError
from goodput_sim.jobs import JobBelief
from goodput_sim.models.goodput import fixed_batch_config
from goodput_sim.profiles.base import ApplicationProfile, Limits


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
    belief: JobBelief
    truth: ApplicationProfile | None = None  # only for policies with needs_oracle

    @property
    def replicas(self) -> int:
        return int(self.allocation.sum())


@dataclass(frozen=True)
class Snapshot:
    """The cluster as a policy sees it at one scheduling round."""

    time: float
    cluster: ClusterSpec
    jobs: tuple[JobView, ...]  # active jobs in arrival order
    restart_delay: float


def fixed_configs(
    limits: Limits, total_batch: float, replicas: int, shape: tuple[int, ...]
) -> tuple[NDArray, NDArray]:
    """The same fixed-batch (b, s) for every upcoming epoch, as arrays of ``shape``."""
    b, s = fixed_batch_config(total_batch, replicas, limits)
    return np.full(shape, float(b)), np.full(shape, float(s))


Decision = dict[str, NDArray[np.int64]]
"""Job name -> GPUs on each node (all zeros: not running). Jobs left out keep nothing."""


class Policy(ABC):
    """Base class of every scheduling policy; see the module docstring for the hooks."""

    name: ClassVar[str]
    needs_oracle: ClassVar[bool] = False

    def __init__(self, seed: int = 0):
        self.seed = seed

    @abstractmethod
    def allocate(self, snapshot: Snapshot) -> Decision:
        """Choose every active job's GPUs per node for the next interval."""

    def batch_configs(
        self, job: JobView, nodes: int, replicas: int, grad_sqr: NDArray, grad_var: NDArray
    ) -> tuple[NDArray, NDArray]:
        """(per-GPU batch, accumulation steps) for each upcoming epoch on this allocation.

        ``grad_sqr``/``grad_var`` hold, per upcoming epoch, the gradient statistics the job will
        measure then (adaptive jobs re-choose their batch at every epoch, SPEC 5.3). The default
        keeps the job's requested total batch.
        """
        return fixed_configs(job.limits, job.requested_batch, replicas, np.shape(grad_sqr))

    def describe(self) -> dict:
        """Parameters that define this policy, for the results manifest."""
        return {"name": self.name, "seed": self.seed}


_REGISTRY: dict[str, type[Policy]] = {}
_ALIASES: dict[str, str] = {}


def register(*aliases: str) -> Callable[[type[Policy]], type[Policy]]:
    """Class decorator: make a policy available to ``--policy NAME`` (and its aliases)."""

    def wrap(cls: type[Policy]) -> type[Policy]:
        _REGISTRY[cls.name] = cls
        for alias in aliases:
            _ALIASES[alias] = cls.name
        return cls

    return wrap


def policy_names() -> list[str]:
    return sorted(_REGISTRY)


def get_policy(name: str, **params) -> Policy:
    """Instantiate a registered policy by name or alias."""
    _load_plugins()
    key = _ALIASES.get(name, name)
    if key not in _REGISTRY:
        known = ", ".join(policy_names() + sorted(_ALIASES))
        raise InputError("--policy", f"unknown policy {name!r}; known: {known}")
    return _REGISTRY[key](**params)


def _load_plugins() -> None:
    """Third-party policies register through the ``goodput_sim.policies`` entry-point group."""
    from importlib.metadata import entry_points

    for entry in entry_points(group="goodput_sim.policies"):
        if entry.name not in _REGISTRY:
            entry.load()
