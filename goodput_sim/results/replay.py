"""Replay a run from its results manifest (``goodput-sim run --manifest``): the manifest names
every input (with its sha256), the policy and agent with all their parameter values, the
cluster and the engine settings, so the replay's ``jobs.csv`` equals the original byte for byte.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from goodput_sim.bundled import unmarked
from goodput_sim.errors import InputError
from goodput_sim.inputs.cluster import cluster_from_record
from goodput_sim.inputs.workload import bundled_workload
from goodput_sim.profiles import bundled_profiles_path
from goodput_sim.results.saved import MAX_SEED, file_hash, is_seed, read_manifest
from goodput_sim.spec import config_from_record

if TYPE_CHECKING:
    from goodput_sim.spec import SimConfig

Declared = Callable[[str, str], Iterable[str]]
"""``(role, name)`` -> the parameter names the policy (role ``policy``) or batch agent (role
``agent``) called ``name`` declares, raising InputError for an unknown name
(``api.declared_params``)."""


def replay_arguments(manifest_path: str | Path, declared: Declared) -> dict[str, Any]:
    """Keyword arguments of :func:`goodput_sim.api.run` that reproduce the run of a manifest.

    Inputs are found where the manifest says (relative paths from its folder, else where they
    were when the run was made; ``bundled:<name>`` where this install keeps its data); an input
    moved since is found among the bundled ones by its hash. An input whose content changed is
    an error: the replay would not be one. ``declared`` tells which of the manifest's policy
    and agent entries are parameters (``api.declared_params``)."""
    path = Path(manifest_path)
    manifest = read_manifest(path)
    policy, agent = dict(manifest["policy"]), dict(manifest["agent"])
    cluster = cluster_from_record(manifest["cluster"], path)
    settings = manifest["config"]
    name, agent_name = policy.pop("name"), agent.pop("name")
    seed = policy.pop("seed", manifest.get("seed", 0))
    if not is_seed(seed):
        raise InputError(path, f"expected an integer in [0, {MAX_SEED}], found {seed!r}", "seed")
    params = _recorded_params(path, "policy", declared, name, policy)
    params |= _recorded_params(path, "agent", declared, agent_name, agent)
    return {
        "policy": name,
        "workload": _input(path, "workload", manifest, bundled_workload()),
        "profiles": _input(path, "profiles", manifest, bundled_profiles_path()),
        "cluster": cluster,
        "seed": seed,
        "config": _replayed_config(path, settings),
        "agent": agent_name,
        "params": params,
    }


def _recorded_params(
    path: Path, key: str, declared: Declared, name: str, values: dict
) -> dict[str, Any]:
    """A manifest's parameter values of its policy or agent, as ``--param`` gives them (``key``
    is ``policy`` or ``agent``); other entries describe the run (its optimiser...) and are not
    parameters. The values are checked when the policy is built from them."""
    try:
        names = set(declared(key, name))
    except InputError as error:
        raise InputError(path, error.problem, key) from None
    return {f"{key}.{k}": v for k, v in values.items() if k in names}


def _replayed_config(path: Path, record: object) -> SimConfig:
    """The engine settings a manifest records, rebuilt through their declarations."""
    try:
        return config_from_record(record)
    except InputError as error:
        raise InputError(path, error.problem, error.source) from None


def _input(path: Path, key: str, manifest: dict, bundled: Path) -> Path:
    """The input file or folder ``key`` of a manifest, checked against its recorded hash: a
    bundled one (``bundled:<name>``) where this install keeps it, a relative path from the
    manifest's folder (else where it was when the run was made), an absolute one as it is."""
    named = manifest.get("inputs", {}).get(key)
    if named is None:
        return bundled
    expected = manifest.get("input_sha256", {}).get(key)
    was = manifest.get("inputs_absolute", {}).get(key)
    try:
        shipped = unmarked(named)
    except InputError as error:
        raise InputError(path, f"input {key} {named}: {error.problem}", f"inputs.{key}") from None
    if shipped is not None:
        places = [shipped]
    elif Path(named).is_absolute():
        places = [Path(named)]
    else:  # from the manifest, else where it was, else (older manifests) from here
        places = [path.parent / named, *([Path(was)] if was else []), Path(named)]
    for candidate in places:
        if candidate.exists() and (expected is None or file_hash(candidate) == expected):
            return candidate
    candidate = places[0]
    if expected is not None and bundled.exists() and file_hash(bundled) == expected:
        return bundled
    problem = "changed since the run (sha256 differs)" if candidate.exists() else "is missing"
    raise InputError(path, f"input {key} {named} {problem}; cannot replay", f"inputs.{key}")
