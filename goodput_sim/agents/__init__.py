"""Batch agents: each job's choice of per-GPU batch and accumulation (``get_agent``)."""

from goodput_sim.agents import adaptive, critical, fixed, tail  # noqa: F401
from goodput_sim.agents.base import (
    BatchAgent,
    BatchPlan,
    agent_class,
    agent_names,
    agent_plugin,
    fixed_configs,
    get_agent,
    register_agent,
)

__all__ = [
    "BatchAgent",
    "BatchPlan",
    "agent_class",
    "agent_names",
    "agent_plugin",
    "fixed_configs",
    "get_agent",
    "register_agent",
]
