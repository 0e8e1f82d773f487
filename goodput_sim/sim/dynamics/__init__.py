"""Dynamics: the ways the world changes under the jobs, each a component in its own module
behind the interface of :mod:`goodput_sim.sim.dynamics.base`, registered here by name.

The engine builds every registered dynamic for each run, in registration order (which is
also the order of their ``jobs.csv`` columns and of their events at one instant); a dynamic
that the run's specification leaves out builds to nothing. A new dynamic is one module and one
:func:`register_dynamic` call (or, for one run, a factory passed as ``dynamics=``); the engine
does not change.

A dynamic that another package installs (entry-point group ``goodput_sim.dynamics``,
:mod:`goodput_sim.plugins`) is not built for every run: installing it changes no result. A run
opts in by naming it, ``dynamics=["NAME"]`` or ``dynamics=[named_dynamic("NAME", {...})]``
with values for the parameters it declares.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from goodput_sim.errors import InputError
from goodput_sim.params import resolve
from goodput_sim.plugins import did_you_mean, load_group, plugin_distribution
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


PLUGIN_GROUP = "goodput_sim.dynamics"
_PLUGINS: dict[str, type[Dynamic]] = {}


def plugin_dynamics() -> dict[str, type[Dynamic]]:
    """The dynamics installed through entry points, by name: built only for runs that name
    them."""
    load_group(PLUGIN_GROUP, _add_plugin)
    return dict(sorted(_PLUGINS.items()))


def dynamic_plugin(name: str) -> str | None:
    """The distribution that installed dynamic ``name``; None for a built-in one."""
    load_group(PLUGIN_GROUP, _add_plugin)
    return plugin_distribution(PLUGIN_GROUP, name)


def _add_plugin(entry: str, obj: object) -> list[str]:
    if not (isinstance(obj, type) and issubclass(obj, Dynamic)):
        raise TypeError(f"expected a Dynamic subclass, found {obj!r}")
    if entry != obj.name:
        raise ValueError(f"the entry point is named {entry!r} but the dynamic {obj.name!r}")
    if entry in DYNAMICS:
        raise ValueError(f"a dynamic named {entry!r} is built in")
    _PLUGINS[entry] = obj
    return [entry]


@dataclass(frozen=True)
class NamedDynamic:
    """A factory of the installed dynamic ``name`` with ``values`` for its declared parameters
    (checked when made, by :func:`named_dynamic`); it pickles, so it reaches worker
    processes."""

    name: str
    values: Mapping[str, Any] = field(default_factory=dict)

    def __call__(self, world: World) -> Dynamic | None:
        return plugin_dynamics()[self.name].build(world, **self.values)


def named_dynamic(
    name: str, params: Mapping[str, Any] | None = None, argument: str = "dynamics"
) -> NamedDynamic:
    """The installed dynamic ``name`` as a factory for one run's ``dynamics=``, ``params``
    checked against what it declares; an unknown name is an error naming ``argument``."""
    installed = plugin_dynamics()
    if name not in installed:
        if name in DYNAMICS:
            problem = f"dynamic {name!r} is built in: every run has it, switched on by its settings"
        else:
            hint = did_you_mean(name, installed)
            known = f"installed: {', '.join(installed)}" if installed else "none is installed"
            problem = f"unknown dynamic {name!r}{hint}; {known}"
        raise InputError(argument, problem)
    values = resolve(installed[name].params, dict(params or {}), f"dynamic {name}")
    return NamedDynamic(name, values)


def as_factories(
    dynamics: Sequence[DynamicFactory | str], argument: str = "dynamics"
) -> tuple[DynamicFactory, ...]:
    """A run's ``dynamics=``: factories as given, names of installed dynamics as theirs."""
    if isinstance(dynamics, str):
        dynamics = (dynamics,)
    return tuple(named_dynamic(d, argument=argument) if isinstance(d, str) else d for d in dynamics)


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
    "NamedDynamic",
    "World",
    "as_factories",
    "build_dynamics",
    "dynamic_plugin",
    "named_dynamic",
    "plugin_dynamics",
    "register_dynamic",
    "unregister_dynamic",
]
