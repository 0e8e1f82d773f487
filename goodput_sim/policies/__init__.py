"""Scheduling policies, found by name through a registry (``get_policy``)."""

from goodput_sim.policies import (  # noqa: F401
    elastic,
    fifo,
    gavel,
    genetic,
    optimus,
    sia,
    tiresias,
)
from goodput_sim.policies.base import (
    Decision,
    JobView,
    Policy,
    Snapshot,
    get_policy,
    policy_aliases,
    policy_class,
    policy_names,
    policy_plugin,
    register,
)

__all__ = [
    "Decision",
    "JobView",
    "Policy",
    "Snapshot",
    "get_policy",
    "policy_aliases",
    "policy_class",
    "policy_names",
    "policy_plugin",
    "register",
]
