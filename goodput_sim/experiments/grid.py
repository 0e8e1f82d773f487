"""Experiment files: one YAML that names a whole grid of runs, for ``goodput-sim sweep FILE``.

::

    name: pollux-load                 # default: the file's stem (also the default --out)
    policies: [fifo, {policy: goodput, agent: fixed, params: {p: -1}}]
    workloads: [../traces/workloads, {generate: {preset: default, jobs: 160}, name: generated}]
    loads: [0.5, 1.0]                 # arrival rate against each workload's own
    seeds: [0, 1]                     # resample generated workloads; seed randomised policies
    clusters: [16x4, cluster-256x4.yaml]
    intervals: [60]                   # seconds between rounds
    profiles: ../traces/profiles      # default: the bundled profiles
    settings:                         # any other engine setting (goodput_sim.spec)
      restart_delay: 30               # one value for every run
      mtbf: [null, 24]                # or a list: an axis of the grid
    variants:                         # optional: named alternatives, one more axis
      fixed-8: {cluster: 8x4}
      utility: {cluster: 8x4, min_nodes: 4, max_nodes: 32, autoscaler: utility}

Every setting of ``goodput-sim run`` (its option names with underscores, and
``autoscaler_params``) may be given; a list makes it an axis. Relative paths are read from the
experiment file's folder. Every key is checked before any run starts; an error names the file
and the key. A key written twice in one mapping is refused (YAML would keep only the last).

``variants`` holds alternatives that are not a product of axes, such as fixed clusters of
several sizes beside autoscaled ones. Each label (1-100 letters, digits, ``.``, ``_``, ``-``)
names a bundle of ``cluster`` and settings, one value each; the variants form one axis, and
what a variant sets replaces ``clusters`` and those ``settings`` for its runs (the other axes
still apply). The label fills the ``variant`` column of ``summary.csv`` and names the run
folders; two variants that would make the same run are refused. Without ``variants`` nothing
changes."""

from __future__ import annotations

import dataclasses
import itertools
import json
import math
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from goodput_sim.api import as_cluster, canonical_params, check_policies
from goodput_sim.errors import InputError
from goodput_sim.experiments.sweep import LABEL, Variant
from goodput_sim.inputs.cluster import ClusterSpec, parse_cluster
from goodput_sim.inputs.safe_yaml import load_yaml
from goodput_sim.inputs.sources import WorkloadSource, checked_generate
from goodput_sim.inputs.workload import MAX_LOAD, check_load
from goodput_sim.plugins import did_you_mean
from goodput_sim.results.saved import MAX_SEED, is_seed
from goodput_sim.sim.budget import MAX_GRID_RUNS
from goodput_sim.spec import BY_NAME, SimConfig, build_config, setting, with_settings

KEYS = {"name", "policies", "workloads", "loads", "seeds", "clusters", "intervals", "profiles"}
KEYS |= {"settings", "variants"}
SETTINGS = sorted(set(BY_NAME) - {"interval"})
"""The keys of ``settings``: every engine setting but the interval (the ``intervals`` axis)."""


@dataclass(frozen=True)
class Experiment:
    """A parsed experiment file: the axes of its grid."""

    name: str
    policies: list[tuple[str, str | None, dict[str, Any]]]
    workloads: list[WorkloadSource]
    loads: list[float] = field(default_factory=lambda: [1.0])
    seeds: list[int] = field(default_factory=lambda: [0])
    clusters: list[ClusterSpec] = field(default_factory=lambda: [ClusterSpec()])
    intervals: list[float] = field(default_factory=lambda: [60.0])
    profiles: str | None = None
    config: SimConfig = SimConfig()  # the settings given one value (at seed 0)
    settings: dict[str, list[Any]] = field(default_factory=dict)  # every setting given
    variants: list[Variant] | None = None  # the variant axis, when the file has one

    @property
    def runs(self) -> int:
        shared = (self.policies, self.workloads, self.loads, self.seeds, self.intervals)
        count = math.prod(len(axis) for axis in shared)
        if self.variants is None:
            own = (self.clusters, *self.settings.values())
            return count * math.prod(len(axis) for axis in own)
        return count * sum(self._variant_runs(v) for v in self.variants)

    def _variant_runs(self, variant: Variant) -> int:
        """Runs of one variant per (policy, workload, load, seed, interval)."""
        clusters = 1 if variant.cluster is not None else len(self.clusters)
        keys = variant.keys
        return clusters * math.prod(len(v) for k, v in self.settings.items() if k not in keys)


def load_experiment(path: str | Path) -> Experiment:
    """Parse and check an experiment file (one-line errors naming the file and key)."""
    path = Path(path)
    if not path.is_file():
        raise InputError(path, "experiment file not found")
    data = load_yaml(path)
    if not isinstance(data, dict):
        raise InputError(path, "expected a mapping of experiment keys")
    unknown = set(data) - KEYS
    if unknown:
        hint = did_you_mean(min(map(str, unknown)), KEYS)
        raise InputError(path, f"unknown key(s) {sorted(unknown)}{hint}; expected {sorted(KEYS)}")
    for key in ("policies", "workloads"):
        if key not in data:
            raise InputError(path, "is required", f"key {key}")
    here = path.parent
    settings = _settings(path, here, data.get("settings", {}))
    clusters = [_cluster(path, here, v) for v in _axis(path, data, "clusters", ["16x4"])]
    if "variants" in data:
        variants = _variants(path, here, data["variants"])
        config = _variant_config(path, settings, clusters, variants)
    else:
        variants, config = None, _config(path, settings, clusters)
    loads = [_load(path, v) for v in _axis(path, data, "loads", [1.0])]
    intervals = [_interval(path, v) for v in _axis(path, data, "intervals", [60.0])]
    policies = [_policy(path, k, e) for k, e in enumerate(_axis(path, data, "policies"))]
    workloads = _workloads(path, here, _axis(path, data, "workloads"))
    _distinct(path, "loads", loads)
    _distinct(path, "intervals", intervals)
    _distinct(path, "clusters", [json.dumps(c.key_record()) for c in clusters])
    _distinct(path, "policies", [json.dumps(p, sort_keys=True, default=str) for p in policies])
    _distinct(path, "workloads", [repr(w) for w in workloads])
    runs = len(policies) * len(workloads) * len(loads) * len(clusters) * len(intervals)
    runs *= len(_axis(path, data, "seeds", [0])) * len(variants or [None])
    if runs > MAX_GRID_RUNS:
        raise InputError(
            path, f"the grid has {runs} runs; at most {MAX_GRID_RUNS} are supported in one sweep"
        )
    return Experiment(
        name=_name(path, data.get("name", path.stem)),
        policies=policies,
        workloads=workloads,
        loads=loads,
        seeds=[_seed(path, v) for v in _axis(path, data, "seeds", [0])],
        clusters=clusters,
        intervals=intervals,
        profiles=_profiles(path, here, data.get("profiles")),
        config=config,
        settings=settings,
        variants=variants,
    )


def _axis(path: Path, data: dict, key: str, default: list | None = None) -> list:
    """A list-valued key: present and non-empty, or its default."""
    if key not in data:
        return list(default or [])
    value = data[key]
    if not isinstance(value, list):
        raise InputError(path, f"must be a list, found {type(value).__name__}", f"key {key}")
    if not value:
        raise InputError(path, "is an empty axis: give at least one value", f"key {key}")
    if len(value) != len({repr(v) for v in value}):
        raise InputError(path, "lists a value twice", f"key {key}")
    return value


_FOLDER_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._+-]{0,99}")


def _distinct(path: Path, key: str, values: list) -> None:
    """An axis whose values, read, are all different (``1`` and ``1.0`` are one load)."""
    seen: dict = {}
    for k, value in enumerate(values):
        if value in seen:
            raise InputError(
                path, f"entries {seen[value]} and {k} are the same value", f"key {key}"
            )
        seen[value] = k


def _name(path: Path, value: object) -> str:
    """The experiment's name, its results folder under results/: one plain folder name."""
    if not isinstance(value, str) or not _FOLDER_NAME.fullmatch(value.strip()):
        raise InputError(
            path,
            f"must be a folder name of letters, digits, '.', '_', '+' or '-' (at most 100, "
            f"starting with a letter or digit), found {value!r}",
            "key name",
        )
    return value.strip()


def _policy(path: Path, k: int, entry: object) -> tuple[str, str | None, dict[str, Any]]:
    """A policy name, or ``{policy, agent, params}``."""
    where = f"key policies[{k}]"
    if isinstance(entry, str):
        return _checked(path, where, entry, None, {})
    if not isinstance(entry, dict) or "policy" not in entry:
        raise InputError(path, "expected a policy name or a mapping with policy", where)
    unknown = set(entry) - {"policy", "agent", "params"}
    if unknown:
        hint = did_you_mean(min(map(str, unknown)), ("policy", "agent", "params"))
        raise InputError(path, f"unknown field(s) {sorted(unknown)}{hint}", where)
    agent, params = entry.get("agent"), entry.get("params", {})
    if not isinstance(entry["policy"], str) or (agent is not None and not isinstance(agent, str)):
        raise InputError(path, "policy and agent must be names", where)
    if not isinstance(params, dict):
        raise InputError(path, "params must be a mapping", where)
    return _checked(path, where, entry["policy"], agent, params)


def _checked(path: Path, where: str, policy: str, agent: str | None, params: dict) -> tuple:
    """The entry, once the policy, agent and parameters are known to exist and fit."""
    try:
        check_policies([policy], agent, params)
        return policy, agent, canonical_params(policy, agent, params)
    except InputError as error:
        raise InputError(path, error.problem, where) from None


def _workloads(path: Path, here: Path, entries: list) -> list[WorkloadSource]:
    """Files, folders of CSVs, or ``{generate: {...}, name: ...}`` entries."""
    sources: list[WorkloadSource] = []
    for k, entry in enumerate(entries):
        where = f"key workloads[{k}]"
        if isinstance(entry, str):
            target = here / entry
            if target.is_dir():
                files = sorted(target.glob("*.csv"))
                if not files:
                    raise InputError(path, f"folder {target} holds no workload CSV", where)
                sources += [WorkloadSource.file(f) for f in files]
            elif target.is_file():
                sources.append(WorkloadSource.file(target))
            else:
                raise InputError(path, f"no workload file or folder at {target}", where)
        elif isinstance(entry, dict) and "generate" in entry:
            unknown = set(entry) - {"generate", "name"}
            if unknown:
                hint = did_you_mean(min(map(str, unknown)), ("generate", "name"))
                raise InputError(path, f"unknown field(s) {sorted(unknown)}{hint}", where)
            settings = entry["generate"]
            if isinstance(settings, dict) and isinstance(settings.get("stats"), str):
                settings = {**settings, "stats": str(here / settings["stats"])}
            name = _name(path, entry.get("name", "generated"))
            sources.append(WorkloadSource(name, None, checked_generate(settings, path, where)))
        else:
            raise InputError(path, "expected a path or a mapping with generate", where)
    names = [s.name for s in sources]
    twice = sorted({n for n in names if names.count(n) > 1})
    if twice:
        raise InputError(path, f"workload name(s) {twice} appear twice", "key workloads")
    return sources


def _as_text(value: object) -> str:
    """A hint for a number YAML read as text: YAML 1.1 reads ``1e9`` and ``1e-3`` as strings (a
    float needs a decimal point, and its exponent a sign: ``1.0e+9``)."""
    if not isinstance(value, str):
        return ""
    try:
        number = float(value)
    except ValueError:
        return ""
    mantissa, e, exponent = value.strip().lower().partition("e")
    if not math.isfinite(number) or not e:
        return ""
    mantissa += "" if "." in mantissa else ".0"
    exponent = exponent if exponent[:1] in "+-" else "+" + exponent
    return f" (YAML reads {value} as text; write {mantissa}e{exponent})"


def _number(path: Path, key: str, value: object, positive: bool = False) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise InputError(path, f"expected numbers, found {value!r}{_as_text(value)}", f"key {key}")
    if positive and not value > 0:
        raise InputError(path, f"expected positive numbers, found {value!r}", f"key {key}")
    return float(value)


def _seed(path: Path, value: object) -> int:
    if not is_seed(value):
        raise InputError(
            path, f"expected integers in [0, {MAX_SEED}], found {value!r}", "key seeds"
        )
    return value


def _load(path: Path, value: object) -> float:
    """A ``loads`` entry: a number in (0, MAX_LOAD]."""
    try:
        return check_load(value)
    except InputError:
        raise InputError(
            path,
            f"expected loads in (0, {MAX_LOAD:g}], found {value!r}{_as_text(value)}",
            "key loads",
        ) from None


def _interval(path: Path, value: object) -> float:
    """An ``intervals`` entry: a number within the ``interval`` setting's declared range."""
    number = _number(path, "intervals", value, positive=True)
    declared = setting("interval")
    if not declared.in_range(number):
        raise InputError(path, f"expected {declared.expected()}, found {value!r}", "key intervals")
    return number


def _cluster(path: Path, here: Path, value: object) -> ClusterSpec:
    if not isinstance(value, str):
        raise InputError(
            path, f"expected NODESxGPUS or a YAML file, found {value!r}", "key clusters"
        )
    local = here / value
    if local.is_file():
        return parse_cluster(local)  # its errors name the cluster file
    try:
        return parse_cluster(value)
    except InputError as error:
        raise InputError(path, error.problem, "key clusters") from None


def _profiles(path: Path, here: Path, value: object) -> str | None:
    if value is None:
        return None
    if not isinstance(value, str) or not value.strip() or not (here / value).exists():
        raise InputError(path, f"no profiles at {value!r}", "key profiles")
    return str(here / value)


def _settings(path: Path, here: Path, settings: object) -> dict[str, list[Any]]:
    """The engine settings of the ``settings`` key, each as its list of values (one unless it
    is an axis), converted and checked against its declaration."""
    if not isinstance(settings, dict):
        raise InputError(path, "must be a mapping", "key settings")
    unknown = set(settings) - set(SETTINGS)
    if unknown:
        hint = "; the interval is swept by the intervals key" if "interval" in unknown else ""
        raise InputError(
            path,
            f"unknown setting(s) {sorted(unknown)}; expected {SETTINGS}{hint}",
            "key settings",
        )
    out = {}
    for key, value in settings.items():
        where = f"key settings.{key}"
        values = value if isinstance(value, list) else [value]
        if not values:
            raise InputError(path, "is an empty axis: give at least one value", where)
        if len(values) != len({repr(v) for v in values}):
            raise InputError(path, "lists a value twice", where)
        out[key] = [_converted(path, here, key, v, where) for v in values]
    return out


def _converted(path: Path, here: Path, key: str, value: object, where: str) -> Any:
    """One value of setting ``key``, converted and checked (an error naming ``where``)."""
    try:
        return BY_NAME[key].convert(_located(here, key, value))
    except InputError as error:
        hint = _as_text(value) if BY_NAME[key].kind in (int, float) else ""
        raise InputError(path, error.problem + hint, where) from None


def _located(here: Path, key: str, value: object) -> object:
    """A failure trace's path read from the experiment file's folder (checked to exist)."""
    if BY_NAME[key].kind is not Path or not isinstance(value, str):
        return value
    target = here / value
    if not target.is_file():
        raise InputError(None, f"no failure trace at {target}")
    return str(target)


def _config(path: Path, settings: dict[str, list[Any]], clusters: list[ClusterSpec]) -> SimConfig:
    """The settings given one value, as a SimConfig; every combination of the axes is built
    once on every cluster, so a bad combination is reported before any run starts."""
    fixed = {k: v[0] for k, v in settings.items() if len(v) == 1}
    swept = {k: v for k, v in settings.items() if len(v) > 1}
    try:
        config = build_config(fixed, nodes=min(c.nodes for c in clusters))
        for values in itertools.product(*swept.values()):
            for cluster in clusters:
                combo = {**fixed, **dict(zip(swept, values, strict=True))}
                as_cluster(cluster, with_settings(config, combo, nodes=cluster.nodes))
    except (ValueError, InputError) as error:
        raise InputError(path, str(error), "key settings") from None
    return config


def _variants(path: Path, here: Path, value: object) -> list[Variant]:
    """The ``variants`` mapping: label -> ``{cluster, setting: value...}``, one value each."""
    if not isinstance(value, dict):
        raise InputError(path, "must be a mapping of label to settings", "key variants")
    if not value:
        raise InputError(path, "is an empty axis: give at least one variant", "key variants")
    known = ["cluster", *SETTINGS]
    out = []
    for label, bundle in value.items():
        where = f"key variants.{_shown(label)}"
        if not isinstance(label, str) or not LABEL.fullmatch(label):
            raise InputError(
                path,
                "a label must be 1-100 letters, digits, '.', '_' or '-', starting with a "
                "letter or digit (quote numbers)",
                where,
            )
        where = f"key variants.{label}"
        if bundle is None:
            bundle = {}
        if not isinstance(bundle, dict):
            raise InputError(path, "must be a mapping of cluster and settings", where)
        unknown = sorted(set(bundle) - set(known))
        if unknown:
            hint = "; the interval is swept by the intervals key" if "interval" in unknown else ""
            guess = did_you_mean(str(unknown[0]), known) if not hint else ""
            raise InputError(
                path, f"unknown key(s) {unknown}{guess}; expected {known}{hint}", where
            )
        for key, item in bundle.items():
            if isinstance(item, list):
                raise InputError(
                    path, "takes one value per variant; sweep a list in settings", f"{where}.{key}"
                )
        cluster = None
        if "cluster" in bundle:
            cluster = _variant_cluster(path, here, bundle["cluster"], f"{where}.cluster")
        settings = {}
        for key, item in bundle.items():
            if key != "cluster":
                settings[key] = _converted(path, here, key, item, f"{where}.{key}")
        out.append(Variant.of(label, cluster, **settings))
    return out


def _shown(label: object) -> str:
    """A label as an error shows it: on one line, at most 40 characters and an ellipsis."""
    text = str(label)
    text = text if len(text) <= 40 else text[:40] + "..."
    return text if text.isprintable() else repr(text)


def _variant_cluster(path: Path, here: Path, value: object, where: str) -> ClusterSpec:
    """A variant's cluster: ``NODESxGPUS`` or a YAML file beside the experiment file."""
    if not isinstance(value, str):
        raise InputError(path, f"expected NODESxGPUS or a YAML file, found {value!r}", where)
    local = here / value
    try:
        return parse_cluster(local if local.is_file() else value)
    except InputError as error:
        raise InputError(path, error.problem, where) from None


def _variant_config(
    path: Path,
    settings: dict[str, list[Any]],
    clusters: list[ClusterSpec],
    variants: list[Variant],
) -> SimConfig:
    """The config shared by every run of a file with variants (its single-valued settings of
    SimConfig's own; failure and autoscaling groups are whole only within a variant), after
    every variant's every combination is built on each of its clusters; two variants that
    would make the same run are refused."""
    owner: dict[str, str] = {}
    for variant in variants:
        where = f"key variants.{variant.label}"
        given = {**settings, **{k: [v] for k, v in variant.settings}}
        fixed = {k: v[0] for k, v in given.items() if len(v) == 1}
        swept = {k: v for k, v in given.items() if len(v) > 1}
        own = [variant.cluster] if variant.cluster is not None else clusters
        for values in itertools.product(*swept.values()):
            combo = {**fixed, **dict(zip(swept, values, strict=True))}
            for cluster in own:
                try:
                    config = build_config(combo, nodes=cluster.nodes)
                    as_cluster(cluster, config)
                except (ValueError, InputError) as error:
                    problem = error.problem if isinstance(error, InputError) else str(error)
                    raise InputError(path, problem, where) from None
                text = json.dumps(
                    [[dataclasses.asdict(g) for g in cluster.groups], dataclasses.asdict(config)],
                    sort_keys=True,
                    default=str,
                )
                first = owner.setdefault(text, variant.label)
                if first != variant.label:
                    raise InputError(
                        path,
                        f"makes the same runs as variant {first!r} (same cluster and "
                        "settings); give it different settings or drop one",
                        where,
                    )
    shared = {k: v[0] for k, v in settings.items() if len(v) == 1 and BY_NAME[k].group is None}
    try:
        return build_config(shared)
    except (ValueError, InputError) as error:
        raise InputError(path, str(error), "key settings") from None
