"""Dynamics: the ways the world changes under the jobs, each a component in its own module
behind the interface of :mod:`goodput_sim.sim.dynamics.base`, registered here by name.

The engine builds every registered dynamic for each run, in registration order (which is
also the order of their ``jobs.csv`` columns and of their events at one instant); a dynamic
that the run's specification leaves out builds to nothing. A new dynamic is one module and one
:func:`register_dynamic` call (or, for one run, a factory passed as ``dynamics=``); the engine
does not change.
"""

from __future__ import annotations

from collections.abc import Callable

from goodput_sim.sim.dynamics.autoscaling import Autoscaling
from goodput_sim.sim.dynamics.base import Dynamic, Interruption, LossCause, World
from goodput_sim.sim.dynamics.checkpoints import Checkpoints
from goodput_sim.sim.dynamics.interference import Interference
from goodput_sim.sim.dynamics.job_crashes import JobCrashes
from goodput_sim.sim.dynamics.lr_aware import LearningRateProgress
from goodput_sim.sim.dynamics.node_failures import NodeFailures
from goodput_sim.sim.dynamics.spot import SpotReclaims

DynamicFactory = Callable[[World], "Dynamic | None"]
"""What builds a dynamic for one run: a :class:`Dynamic` subclass (its ``build``) or any
callable taking the run's :class:`World`."""

DYNAMICS: dict[str, DynamicFactory] = {}
"""Every registered dynamic by name, in the order the engine builds them."""


def register_dynamic(name: str, factory: DynamicFactory) -> None:
    """Register a dynamic under ``name`` (built for every run from then on); a name is
    registered once."""
    if name in DYNAMICS:
        raise ValueError(f"a dynamic named {name!r} is registered already")
    DYNAMICS[name] = factory


def unregister_dynamic(name: str) -> None:
    """Forget the dynamic ``name`` (tests and notebooks that registered one for a while)."""
    del DYNAMICS[name]


def build_dynamics(world: World, extra: tuple[DynamicFactory, ...] = ()) -> tuple[Dynamic, ...]:
    """The dynamics of one run: every registered one, then ``extra``, those the run leaves
    out dropped (the engine then calls each one's ``check``)."""
    built = []
    for factory in (*DYNAMICS.values(), *extra):
        make = factory.build if isinstance(factory, type) else factory
        dynamic = make(world)
        if dynamic is not None:
            built.append(dynamic)
    return tuple(built)


for _cls in (
    JobCrashes,
    Checkpoints,
    NodeFailures,
    SpotReclaims,
    Autoscaling,
    Interference,
    LearningRateProgress,
):
    register_dynamic(_cls.name, _cls)

__all__ = [
    "DYNAMICS",
    "Dynamic",
    "DynamicFactory",
    "Interruption",
    "LossCause",
    "World",
    "build_dynamics",
    "register_dynamic",
    "unregister_dynamic",
]
