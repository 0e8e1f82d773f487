"""Replay a run from its results manifest (``goodput-sim run --manifest``): the manifest names
every input (with its sha256), the policy and agent with all their parameter values, the
cluster and the engine settings, so the replay's ``jobs.csv`` equals the original byte for byte.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from goodput_sim.agents import agent_class
from goodput_sim.api import bundled_workload, file_hash
from goodput_sim.cluster import ClusterSpec, FailureDomain, NodeGroup
from goodput_sim.engine import SimConfig
from goodput_sim.errors import InputError
from goodput_sim.policies import policy_class
from goodput_sim.profiles import bundled_profiles_path
from goodput_sim.spec import config_from_record


def replay_arguments(manifest_path: str | Path) -> dict[str, Any]:
    """Keyword arguments of :func:`goodput_sim.api.run` that reproduce the run of a manifest.

    Inputs are found where the manifest says (relative paths from its folder); an input moved
    since is found among the bundled ones by its hash. An input whose content changed is an
    error: the replay would not be one."""
    path = Path(manifest_path)
    try:
        manifest = json.loads(path.read_text())
        policy, agent = dict(manifest["policy"]), dict(manifest["agent"])
        groups = tuple(NodeGroup(**g) for g in manifest["cluster"]["groups"])
        domains = tuple(
            FailureDomain(name, **rates)
            for name, rates in manifest["cluster"].get("domains", {}).items()
        )
        settings = manifest["config"]
        hashes = manifest.get("input_sha256", {})
        inputs = manifest["inputs"]
    except (OSError, ValueError, KeyError, TypeError):
        raise InputError(path, "is not a readable results manifest") from None
    name = policy.pop("name")
    seed = int(policy.pop("seed", manifest.get("seed", 0)))
    try:
        declared = {p.name for p in policy_class(name).params}
        agent_declared = {p.name for p in agent_class(agent["name"]).params}
    except InputError as error:
        raise InputError(path, error.problem, "policy") from None
    params = {f"policy.{k}": v for k, v in policy.items() if k in declared}
    params |= {f"agent.{k}": v for k, v in agent.items() if k in agent_declared}
    return {
        "policy": name,
        "workload": _input(path, "workload", inputs, hashes, bundled_workload()),
        "profiles": _input(path, "profiles", inputs, hashes, bundled_profiles_path()),
        "cluster": ClusterSpec(groups, domains=domains),
        "seed": seed,
        "config": _replayed_config(path, settings),
        "agent": agent["name"],
        "params": params,
    }


def _replayed_config(path: Path, record: object) -> SimConfig:
    """The engine settings a manifest records, rebuilt through their declarations."""
    if not isinstance(record, dict):
        raise InputError(path, "is not a readable results manifest", "config")
    try:
        return config_from_record(record)
    except InputError as error:
        raise InputError(path, str(error), "config") from None
    except (AttributeError, TypeError, ValueError):
        raise InputError(path, "holds engine settings this version cannot read", "config") from None


def _input(path: Path, key: str, inputs: dict, hashes: dict, bundled: Path) -> Path:
    """The input file or folder ``key`` of a manifest, checked against its recorded hash."""
    named = inputs.get(key)
    if named is None:
        return bundled
    candidate = Path(named)
    if not candidate.is_absolute():
        candidate = path.parent / candidate
    expected = hashes.get(key)
    if candidate.exists() and (expected is None or file_hash(candidate) == expected):
        return candidate
    if expected is not None and bundled.exists() and file_hash(bundled) == expected:
        return bundled
    problem = "changed since the run (sha256 differs)" if candidate.exists() else "is missing"
    raise InputError(path, f"input {key} {named} {problem}; cannot replay", f"inputs.{key}")
