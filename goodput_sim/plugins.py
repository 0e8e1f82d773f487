"""Plugins: policies, batch agents and dynamics that other packages register through entry
points, and the "did you mean" hint every unknown name gets.

A package adds a component by declaring an entry point in one of three groups (in its
``pyproject.toml``, under ``[project.entry-points."GROUP"]``):

* ``goodput_sim.policies``: a :class:`~goodput_sim.policies.Policy` subclass;
* ``goodput_sim.agents``: a :class:`~goodput_sim.agents.BatchAgent` subclass;
* ``goodput_sim.dynamics``: a :class:`~goodput_sim.sim.dynamics.Dynamic` subclass.

The entry point's name is the component's name. Each group is read once per process, the first
time a name of its kind is looked up or listed (never at import), and every component it names
is remembered with the distribution that installed it (:func:`plugin_distribution`). A plugin
that fails to import is skipped with a warning: the built-in components keep working.
"""

from __future__ import annotations

import difflib
import warnings
from collections.abc import Callable, Iterable

GROUPS = ("goodput_sim.policies", "goodput_sim.agents", "goodput_sim.dynamics")

_LOADED: set[str] = set()
_ORIGINS: dict[tuple[str, str], str] = {}  # (group, component name) -> distribution


def load_group(
    group: str,
    add: Callable[[str, object], list[str]],
    registered: Callable[[], Iterable[str]] = tuple,
) -> None:
    """Read entry-point ``group`` once per process: load each entry point and hand its object to
    ``add(entry name, object)``, which registers it and returns the component names it added.
    Those, and any other name that appears in ``registered()`` while the entry point's module
    is imported, are remembered as coming from the entry point's distribution."""
    if group in _LOADED:
        return
    _LOADED.add(group)  # first: a plugin that looks names up while loading does not recurse
    from importlib.metadata import entry_points

    for entry in sorted(entry_points(group=group), key=lambda e: e.name):
        dist = entry.dist.name if entry.dist is not None else entry.value.split(":")[0]
        before = set(registered())
        try:
            names = [*add(entry.name, entry.load()), *(set(registered()) - before)]
        except Exception as error:  # a broken plugin must not break the built-in components
            warnings.warn(
                f"plugin {entry.name!r} of {group} (from {dist}) was not loaded: "
                f"{type(error).__name__}: {error}",
                stacklevel=2,
            )
            continue
        for name in names:
            _ORIGINS.setdefault((group, name), dist)


def plugin_distribution(group: str, name: str) -> str | None:
    """The distribution whose entry point in ``group`` registered ``name``; None for a
    built-in component (or one registered in this process by code)."""
    return _ORIGINS.get((group, name))


def did_you_mean(name: object, known: Iterable[str]) -> str:
    """``" (did you mean 'x'?)"`` when ``name`` is close to one of ``known``, else ``""``."""
    close = difflib.get_close_matches(str(name), sorted(set(known)), n=1, cutoff=0.6)
    return f" (did you mean {close[0]!r}?)" if close else ""
