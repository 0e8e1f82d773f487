"""The batch-agent interface: each job's agent picks its per-GPU batch and gradient
accumulation on the GPUs the scheduler gave it, from what the job itself measures.

Pollux splits the work this way (Qiao et al., OSDI'21, section 4): the scheduler decides GPUs
per node, and an agent inside each job (the AdaptDL library) decides the batch size. The engine,
not the policy, asks the agent, after the round's allocation, with the job's frozen belief.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Hashable, Mapping
from typing import Any, ClassVar

import numpy as np
from numpy.typing import NDArray

from goodput_sim.binding import SimulationBound
from goodput_sim.errors import InputError
from goodput_sim.models.goodput import fixed_batch_config
from goodput_sim.models.limits import Limits
from goodput_sim.params import Param, resolve
from goodput_sim.plugins import did_you_mean, load_group, plugin_distribution
from goodput_sim.sim.jobs import BeliefView

BatchPlan = tuple[NDArray, NDArray]
"""(per-GPU batch, accumulation steps) for each upcoming epoch."""


class BatchAgent(SimulationBound, ABC):
    """Base class of every batch agent; subclasses set ``name`` and implement :meth:`configs`.
    A simulation binds its agent when it is built, as it binds its policy
    (:meth:`~goodput_sim.binding.SimulationBound.bind`)."""

    name: ClassVar[str]
    params: ClassVar[tuple[Param, ...]] = ()
    reads_beliefs: ClassVar[bool] = True  # False: the engine may skip belief updates nobody reads

    def __init__(self, **values: Any):
        self.values = resolve(type(self).params, values, f"agent {self.name}")

    @property
    def reads_noise_prior(self) -> bool:
        """Whether this agent reads ``Limits.noise_prior`` (the engine sets it only then)."""
        return False

    @abstractmethod
    def configs(
        self,
        belief: BeliefView,
        requested_batch: int,
        nodes: int,
        replicas: int,
        grad_sqr: NDArray,
        grad_var: NDArray,
        hint: Mapping[str, Any] | None = None,
    ) -> BatchPlan:
        """(per-GPU batch, accumulation steps) for each upcoming epoch on ``replicas`` GPUs
        over ``nodes`` nodes. ``grad_sqr``/``grad_var`` hold, per upcoming epoch, the gradient
        statistics the job will measure then (an adaptive job re-chooses its batch at every
        epoch, SPEC 5.3); ``hint`` is the policy's optional per-job hint."""

    def plan_key(
        self, belief: BeliefView, requested_batch: int, nodes: int, replicas: int
    ) -> Hashable | None:
        """Everything :meth:`configs` reads besides the per-epoch statistics and the hint, for
        the engine to share one plan between jobs and rounds whose inputs are equal; None (the
        default) when the agent does not say, and plans are not shared."""
        return None

    def depends_on(self, belief: BeliefView) -> Hashable:
        """What of the belief the choice depends on (part of the engine's plan key): by default
        the fitted throughput parameters, which change with every refit."""
        return belief.fits

    def describe(self) -> dict:
        """Name and parameters, for the results manifest."""
        return {"name": self.name, **self.values}


def validated_plan(
    agent: str, job: str, plan: object, replicas: int, limits: Limits, epochs: int
) -> BatchPlan:
    """An agent's plan for ``epochs`` upcoming epochs on ``replicas`` GPUs, checked in one place
    (as :meth:`~goodput_sim.policies.base.Decision.validated` checks a policy's answer): a pair
    of arrays of one entry per epoch, integer per-GPU batches in [1, ``max_local_bsz``] of the
    GPU type the job runs on, integer accumulation steps >= 0 (at least one micro-step), and a
    total batch of at most the application's ``max_batch_size``. A violation is a bug in the
    agent: ``RuntimeError`` naming the agent, the job and the value."""

    def fail(what: str) -> RuntimeError:
        return RuntimeError(f"agent {agent} gave job {job!r} {what}")

    try:
        local_bsz, accum = (np.asarray(a, dtype=np.float64) for a in plan)  # type: ignore[union-attr]
    except (TypeError, ValueError) as error:
        raise fail(f"a malformed plan ({error}); expected (per-GPU batch, accumulation)") from None
    if local_bsz.shape != (epochs,) or accum.shape != (epochs,):
        raise fail(f"plan arrays of shapes {local_bsz.shape}, {accum.shape}; expected ({epochs},)")
    checks = (
        (local_bsz, "per-GPU batch", 1, limits.max_local_bsz),
        (accum, "accumulation steps", 0, None),
    )
    for values, what, low, high in checks:
        bad = ~np.isfinite(values) | (values != np.round(values)) | (values < low)
        if high is not None:
            bad |= values > high
        if bad.any():
            k = int(np.flatnonzero(bad)[0])
            allowed = f"an integer >= {low}" if high is None else f"an integer in [{low}, {high}]"
            raise fail(f"{what} {values[k]:g} at upcoming epoch {k}; expected {allowed}")
    total = replicas * local_bsz * (accum + 1)
    over = np.flatnonzero(total > limits.max_batch_size)
    if len(over):
        raise fail(
            f"total batch {total[over[0]]:g} on {replicas} GPUs; the application allows at most "
            f"{limits.max_batch_size}"
        )
    return local_bsz, accum


def fixed_configs(
    limits: Limits, total_batch: float, replicas: int, shape: tuple[int, ...]
) -> BatchPlan:
    """The same fixed-batch (b, s) for every upcoming epoch, as arrays of ``shape``."""
    b, s = fixed_batch_config(total_batch, replicas, limits)
    return np.full(shape, float(b)), np.full(shape, float(s))


_REGISTRY: dict[str, type[BatchAgent]] = {}
PLUGIN_GROUP = "goodput_sim.agents"


def register_agent(cls: type[BatchAgent]) -> type[BatchAgent]:
    """Class decorator: make an agent available to ``--agent NAME``. A name is given to one
    agent: registering another class under a taken name is an error."""
    taken = _REGISTRY.get(cls.name)
    if taken is not None and (taken.__module__, taken.__qualname__) != (
        cls.__module__,
        cls.__qualname__,
    ):
        raise ValueError(f"an agent named {cls.name!r} is registered already ({taken!r})")
    _REGISTRY[cls.name] = cls
    return cls


def agent_names() -> list[str]:
    """Every registered agent's name (built-in and plugins), sorted."""
    _load_plugins()
    return sorted(_REGISTRY)


def agent_plugin(name: str) -> str | None:
    """The distribution that installed agent ``name`` through an entry point; None for a
    built-in agent."""
    _load_plugins()
    return plugin_distribution(PLUGIN_GROUP, name)


def agent_class(name: str, argument: str = "--agent") -> type[BatchAgent]:
    """A registered agent class by name; an unknown name is an error naming ``argument``."""
    _load_plugins()
    if not isinstance(name, str) or name not in _REGISTRY:
        hint = did_you_mean(name, _REGISTRY)
        raise InputError(
            argument, f"unknown agent {name!r}{hint}; known: {', '.join(agent_names())}"
        )
    return _REGISTRY[name]


def _load_plugins() -> None:
    """Third-party agents register through the ``goodput_sim.agents`` entry-point group
    (:mod:`goodput_sim.plugins`)."""
    load_group(PLUGIN_GROUP, _add_plugin, lambda: _REGISTRY)


def _add_plugin(entry: str, obj: object) -> list[str]:
    """Register the agent class an entry point names (its module may have done so already)."""
    if not (isinstance(obj, type) and issubclass(obj, BatchAgent)):
        raise TypeError(f"expected a BatchAgent subclass, found {obj!r}")
    if entry != obj.name:
        raise ValueError(f"the entry point is named {entry!r} but the agent {obj.name!r}")
    register_agent(obj)
    return [obj.name]


def get_agent(name: str, params: Mapping[str, Any] | None = None) -> BatchAgent:
    """Instantiate a registered agent, its parameters validated."""
    return agent_class(name)(**dict(params or {}))
