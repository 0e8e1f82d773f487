"""Objects whose state belongs to one simulation: policies and batch agents.

A policy or agent may learn as a run goes (Gavel's round clock and received service, Sia's
previous configurations, the genetic search's round counter, memoised values keyed by job
names). A simulation binds each such object when it is built: binding returns the object to
its state as constructed (its constructor is run again with its original arguments), so the
same object run twice gives what a fresh object gives. An object still bound to a simulation
that has not started running is refused, so two simulations can never share one state.
"""

from __future__ import annotations

import copy
import weakref
from typing import Any, Protocol


class Owner(Protocol):
    """What binding asks of a simulation: whether it has started running."""

    def has_started(self) -> bool: ...


class SimulationBound:
    """Base of objects bound to one simulation at a time (see the module docstring)."""

    def __new__(cls, *args: Any, **kwargs: Any):
        """Keep the constructor's arguments (copied) so :meth:`bind` can construct afresh."""
        self = super().__new__(cls)
        self.__dict__["_made_with"] = copy.deepcopy((args, kwargs))
        return self

    def bind(self, owner: Owner) -> None:
        """Start a simulation with this object: back to its state as constructed, attributes
        the caller set after construction (say, a wrapped method) kept. ``RuntimeError`` if
        another simulation that has not started running holds it."""
        held = self.__dict__.get("_owner")
        previous = held() if held is not None else None
        if previous is not None and previous is not owner and not previous.has_started():
            raise RuntimeError(
                f"{type(self).__name__} object is already bound to a simulation that has not "
                "run yet; give each simulation its own policy and agent objects (or run the "
                "first before building the next)"
            )
        args, kwargs = copy.deepcopy(self.__dict__["_made_with"])
        self.__init__(*args, **kwargs)
        self.__dict__["_owner"] = weakref.ref(owner)
