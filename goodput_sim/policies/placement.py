"""Placement helpers shared by the policies: turning GPU counts into GPUs-per-node rows."""

from __future__ import annotations

import numpy as np
from numpy.typing import NDArray


def fill_most_free(needed: int, free: NDArray[np.int64]) -> NDArray[np.int64] | None:
    """Take GPUs from the node with the most free GPUs, repeatedly (ties: lowest node id), as the
    reference baselines do. Updates ``free`` in place; None (and ``free`` untouched) if short."""
    if needed > free.sum():
        return None
    row = np.zeros_like(free)
    while needed > 0:
        node = int(np.argmax(free))
        take = min(int(free[node]), needed)
        row[node] += take
        free[node] -= take
        needed -= take
    return row


def packed_nodes(replicas: int, gpus_per_node: int) -> int:
    """Fewest nodes that can hold ``replicas`` GPUs."""
    return -(-replicas // gpus_per_node) if replicas > 0 else 0


def packed_placement(replicas: int, gpus_per_node: int) -> tuple[int, ...]:
    """``replicas`` packed into full nodes plus a remainder, e.g. 10 on 4-GPU nodes -> (4, 4, 2)."""
    full, rest = divmod(replicas, gpus_per_node)
    return (gpus_per_node,) * full + ((rest,) if rest else ())
