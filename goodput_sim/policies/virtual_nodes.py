"""A cluster seen as smaller virtual nodes, for a policy that decides on equal nodes.

The Sia artifact runs its type-blind Pollux on a cluster whose every node is cut into virtual
nodes of the smallest node size (4 GPUs: an 8-GPU node becomes two), and maps the decision back
to the real nodes (Sia SPEC 5.1, 5.4). The policy then prices 8 GPUs of one real node as two
nodes, and may put two distributed jobs on one real node; the engine runs the real placement.
"""

from __future__ import annotations

import functools
from collections.abc import Iterable, Mapping
from dataclasses import dataclass

import numpy as np
from numpy.typing import NDArray

from goodput_sim.inputs.cluster import ClusterSpec, NodeGroup


@dataclass(frozen=True)
class VirtualNodes:
    """``cluster``: the virtual view (groups in the real order, each node's GPU type kept);
    ``owner``: the real node of each virtual node."""

    cluster: ClusterSpec
    owner: NDArray[np.int64]
    real_nodes: int

    @functools.cached_property
    def _one_hot(self) -> NDArray[np.int64]:
        out = np.zeros((len(self.owner), self.real_nodes), dtype=np.int64)
        out[np.arange(len(self.owner)), self.owner] = 1
        return out

    @functools.cached_property
    def pieces(self) -> tuple[tuple[int, ...], ...]:
        """The virtual nodes of each real node, in virtual order."""
        out: list[list[int]] = [[] for _ in range(self.real_nodes)]
        for virtual, real in enumerate(self.owner.tolist()):
            out[real].append(virtual)
        return tuple(tuple(p) for p in out)

    def to_real(self, rows: NDArray[np.int64]) -> NDArray[np.int64]:
        """(jobs x virtual nodes) GPUs as (jobs x real nodes): each real node's pieces summed."""
        return np.asarray(rows, dtype=np.int64) @ self._one_hot

    def to_virtual(
        self,
        jobs: Iterable[tuple[str, NDArray[np.int64]]],
        previous: Mapping[str, NDArray[np.int64]],
    ) -> dict[str, NDArray[np.int64]]:
        """Each job's real row as a virtual row: its ``previous`` virtual row where that still
        adds up to the real row (so a job the engine left in place is not seen as moved), else
        its GPUs on each real node put on that node's pieces, the fullest piece holding them
        all first, else the most free pieces. A legal real allocation always fits."""
        jobs = list(jobs)
        free = self.cluster.capacity.copy()
        out: dict[str, NDArray[np.int64]] = {}
        for name, row in jobs:
            old = previous.get(name)
            if (
                old is not None
                and old.shape == free.shape
                and np.array_equal(self.to_real(old), row)
                and (old <= free).all()
            ):
                out[name] = old
                free -= old
        for name, row in jobs:
            if name in out:
                continue
            virtual = np.zeros_like(free)
            for node in np.flatnonzero(row).tolist():
                need = int(row[node])
                pieces = self.pieces[node]
                while need > 0:
                    holding = [v for v in pieces if free[v] >= need]
                    if holding:
                        piece = min(holding, key=lambda v: (free[v], v))
                    else:
                        piece = max(pieces, key=lambda v: (free[v], -v))
                    take = min(need, int(free[piece]))
                    if take <= 0:
                        raise RuntimeError(f"job {name!r} over-subscribes real node {node}")
                    virtual[piece] += take
                    free[piece] -= take
                    need -= take
            out[name] = virtual
        return out


@functools.lru_cache(maxsize=64)
def virtual_nodes(cluster: ClusterSpec, gpus: int) -> VirtualNodes:
    """``cluster`` with every node of more than ``gpus`` GPUs cut into nodes of ``gpus`` GPUs
    (a remainder becoming a node of its own); a node offline leaves its pieces offline."""
    groups: list[NodeGroup] = []
    owner: list[int] = []
    start = 0
    for group in cluster.groups:
        whole, rest = divmod(group.gpus_per_node, gpus)
        if whole == 0:
            whole, rest = 1, 0
            size = group.gpus_per_node
        else:
            size = gpus
        groups.append(NodeGroup(group.nodes * whole, size, group.gpu_type))
        owner += [start + k // whole for k in range(group.nodes * whole)]
        if rest:
            groups.append(NodeGroup(group.nodes, rest, group.gpu_type))
            owner += [start + k for k in range(group.nodes)]
        start += group.nodes
    owners = np.array(owner, dtype=np.int64)
    offline = frozenset(np.flatnonzero(~cluster.up[owners]).tolist())
    view = ClusterSpec(tuple(groups), offline=offline)
    return VirtualNodes(view, owners, cluster.nodes)
