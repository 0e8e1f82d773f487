"""The cluster as data (GPU capacity, GPU type and up/down state per node) and the allocation
representation (GPUs of a job on each node)."""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field, fields, replace
from functools import cached_property
from pathlib import Path

import numpy as np
from numpy.typing import NDArray

from goodput_sim.errors import InputError
from goodput_sim.inputs.safe_yaml import load_yaml
from goodput_sim.plugins import did_you_mean

_SHAPE = re.compile(r"^\s*([0-9]+)\s*[xX]\s*([0-9]+)\s*$")
DEFAULT_GPU_TYPE = "T4"  # the Pollux testbed's GPU, which the bundled profiles describe


@dataclass(frozen=True)
class NodeGroup:
    """``nodes`` identical machines with ``gpus_per_node`` GPUs of ``gpu_type`` each, and how
    they fail and what they cost (every such field optional: None or False is "as the run says"
    or "not at all")."""

    nodes: int
    gpus_per_node: int
    gpu_type: str = DEFAULT_GPU_TYPE
    domain: str | None = None  # the failure domain (rack, power domain) its nodes belong to
    mtbf_hours: float | None = None  # its nodes' own mean hours between failures (--mtbf)
    repair_hours: float | None = None  # their own repair time (--repair-hours)
    price: float | None = None  # per node-hour (None: the autoscaler's --node-price)
    preemptible: bool = False  # spot capacity: reclaimed by the provider, with a warning
    preemption_hours: float | None = None  # mean hours between reclaims of a node (None: never)
    preempted_hours: float = 1.0  # hours a reclaimed node stays away
    warning_seconds: float = 0.0  # notice before a reclaim, in which a job may save
    min_nodes: int | None = None  # autoscaling: nodes of this group always provisioned
    max_nodes: int | None = None  # autoscaling: the group's nodes in the pool (None: nodes)

    @property
    def bounded(self) -> bool:
        """Whether the group declares its own autoscaling bounds."""
        return self.min_nodes is not None or self.max_nodes is not None

    def describe(self) -> dict:
        """The group as data: its shape and type, and the other fields only where set (so a
        plain group reads as before, in manifests and run keys alike)."""
        out = {"nodes": self.nodes, "gpus_per_node": self.gpus_per_node, "gpu_type": self.gpu_type}
        for name, default in _OPTIONAL_DEFAULTS.items():
            value = getattr(self, name)
            if value != default:
                out[name] = value
        return out


@dataclass(frozen=True)
class FailureDomain:
    """Nodes that fail together (a rack's switch, a power domain): every node of the groups
    naming it goes down at each of its failures, for its repair time."""

    name: str
    mtbf_hours: float | None = None  # None: it fails only where a failure trace names it
    repair_hours: float = 1.0


@dataclass(frozen=True)
class ClusterSpec:
    """A cluster described per node: GPU capacity, GPU type and whether the node is up.

    Nodes are numbered group after group. Every capacity check reads the per-node vectors; the
    scalar properties summarise them. ``offline`` nodes (failed, or not provisioned by the
    autoscaler) keep their place in the numbering but offer no GPUs."""

    groups: tuple[NodeGroup, ...] = (NodeGroup(16, 4),)
    offline: frozenset[int] = frozenset()
    source: str | None = field(default=None, compare=False)  # the file it was read from
    domains: tuple[FailureDomain, ...] = ()  # failure domains the groups name

    @classmethod
    def uniform(cls, nodes: int, gpus_per_node: int, gpu_type: str = DEFAULT_GPU_TYPE):
        """``nodes`` x ``gpus_per_node`` GPUs of one type: the ``16x4`` shorthand."""
        return cls((NodeGroup(nodes, gpus_per_node, gpu_type),))

    @cached_property
    def capacity(self) -> NDArray[np.int64]:
        """GPUs on each node (read-only)."""
        out = np.concatenate(
            [np.full(g.nodes, g.gpus_per_node, dtype=np.int64) for g in self.groups]
        )
        if self.offline:
            out[list(self.offline)] = 0
        out.flags.writeable = False
        return out

    @cached_property
    def gpu_types(self) -> tuple[str, ...]:
        """GPU type of each node."""
        return tuple(g.gpu_type for g in self.groups for _ in range(g.nodes))

    @cached_property
    def up(self) -> NDArray[np.bool_]:
        """Whether each node is up (read-only)."""
        out = np.ones(self.nodes, dtype=bool)
        if self.offline:
            out[list(self.offline)] = False
        out.flags.writeable = False
        return out

    def with_offline(self, nodes: Iterable[int]) -> ClusterSpec:
        """The same machines with ``nodes`` offline (the live view a round's policy sees)."""
        offline = frozenset(int(n) for n in nodes)
        return self if offline == self.offline else replace(self, offline=offline)

    @cached_property
    def node_groups(self) -> tuple[NodeGroup, ...]:
        """The group of each node."""
        return tuple(g for g in self.groups for _ in range(g.nodes))

    @cached_property
    def node_group_index(self) -> NDArray[np.int64]:
        """Index in ``groups`` of each node's group (read-only)."""
        out = np.repeat(np.arange(len(self.groups)), [g.nodes for g in self.groups])
        out.flags.writeable = False
        return out

    def domain_nodes(self, name: str) -> tuple[int, ...]:
        """The nodes of failure domain ``name``, in node order."""
        return tuple(n for n, g in enumerate(self.node_groups) if g.domain == name)

    @property
    def declares_failures(self) -> bool:
        """Whether the cluster itself makes nodes fail or go: failure domains, a group's own
        MTBF, or preemptible groups with a reclaim rate."""
        return any(d.mtbf_hours is not None for d in self.domains) or any(
            g.mtbf_hours is not None or g.preemption_hours is not None for g in self.groups
        )

    def without_failures(self) -> ClusterSpec:
        """The same machines, prices and spot groups, with no failure or reclaim rate of its
        own: the failure-free twin of a run."""
        if not self.declares_failures:
            return self
        groups = tuple(replace(g, mtbf_hours=None, preemption_hours=None) for g in self.groups)
        domains = tuple(replace(d, mtbf_hours=None) for d in self.domains)
        return replace(self, groups=groups, domains=domains)

    @property
    def group_bounds(self) -> bool:
        """Whether some group declares its own autoscaling bounds (min_nodes, max_nodes)."""
        return any(g.bounded for g in self.groups)

    @property
    def priced(self) -> bool:
        """Whether some group has a price or is preemptible (cost is then reported by kind)."""
        return any(g.price is not None or g.preemptible for g in self.groups)

    @cached_property
    def type_order(self) -> tuple[str, ...]:
        """The cluster's GPU types in the order their groups first appear."""
        return tuple(dict.fromkeys(g.gpu_type for g in self.groups))

    @cached_property
    def node_type_index(self) -> NDArray[np.int64]:
        """Index in ``type_order`` of each node's GPU type (read-only)."""
        order = {t: k for k, t in enumerate(self.type_order)}
        out = np.array([order[t] for t in self.gpu_types], dtype=np.int64)
        out.flags.writeable = False
        return out

    @property
    def mixed(self) -> bool:
        return len(self.type_order) > 1

    def type_capacity(self) -> NDArray[np.int64]:
        """GPUs up of each type, in ``type_order``."""
        return np.bincount(
            self.node_type_index, weights=self.capacity, minlength=len(self.type_order)
        ).astype(np.int64)

    @cached_property
    def largest_node(self) -> int:
        """GPUs of the largest node up (0 if none is): the most GPUs one node can give a job."""
        return int(self.capacity.max()) if self.nodes else 0

    @cached_property
    def nodes_up(self) -> int:
        """Nodes offering GPUs."""
        return int(np.count_nonzero(self.capacity))

    @cached_property
    def _descending(self) -> NDArray[np.int64]:
        """GPUs of the nodes up, largest first."""
        return np.sort(self.capacity[self.capacity > 0])[::-1]

    @cached_property
    def _filled(self) -> NDArray[np.int64]:
        """GPUs of the first k nodes of :attr:`_descending`, for k = 1, 2, ..."""
        return np.cumsum(self._descending)

    def packed_node_counts(self, replicas: NDArray[np.int64]) -> NDArray[np.int64]:
        """Nodes of each ``packed_layout`` of ``replicas`` (>= 1) GPUs, for many at once."""
        sizes, filled = self._descending, self._filled
        if not sizes.size:
            raise ValueError("no node is up")
        replicas = np.asarray(replicas, dtype=np.int64)
        within = np.searchsorted(filled, replicas) + 1
        beyond = len(sizes) - (-(replicas - filled[-1]) // sizes[0])
        return np.where(replicas > filled[-1], beyond, within)

    def packed_layout(self, replicas: int) -> tuple[int, ...]:
        """GPUs per node of ``replicas`` GPUs on the fewest nodes up, the largest filled first
        (past the cluster's GPUs, on more nodes like its largest): the placement a job of that
        size gets at best, e.g. 12 on nodes of 8, 4 and 2 GPUs -> (8, 4). Memoised per cluster
        (policies ask for the same few sizes every round)."""
        layout = self._layouts.get(replicas)
        if layout is None:
            layout = self._layouts[replicas] = self._packed_layout(int(replicas))
        return layout

    @cached_property
    def _layouts(self) -> dict[int, tuple[int, ...]]:
        return {}

    def _packed_layout(self, replicas: int) -> tuple[int, ...]:
        sizes = self._descending
        if replicas <= 0:
            return ()
        if not sizes.size:
            raise ValueError("no node is up")
        filled = self._filled
        if replicas > filled[-1]:
            rest = packed_placement(int(replicas - filled[-1]), int(sizes[0]))
            return tuple(int(g) for g in sizes) + rest
        count = int(np.searchsorted(filled, replicas)) + 1
        last = int(replicas - (filled[count - 2] if count > 1 else 0))
        return (*(int(g) for g in sizes[: count - 1]), last)

    @cached_property
    def nodes(self) -> int:
        return sum(g.nodes for g in self.groups)

    @property
    def gpus_per_node(self) -> int:
        """GPUs of the largest node of any group (all nodes on a uniform cluster), for display;
        simulation code reads the per-node ``capacity`` (``largest_node``, ``packed_layout``)."""
        return max(g.gpus_per_node for g in self.groups)

    @cached_property
    def total_gpus(self) -> int:
        return int(self.capacity.sum())

    @property
    def max_job_gpus(self) -> int:
        """The most GPUs one job can hold: all of them, or on a mixed cluster those of its
        largest GPU type (a job never spans two types)."""
        return int(self.type_capacity().max()) if self.mixed else self.total_gpus

    @property
    def gpu_type(self) -> str:
        """The cluster's first GPU type (its only one unless ``mixed``)."""
        return self.groups[0].gpu_type

    def describe(self) -> dict:
        """The cluster for the results manifest (every machine, online or not)."""
        return {
            "nodes": self.nodes,
            "gpus_per_node": self.gpus_per_node,
            "total_gpus": self.total_gpus,
            "gpu_type": self.gpu_type,
            "groups": [g.describe() for g in self.groups],
            **({"domains": self._domains_record()} if self.domains else {}),
        }

    def _domains_record(self) -> dict:
        return {
            d.name: {"mtbf_hours": d.mtbf_hours, "repair_hours": d.repair_hours}
            for d in self.domains
        }

    def key_record(self) -> list:
        """What a run key holds of the cluster: every group as data, then its domains."""
        groups = [g.describe() for g in self.groups]
        return [*groups, {"domains": self._domains_record()}] if self.domains else groups

    def __str__(self) -> str:
        return "+".join(f"{g.nodes}x{g.gpus_per_node}" for g in self.groups)


# Bounds that keep the per-node arrays and the simulation finite.
_MAX_NODES, _MAX_GPUS_PER_NODE, _MAX_GPUS = 100_000, 1024, 1_048_576
_GROUP_FIELDS = {"nodes": int, "gpus_per_node": int, "gpu_type": str}
_HOURS = (1e-3, 87_600.0)  # an hour's thousandth to ten years
_OPTIONAL_FIELDS = {  # field: (kind, low, high); bool fields take true or false
    "domain": (str, None, None),
    "mtbf_hours": (float, *_HOURS),
    "repair_hours": (float, *_HOURS),
    "price": (float, 0.0, 1e6),
    "preemptible": (bool, None, None),
    "preemption_hours": (float, *_HOURS),
    "preempted_hours": (float, *_HOURS),
    "warning_seconds": (float, 0.0, 86_400.0),
    "min_nodes": (int, 0, 100_000),
    "max_nodes": (int, 1, 100_000),
}
_OPTIONAL_DEFAULTS = {f.name: f.default for f in fields(NodeGroup) if f.name in _OPTIONAL_FIELDS}
_SPOT_ONLY = ("preemption_hours", "preempted_hours", "warning_seconds")
_DOMAIN_FIELDS = {"mtbf_hours", "repair_hours"}


def parse_cluster(text: str | Path) -> ClusterSpec:
    """A cluster from ``NODESxGPUS`` (e.g. ``16x4``) or a YAML file: one group (``nodes``,
    ``gpus_per_node``, ``gpu_type`` and the optional fields of :class:`NodeGroup`) or a list of
    them under ``groups``, with failure ``domains`` (name: ``mtbf_hours``, ``repair_hours``)
    beside them, optionally inside a top-level ``cluster`` mapping."""
    match = _SHAPE.match(str(text))
    if match:
        group = _checked_group(
            {"nodes": int(match.group(1)), "gpus_per_node": int(match.group(2))}, "--cluster", ""
        )
        return ClusterSpec((group,))
    path = Path(text)
    if not path.is_file():
        raise InputError(
            "--cluster", f"expected NODESxGPUS (e.g. 16x4) or a YAML file, got {text!r}"
        )
    data = load_yaml(path)
    if isinstance(data, dict) and "cluster" in data:
        data = data["cluster"]
    if not isinstance(data, dict):
        raise InputError(path, "expected a mapping with nodes and gpus_per_node, or groups")
    if "groups" in data:
        extra = set(data) - {"groups", "domains", "scale"}
        if extra:
            hint = did_you_mean(min(map(str, extra)), ("groups", "domains", "scale"))
            raise InputError(path, f"unknown field(s) {sorted(extra)} beside groups{hint}")
        entries = data["groups"]
        if not isinstance(entries, list) or not entries:
            raise InputError(path, "must be a non-empty list of node groups", where="field groups")
        groups = [_checked_group(e, path, f"groups[{k}].") for k, e in enumerate(entries)]
        groups = _scaled(groups, data.get("scale", 1), path)
    else:
        groups = [_checked_group(data, path, "")]
    _checked_total(groups, path)
    domains = _checked_domains(data.get("domains", {}) if "groups" in data else {}, path, groups)
    return ClusterSpec(tuple(groups), source=str(path), domains=domains)


def cluster_from_record(record: object, source: str | Path) -> ClusterSpec:
    """The cluster a results manifest records (``ClusterSpec.describe``), checked as a cluster
    file is: its groups (shape, type, optional fields) and failure domains."""
    if not isinstance(record, dict):
        raise InputError(source, "expected an object with groups", "cluster")
    entries = record.get("groups")
    if not isinstance(entries, list) or not entries:
        raise InputError(source, "must be a non-empty list of node groups", "cluster.groups")
    groups = [_checked_group(e, source, f"cluster.groups[{k}].") for k, e in enumerate(entries)]
    _checked_total(groups, source)
    domains = _checked_domains(record.get("domains", {}), source, groups)
    return ClusterSpec(tuple(groups), domains=domains)


def _checked_total(groups: list[NodeGroup], source: str | Path) -> None:
    """The whole cluster within the stated bounds: at most _MAX_NODES nodes and _MAX_GPUS GPUs
    over all its groups (a cluster's per-node arrays and placement loops grow with them)."""
    nodes = sum(g.nodes for g in groups)
    gpus = sum(g.nodes * g.gpus_per_node for g in groups)
    if nodes > _MAX_NODES or gpus > _MAX_GPUS:
        raise InputError(
            source,
            f"{nodes} nodes and {gpus} GPUs in all; at most {_MAX_NODES} nodes and {_MAX_GPUS} "
            "GPUs are supported",
        )


def _scaled(groups: list[NodeGroup], scale: object, path: Path) -> list[NodeGroup]:
    """Every group with ``scale`` times its nodes (the Sia artifact's ``--cluster_scale``, for
    its ``scale_Kx`` workloads), autoscaling bounds included."""
    if isinstance(scale, bool) or not isinstance(scale, int) or not 1 <= scale <= 1000:
        raise InputError(
            path, f"must be an integer in [1, 1000], found {scale!r}", where="field scale"
        )
    if scale == 1:
        return groups
    out = []
    for k, g in enumerate(groups):
        if g.nodes * scale > _MAX_NODES:
            raise InputError(
                path,
                f"{g.nodes} nodes x scale {scale} exceeds {_MAX_NODES} nodes",
                where=f"field groups[{k}].nodes",
            )
        out.append(
            replace(
                g,
                nodes=g.nodes * scale,
                min_nodes=None if g.min_nodes is None else g.min_nodes * scale,
                max_nodes=None if g.max_nodes is None else g.max_nodes * scale,
            )
        )
    return out


def _checked_group(data: object, source: str | Path, prefix: str) -> NodeGroup:
    """One node group from a mapping, every field checked (one-line errors)."""
    if not isinstance(data, dict):
        raise InputError(source, "expected a mapping with nodes and gpus_per_node", where=prefix)
    known = [*_GROUP_FIELDS, *_OPTIONAL_FIELDS]
    unknown = set(data) - set(known)
    if unknown:
        raise InputError(
            source,
            f"unknown field(s) {sorted(unknown)}{did_you_mean(min(map(str, unknown)), known)}; "
            f"expected {sorted(known)}",
            where=f"field {prefix.rstrip('.')}" if prefix else None,
        )
    limits = {"nodes": _MAX_NODES, "gpus_per_node": _MAX_GPUS_PER_NODE}
    values = {}
    for key, kind in _GROUP_FIELDS.items():
        where = f"field {prefix}{key}" if source != "--cluster" else key
        if key not in data:
            if kind is int:
                raise InputError(source, "is required", where=where)
            continue
        value = data[key]
        if kind is int:
            if not isinstance(value, int) or isinstance(value, bool) or value < 1:
                raise InputError(source, f"must be a positive integer, found {value!r}", where)
            if value > limits[key]:
                raise InputError(source, f"at most {limits[key]} supported, found {value}", where)
        elif not isinstance(value, str) or not value.strip():
            raise InputError(source, f"must be a GPU type name, found {value!r}", where)
        values[key] = kind(value)
    for key in _OPTIONAL_FIELDS:
        if key in data:
            values[key] = _optional_field(data[key], key, source, f"field {prefix}{key}")
    low, high = values.get("min_nodes"), values.get("max_nodes")
    if low is not None and low > (high if high is not None else values["nodes"]):
        raise InputError(
            source, "exceeds the group's max_nodes (or nodes)", f"field {prefix}min_nodes"
        )
    if not values.get("preemptible"):
        for key in _SPOT_ONLY:
            if key in values:
                raise InputError(
                    source,
                    "applies to preemptible groups only (preemptible: true)",
                    f"field {prefix}{key}",
                )
    return NodeGroup(**values)


def _optional_field(value: object, key: str, source: str | Path, where: str) -> object:
    """An optional group or domain field, checked against its kind and range."""
    kind, low, high = _OPTIONAL_FIELDS[key]
    if kind is bool:
        if not isinstance(value, bool):
            raise InputError(source, f"must be true or false, found {value!r}", where)
        return value
    if kind is str:
        if not isinstance(value, str) or not NAME.match(value):
            raise InputError(
                source,
                f"must be a name of letters, digits, '.', '_' or '-', found {value!r}",
                where,
            )
        return value
    if kind is int:
        if not isinstance(value, int) or isinstance(value, bool) or not low <= value <= high:
            raise InputError(
                source, f"must be a whole number in [{low}, {high}], found {value!r}", where
            )
        return value
    number = isinstance(value, int | float) and not isinstance(value, bool)
    if not number or not (low <= value <= high):
        what = "positive hours" if key.endswith("_hours") else key.replace("_", " ")
        raise InputError(source, f"must be {what} in [{low:g}, {high:g}], found {value!r}", where)
    return float(value)


NAME = re.compile(r"^[A-Za-z][A-Za-z0-9._-]*$")
"""A failure domain's name: a letter, then letters, digits, '.', '_' or '-' (so a failure
trace tells it from a node id)."""


def _checked_domains(
    data: object, source: str | Path, groups: list[NodeGroup]
) -> tuple[FailureDomain, ...]:
    """The ``domains`` mapping (name: ``mtbf_hours``, optional ``repair_hours``): each named by
    some group, and every group's domain declared here."""
    if not isinstance(data, dict):
        raise InputError(source, "must be a mapping of domain name to its rates", "field domains")
    out = []
    for name, given in data.items():
        where = f"field domains.{name}"
        _optional_field(name, "domain", source, where)
        given = {} if given is None else given
        if not isinstance(given, dict):
            raise InputError(source, "must be a mapping of mtbf_hours and repair_hours", where)
        unknown = set(given) - _DOMAIN_FIELDS
        if unknown:
            raise InputError(
                source,
                f"unknown field(s) {sorted(unknown)}"
                f"{did_you_mean(min(map(str, unknown)), _DOMAIN_FIELDS)}; "
                f"expected {sorted(_DOMAIN_FIELDS)}",
                where,
            )
        rates = {k: _optional_field(v, k, source, f"{where}.{k}") for k, v in given.items()}
        if not any(g.domain == name for g in groups):
            raise InputError(source, "no group names this domain", where)
        out.append(FailureDomain(name, **rates))
    for k, group in enumerate(groups):
        if group.domain is not None and group.domain not in data:
            raise InputError(
                source,
                f"domain {group.domain!r} is not declared under domains",
                f"field groups[{k}].domain",
            )
    return tuple(out)


def check_gpu_types(cluster: ClusterSpec, profiles: Mapping, applications) -> None:
    """Refuse a cluster whose GPU types some application of the workload has no profile for:
    single-type profiles are the Pollux testbed's T4s; typed profiles name their types."""
    source = cluster.source or "--cluster"
    for app in sorted(set(applications)):
        known = getattr(profiles[app], "gpu_types", (DEFAULT_GPU_TYPE,))
        missing = [t for t in cluster.type_order if t not in known]
        if missing and cluster.mixed and len(known) == 1:
            raise InputError(
                source,
                f"mixes GPU types {sorted(cluster.type_order)}, but the {app!r} profile is of "
                f"one type ({known[0]}); give profiles by GPU type (see traces/profiles-sia)",
            )
        if missing:
            raise InputError(
                source,
                f"GPU type {missing[0]!r} has no profiles for {app!r}; known: {', '.join(known)}",
            )


def placement_of(row: Iterable) -> tuple[int, ...]:
    """GPUs on each used node, in node order (the reference's placement notation)."""
    gpus = np.asarray(row)
    return tuple(gpus[gpus > 0].astype(np.int64).tolist())


def packed_nodes(replicas, gpus_per_node: int):
    """Fewest nodes that can hold ``replicas`` GPUs (elementwise for arrays)."""
    return -(-replicas // gpus_per_node)


def packed_placement(replicas: int, gpus_per_node: int) -> tuple[int, ...]:
    """``replicas`` packed into full nodes plus a remainder, e.g. 10 on 4-GPU nodes -> (4, 4, 2)."""
    full, rest = divmod(replicas, gpus_per_node)
    return (gpus_per_node,) * full + ((rest,) if rest else ())


def distributed_cells(population: NDArray[np.int64]) -> NDArray[np.bool_]:
    """Cells of jobs spread over more than one node, for a (... x jobs x nodes) array: the
    jobs that interference avoidance keeps to one per node."""
    used = population > 0
    return used & (used.sum(axis=-1) > 1)[..., None]


def interference_flags(allocations: NDArray) -> NDArray[np.bool_]:
    """Jobs slowed by interference (SPEC 5.6): distributed jobs on a node that hosts at least two
    distributed jobs. ``allocations`` is (jobs x nodes)."""
    if allocations.size == 0:
        return np.zeros(0, dtype=bool)
    cells = distributed_cells(allocations)
    crowded = cells.sum(axis=0) >= 2
    return (cells & crowded[None, :]).any(axis=1)


def type_nodes(cluster: ClusterSpec, gpu_type: str | None) -> ClusterSpec:
    """The cluster with only the nodes of ``gpu_type`` up: where a job of that type is placed
    (its ``packed_layout`` is the job's placement at best). The cluster itself without a type,
    on a cluster of one type, or when no node of the type is up."""
    if gpu_type is None or not cluster.mixed:
        return cluster
    others = {n for n, t in enumerate(cluster.gpu_types) if t != gpu_type}
    mine = cluster.with_offline(cluster.offline | others)
    return mine if mine.total_gpus else cluster
