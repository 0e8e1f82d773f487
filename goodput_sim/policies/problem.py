"""The elastic allocation problem of one scheduling round (SPEC 6.3), shared by optimisers.

Decision: A[j, n] GPUs of job j on node n. Each job's value is its speedup at (nodes used, GPUs)
relative to its goodput at a fair share of the cluster, scaled by 1/GPUs of the largest node up
(the reference's 1/GPUs-per-node; one constant for every job) and multiplied by the restart
penalty if its row changes; the objective is the power mean with exponent p
(default -1, the harmonic mean) of ``value + 1e-3``, so with p = -1 leaving a job without GPUs
costs 1000 in the sum of inverses. Optimisers minimise the sum of per-job costs
(:class:`Fairness`), which orders allocations as the power mean does.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from functools import cached_property, lru_cache

import numpy as np
from numpy.typing import NDArray

from goodput_sim.inputs.cluster import distributed_cells
from goodput_sim.models.speedup_table import fill_table, table_pairs

EPSILON = 1e-3

SpeedupFn = Callable[[NDArray, NDArray], NDArray]
"""(nodes, replicas) arrays -> speedup array (0 where replicas is 0)."""


@dataclass(frozen=True)
class Fairness:
    """The power mean with exponent ``p`` of per-job values, as a sum of per-job costs.

    For p < 0 the cost is ``x**p`` (p = -1: ``1/x``), for p = 0 ``-log x``, for p > 0 ``-x**p``,
    with ``x = value + 1e-3``; a smaller sum is a larger power mean (:meth:`score`)."""

    p: float = -1.0

    def cost(self, value: NDArray) -> NDArray:
        x = value + EPSILON
        if self.p == -1:
            return 1.0 / x
        if self.p == 0:
            return -np.log(x)
        return x**self.p if self.p < 0 else -(x**self.p)

    def score(self, total, count: int):
        """The power mean of ``count`` values whose costs sum to ``total``."""
        if self.p == -1:
            return count / total
        if self.p == 0:
            return np.exp(-total / count)
        mean = total / count if self.p < 0 else -total / count
        return mean ** (1.0 / self.p)


@lru_cache(maxsize=64)
def _whole_node_counts(capacity: bytes, width: int) -> NDArray[np.bool_]:
    """:attr:`AllocationProblem.whole_node_counts` of nodes holding ``capacity`` GPUs each (int64
    bytes), for counts below ``width``: a subset-sum reach over the node sizes."""
    gpus = np.frombuffer(capacity, dtype=np.int64)
    reach = np.zeros(width, dtype=bool)
    reach[0] = True
    sizes, counts = np.unique(gpus[gpus > 0], return_counts=True)
    for size, count in zip(sizes.tolist(), counts.tolist(), strict=True):
        before = reach.copy()
        for k in range(1, min(count, (width - 1) // size) + 1):
            reach[k * size :] |= before[: width - k * size]
    reach.flags.writeable = False
    return reach


@dataclass
class AllocationProblem:
    """Inputs of one round: jobs in priority order (least attained service first)."""

    names: list[str]
    caps: NDArray[np.int64]  # per-job GPU cap
    penalties: NDArray[np.float64]  # multiplier on value when the job's row changes
    current: NDArray[np.int64]  # (jobs x nodes) allocation now
    capacity: NDArray[np.int64] | int  # GPUs on each node (an int: the same on every node)
    speedup_tables: list[NDArray]  # per job: [min(nodes, 2), replicas] speedups (speedup_table)
    fairness: Fairness = Fairness()
    interference_avoidance: bool = True  # at most one distributed job per node
    candidates: int = 64  # local search: jobs tried as receivers, givers and restorations
    floors: NDArray[np.int64] | None = None  # per job: fewest GPUs it runs on (rigid jobs)

    def __post_init__(self) -> None:
        capacity = np.asarray(self.capacity, dtype=np.int64)
        self.capacity = np.broadcast_to(capacity, self.current.shape[1:]).copy()
        # GPUs of the largest node up: the most one node holds, and the unit of the value scale.
        self.largest_node = int(self.capacity.max()) if self.capacity.size else 0

    @property
    def num_jobs(self) -> int:
        return len(self.names)

    @property
    def num_nodes(self) -> int:
        return self.current.shape[1]

    @cached_property
    def padded_speedups(self) -> NDArray[np.float64]:
        """The speedup tables stacked into one (jobs x 3 x largest cap + 1) array, zero-padded,
        so values of many allocations are one indexing operation."""
        width = max((t.shape[1] for t in self.speedup_tables), default=1)
        table = np.zeros((self.num_jobs, 3, width))
        for j, t in enumerate(self.speedup_tables):
            table[j, : t.shape[0], : t.shape[1]] = t
        return table

    def job_values(self, jobs, replicas, nodes, changed) -> NDArray[np.float64]:
        """Scaled values of ``jobs`` at (replicas, nodes used), penalised where ``changed``;
        the arguments broadcast together."""
        table = self.padded_speedups
        _, rows, width = table.shape
        r = np.minimum(replicas, width - 1)
        n = np.minimum(nodes, rows - 1)
        allowed = replicas <= self.caps[jobs]
        if self.floors is not None:
            allowed = allowed & (replicas >= self.floors[jobs])
        value = np.where(allowed, table.ravel()[(jobs * rows + n) * width + r], 0.0)
        return value / self.largest_node * np.where(changed, self.penalties[jobs], 1.0)

    @cached_property
    def whole_node_counts(self) -> NDArray[np.bool_]:
        """For each GPU count of the speedup tables, whether some set of whole nodes holds
        exactly that many GPUs (the sums of node capacities, whatever the node shapes; read-only,
        shared by the rounds of one cluster)."""
        return _whole_node_counts(self.capacity.tobytes(), self.padded_speedups.shape[2])

    def objective(self, population: NDArray[np.int64]) -> NDArray[np.float64]:
        """Power mean of values (higher is better), per individual."""
        return self.objective_of(
            population.sum(axis=2),
            (population > 0).sum(axis=2),
            (population != self.current[None]).any(axis=2),
        )

    def objective_of(self, replicas, nodes, changed) -> NDArray[np.float64]:
        """:meth:`objective` from (individuals x jobs) GPUs, nodes used and changed-row flags."""
        if self.num_jobs == 0:
            return np.zeros(len(replicas))
        values = self.job_values(np.arange(self.num_jobs)[None, :], replicas, nodes, changed)
        return self.fairness.score(self.fairness.cost(values).sum(axis=1), self.num_jobs)

    def feasible(self, allocation: NDArray[np.int64]) -> bool:
        """Capacity, caps and interference avoidance (at most one distributed job per node)."""
        return bool(self.feasible_each(allocation[None])[0])

    def feasible_each(self, population: NDArray[np.int64]) -> NDArray[np.bool_]:
        """:meth:`feasible` for each allocation of a (pop x jobs x nodes) population."""
        ok = (population.sum(axis=1) <= self.capacity).all(axis=1)
        ok &= (population >= 0).all(axis=(1, 2))
        ok &= (population.sum(axis=2) <= self.caps).all(axis=1)
        if not self.interference_avoidance:
            return ok
        return ok & (distributed_cells(population).sum(axis=1) <= 1).all(axis=1)


def speedup_table(speedup: SpeedupFn, cap: int, nodes_up: int, largest_node: int) -> NDArray:
    """Speedups indexed by [min(nodes, 2), replicas] for replicas <= cap, in one vectorised call:
    one node holds at most ``largest_node`` GPUs, several exist if ``nodes_up`` >= 2.

    The throughput model tells one node from several but not several from many (SPEC 3.1:
    network time depends on the node count only through nodes > 1), so row 2 stands for every
    multi-node placement; the table is small however large the cluster."""
    nodes, replicas = table_pairs(cap, nodes_up, largest_node)
    values = speedup(nodes, replicas) if len(replicas) else np.zeros(0)
    return fill_table(values, cap, nodes_up, largest_node)
