"""Cluster specification and the allocation representation (GPUs of a job on each node)."""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import yaml
from numpy.typing import NDArray

from goodput_sim.errors import InputError

_SHAPE = re.compile(r"^\s*(\d+)\s*[xX]\s*(\d+)\s*$")


@dataclass(frozen=True)
class ClusterSpec:
    """A homogeneous cluster: ``nodes`` machines with ``gpus_per_node`` GPUs each."""

    nodes: int = 16
    gpus_per_node: int = 4
    gpu_type: str = "T4"

    @property
    def total_gpus(self) -> int:
        return self.nodes * self.gpus_per_node

    def __str__(self) -> str:
        return f"{self.nodes}x{self.gpus_per_node}"


def parse_cluster(text: str | Path) -> ClusterSpec:
    """A cluster from ``NODESxGPUS`` (e.g. ``16x4``) or a YAML file (nodes, gpus_per_node)."""
    match = _SHAPE.match(str(text))
    if match:
        nodes, gpus = int(match.group(1)), int(match.group(2))
        if nodes < 1 or gpus < 1:
            raise InputError("--cluster", f"needs at least 1 node and 1 GPU per node, got {text}")
        return ClusterSpec(nodes, gpus)
    path = Path(text)
    if not path.is_file():
        raise InputError(
            "--cluster", f"expected NODESxGPUS (e.g. 16x4) or a YAML file, got {text!r}"
        )
    try:
        data = yaml.safe_load(path.read_text())
    except yaml.YAMLError as err:
        mark = getattr(err, "problem_mark", None)
        raise InputError(
            path,
            f"malformed YAML ({getattr(err, 'problem', err)})",
            where=mark.line + 1 if mark else None,
        ) from None
    if not isinstance(data, dict):
        raise InputError(path, "expected a mapping with nodes and gpus_per_node")
    data = data.get("cluster", data)
    fields = {"nodes": int, "gpus_per_node": int, "gpu_type": str}
    unknown = set(data) - set(fields)
    if unknown:
        raise InputError(path, f"unknown field(s) {sorted(unknown)}; expected {sorted(fields)}")
    values = {}
    for key, kind in fields.items():
        if key not in data:
            continue
        value = data[key]
        if kind is int and (not isinstance(value, int) or isinstance(value, bool) or value < 1):
            raise InputError(
                path, f"must be a positive integer, found {value!r}", where=f"field {key}"
            )
        values[key] = kind(value)
    return ClusterSpec(**values)


def placement_of(row: NDArray) -> tuple[int, ...]:
    """GPUs on each used node, in node order (the reference's placement notation)."""
    return tuple(int(g) for g in row if g > 0)


def interference_flags(allocations: NDArray) -> NDArray[np.bool_]:
    """Jobs slowed by interference (SPEC 5.6): distributed jobs on a node that hosts at least two
    distributed jobs. ``allocations`` is (jobs x nodes)."""
    if allocations.size == 0:
        return np.zeros(0, dtype=bool)
    used = allocations > 0
    distributed = used.sum(axis=1) > 1
    crowded = (used & distributed[:, None]).sum(axis=0) >= 2
    return distributed & (used & crowded[None, :]).any(axis=1)
