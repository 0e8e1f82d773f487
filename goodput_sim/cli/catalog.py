"""What is registered, as data: every policy (aliases, default agent, parameters), every
batch agent and every dynamic, built in or installed by a plugin (:mod:`goodput_sim.plugins`),
for ``goodput-sim policies`` and for readers of results."""

from __future__ import annotations

from goodput_sim.agents import agent_class, agent_names, agent_plugin
from goodput_sim.autoscale import AUTOSCALERS
from goodput_sim.params import Param
from goodput_sim.policies import policy_aliases, policy_class, policy_names, policy_plugin
from goodput_sim.sim.dynamics import DYNAMICS, dynamic_plugin, plugin_dynamics


def _summary(obj: object) -> str:
    """The first paragraph of a docstring, on one line."""
    paragraph = (obj.__doc__ or "").strip().split("\n\n")[0]
    return " ".join(paragraph.split())


def _params(declared: tuple[Param, ...]) -> list[dict]:
    return [
        {"name": p.name, "default": p.default, "range": p.describe_range(), "help": p.help}
        for p in declared
    ]


def catalog() -> dict:
    """Policies, agents, autoscalers and dynamics with their declarations; ``plugin`` names
    the distribution that installed one (None: built in)."""
    policies = {}
    for name in policy_names():
        cls = policy_class(name)
        policies[name] = {
            "summary": _summary(cls),
            "aliases": policy_aliases(name),
            "default_agent": cls.default_agent,
            "oracle": cls.needs_oracle,
            "params": _params(cls.params),
            "plugin": policy_plugin(name),
        }
    agents = {}
    for name in agent_names():
        cls = agent_class(name)
        agents[name] = {
            "summary": _summary(cls),
            "params": _params(cls.params),
            "plugin": agent_plugin(name),
        }
    autoscalers = {
        name: {"summary": _summary(cls), "params": _params(cls.params)}
        for name, cls in AUTOSCALERS.items()
    }
    dynamics = {
        name: {"summary": _summary(factory), "params": [], "plugin": None, "opt_in": False}
        for name, factory in DYNAMICS.items()
    }
    for name, cls in plugin_dynamics().items():
        dynamics[name] = {
            "summary": _summary(cls),
            "params": _params(cls.params),
            "plugin": dynamic_plugin(name),
            "opt_in": True,
        }
    return {
        "policies": policies,
        "agents": agents,
        "autoscalers": autoscalers,
        "dynamics": dynamics,
    }


def catalog_text() -> str:
    """:func:`catalog` as plain text, nothing truncated."""
    data = catalog()
    lines = ["policies:"]
    for name, entry in data["policies"].items():
        aliases = f" (aliases: {', '.join(entry['aliases'])})" if entry["aliases"] else ""
        lines.append(f"  {name}{aliases}: {entry['summary']}")
        lines += _plugin_line(entry)
        lines.append(f"    default agent: {entry['default_agent']}")
        lines += _param_lines(entry["params"])
    lines.append("agents:")
    for name, entry in data["agents"].items():
        lines.append(f"  {name}: {entry['summary']}")
        lines += _plugin_line(entry)
        lines += _param_lines(entry["params"])
    lines.append("autoscalers (--autoscaler NAME with --min-nodes and --max-nodes):")
    for name, entry in data["autoscalers"].items():
        lines.append(f"  {name}: {entry['summary']}")
        lines += [
            line.replace("--param ", "--param autoscaler.")
            for line in _param_lines(entry["params"])
        ]
    lines.append(
        "dynamics (built in: on when a run's settings ask; installed: when a run names them, "
        "api.run(..., dynamics=[named_dynamic(NAME, {KEY: VALUE})])):"
    )
    for name, entry in data["dynamics"].items():
        lines.append(f"  {name}: {entry['summary']}")
        lines += _plugin_line(entry)
        lines += [
            f"    {p['name']}={p['default']}  ({p['range']}) {p['help']}" for p in entry["params"]
        ]
    lines.append("set parameters with --param KEY=VALUE (policy.KEY or agent.KEY if ambiguous)")
    return "\n".join(lines)


def _plugin_line(entry: dict) -> list[str]:
    return [f"    installed by {entry['plugin']}"] if entry["plugin"] else []


def _param_lines(params: list[dict]) -> list[str]:
    return [f"    --param {p['name']}={p['default']}  ({p['range']}) {p['help']}" for p in params]
