"""Elastic policies that choose GPUs and batch size together each round.

* ``goodput`` (Pollux-style, Qiao et al., OSDI'21): speedups from goodput = throughput x
  statistical efficiency, with the job's goodput-optimal batch and accumulation.
* ``throughput`` (throughput-only): the same machinery ranking by examples per second, ignoring
  statistical efficiency; the seeds' "throughput chart" applied to a cluster.

Differences from the reference (SPEC 6) by design: the optimiser is deterministic (greedy plus
placement, :mod:`goodput_sim.policies.greedy`) instead of an unseeded NSGA-II, and the fair-share
base goodput packs the fair share onto the fewest nodes up that hold it (largest first) instead
of one node.
"""

from __future__ import annotations

import dataclasses
import functools
from collections.abc import Callable

import numpy as np
from numpy.typing import NDArray

from goodput_sim.inputs.cluster import ClusterSpec
from goodput_sim.models.goodput import GoodputModel, without_statistics
from goodput_sim.models.restart import restart_factor
from goodput_sim.models.speedup_table import BestGoodputs
from goodput_sim.params import Param
from goodput_sim.policies.base import (
    Decision,
    JobView,
    Policy,
    Snapshot,
    honour_categories,
    register,
)
from goodput_sim.policies.greedy import solve_greedy
from goodput_sim.policies.placement import one_type_rows
from goodput_sim.policies.problem import (
    AllocationProblem,
    Fairness,
    speedup_table,
)
from goodput_sim.policies.virtual_nodes import VirtualNodes, virtual_nodes

Solver = Callable[[AllocationProblem, ClusterSpec], NDArray[np.int64]]
"""An optimiser: the round's problem and the cluster it is posed on -> the allocation matrix."""

ELASTIC_PARAMS = (
    Param(
        "p",
        float,
        -1.0,
        "fairness exponent of the power mean of speedups (-1: harmonic mean, as Pollux; "
        "1: total speedup; 0: geometric mean)",
        low=-10.0,
        high=1.0,
    ),
    Param("restart_penalty", bool, True, "discount a job's speedup when its row changes"),
    Param(
        "interference_avoidance",
        bool,
        True,
        "at most one distributed job per node (Pollux's interference avoidance)",
    ),
    Param(
        "candidates",
        int,
        64,
        "jobs the local search tries as receivers, givers and restorations per step (all of "
        "them when there are no more; results depend on it only above that many active jobs)",
        low=1,
        high=1_000_000,
    ),
    Param(
        "quiet_seconds",
        float,
        0.0,
        "seconds an allocation stands while no job arrives, finishes or fails and no node "
        "changes (a tolerance: beliefs, ages and epochs move meanwhile); 0 re-decides every "
        "round, exactly as the reference",
        low=0.0,
        high=1e9,
    ),
    Param(
        "max_gpus",
        int,
        0,
        "most GPUs one job may take (never below a rigid job's own count); 0: no cap beyond "
        "the belief's. The Sia artifact runs its type-blind Pollux with 16",
        low=0,
        high=1_000_000,
    ),
    Param(
        "restart_seconds",
        float,
        0.0,
        "restart delay the restart penalty charges every job; 0: each job's own (what the "
        "engine charges it). The Sia artifact's type-blind Pollux charges a flat 30 s",
        low=0.0,
        high=1e6,
    ),
    Param(
        "virtual_node_gpus",
        int,
        0,
        "decide on a view of the cluster with every node cut into virtual nodes of this many "
        "GPUs (a remainder its own node), mapped back to the real nodes; 0: the real nodes. "
        "The Sia artifact's type-blind Pollux sees 4-GPU nodes",
        low=0,
        high=1_000_000,
    ),
)


class ElasticPolicy(Policy):
    """Shared machinery; subclasses choose the statistic (goodput or raw throughput)."""

    statistical: bool = True
    params = ELASTIC_PARAMS
    elastic = True

    def __init__(self, seed: int = 0, **values):
        super().__init__(seed, **values)
        from goodput_sim.kernel_cache import warm

        warm(load=False)  # compiled once, with a note on stderr, if not cached yet
        self.fairness = Fairness(self.values["p"])
        self._speedup_cache: dict[str, dict[str, tuple]] = {}  # per job: cache key and value
        # Memoised per policy (one per simulation): jobs of one application that ran the same
        # configurations share fitted parameters (:class:`goodput_sim.sim.jobs.FitMemo`), and so
        # their best goodputs.
        self._best_goodputs = BestGoodputs()
        self._base_goodput = functools.lru_cache(maxsize=4096)(base_goodput)
        self._virtual_rows: dict[str, NDArray[np.int64]] = {}  # last decision on virtual nodes

    def allocate(self, snapshot: Snapshot) -> Decision:
        return self.decide(
            snapshot, lambda problem, cluster: solve_greedy(problem, cluster.total_gpus)
        )

    def decide(self, snapshot: Snapshot, solve: Solver) -> Decision:
        """The round's decision by optimiser ``solve``: posed on the real nodes, or with
        ``virtual_node_gpus`` on the virtual ones and mapped back; then each job repaired to one
        GPU type and to a count its category allows."""
        view, split = self._view(snapshot)
        problem = self.problem(view)
        allocation = one_type_rows(solve(problem, view.cluster), view.cluster, POWER_ORDER)
        if split is not None:
            self._virtual_rows = dict(zip(problem.names, allocation, strict=True))
            allocation = split.to_real(allocation)
        rows = dict(zip(problem.names, allocation, strict=True))
        return Decision(honour_categories(snapshot.jobs, rows))

    def _view(self, snapshot: Snapshot) -> tuple[Snapshot, VirtualNodes | None]:
        """The snapshot the optimiser sees: as is, or on virtual nodes of
        ``virtual_node_gpus`` GPUs, each job's allocation expressed on them (a job the engine
        kept where this policy put it keeps its virtual row)."""
        gpus = self.values["virtual_node_gpus"]
        if not gpus:
            return snapshot, None
        split = virtual_nodes(snapshot.cluster, gpus)
        rows = split.to_virtual(((j.name, j.allocation) for j in snapshot.jobs), self._virtual_rows)
        jobs = tuple(dataclasses.replace(j, allocation=rows[j.name]) for j in snapshot.jobs)
        return dataclasses.replace(snapshot, cluster=split.cluster, jobs=jobs), split

    def quiet_until(self, snapshot: Snapshot, rows) -> float:
        """Every round (the default), or ``quiet_seconds`` later if no event comes first;
        half a second early, so that the round at exactly that time re-decides."""
        quiet = self.values["quiet_seconds"]
        return snapshot.time + quiet - 0.5 if quiet > 0 else snapshot.time

    def problem(self, snapshot: Snapshot) -> AllocationProblem:
        """The round's allocation problem, jobs in least-attained-service order."""
        cluster = snapshot.cluster
        jobs = sorted(snapshot.jobs, key=lambda j: (j.attained_service, j.arrival, j.name))
        fair = max(-(-cluster.total_gpus // max(len(jobs), 1)), 1)
        names = [job.name for job in jobs]
        self._speedup_cache = {name: self._speedup_cache.get(name, {}) for name in names}
        caps = [self._cap(job, cluster.total_gpus) for job in jobs]
        tables = [
            self._speedups(job, cap, fair, snapshot) for job, cap in zip(jobs, caps, strict=True)
        ]
        penalize = self.values["restart_penalty"]
        flat = self.values["restart_seconds"]
        penalties = np.array(
            [
                restart_factor(
                    job.age, job.num_restarts, flat or job.restart_delay, loss=job.move_loss
                )
                if penalize
                else 1.0
                for job in jobs
            ]
        )
        current = np.array([job.allocation for job in jobs], dtype=np.int64).reshape(
            len(jobs), cluster.nodes
        )
        return AllocationProblem(
            names,
            np.array(caps, dtype=np.int64),
            penalties,
            current,
            cluster.capacity,
            tables,
            self.fairness,
            self.values["interference_avoidance"],
            self.values["candidates"],
            _floors(jobs),
        )

    def _cap(self, job: JobView, total_gpus: int) -> int:
        """The job's GPU cap: its belief's, within ``max_gpus`` when set (but never below a
        rigid job's own count, which it needs to run at all)."""
        cap = job.belief.max_replicas(total_gpus)
        most = self.values["max_gpus"]
        return min(cap, max(most, job.limits.min_replicas or 1)) if most else cap

    def _speedups(self, job: JobView, cap: int, fair: int, snapshot: Snapshot) -> NDArray:
        """Speedups of ``job`` relative to its value at a fair share.

        The best goodputs by shape and the fair-share base are cached per job apart, keyed by
        what each depends on: the belief (fitted parameters, plus gradient statistics when
        ``statistical``), the node shapes up (the largest node, whether there are several) and
        the cap or fair share, so an arrival (new fair share) only rescales the speedups."""
        cluster = snapshot.cluster
        shape = (cluster.largest_node, min(cluster.nodes_up, 2))
        model = job.belief.goodput_model
        if model is None:  # not yet profiled: assume linear scaling
            return speedup_table(lambda n, r: r / fair, cap, shape[1], shape[0])
        belief = job.belief.version if self.statistical else job.belief.fits
        cached = self._speedup_cache[job.name]
        if cached.get("best", (None,))[0] != (belief, cap, shape):
            if not self.statistical:  # equal fits then share memoised values
                model = without_statistics(model)
            values = self._best_goodputs(model, self.statistical, cap, shape[1], shape[0])
            cached["best"] = ((belief, cap, shape), values)
        if cached.get("base", (None,))[0] != (belief, fair, shape):
            nodes = len(cluster.packed_layout(fair))
            best = cached["best"][1]
            if fair < best.shape[1]:  # already computed (its row 2 stands for any multi-node)
                base = best[min(nodes, 2), fair]
            else:  # throughput-only values ignore the model's statistics
                base = self._base_goodput(model, self.statistical, nodes, fair)
            cached["base"] = ((belief, fair, shape), base)
        return cached["best"][1] / cached["base"][1]

    def describe(self) -> dict:
        return {**super().describe(), "optimizer": "greedy"}


def _floors(jobs: list[JobView]) -> NDArray[np.int64] | None:
    """Each job's fewest GPUs (its category's), or None when every job runs on any count."""
    floors = [job.limits.min_replicas or 1 for job in jobs]
    return np.array(floors, dtype=np.int64) if max(floors, default=1) > 1 else None


POWER_ORDER = ("dgx-ext", "dgx", "azure", "quad", "rtx", "aws")
"""GPU types from most to least powerful, for the one-type repair of a type-blind allocation
(Sia SPEC 5.4's order, with the A100 ``dgx`` profile it leaves out placed beside ``dgx-ext``)."""


def base_goodput(model: GoodputModel, statistical: bool, nodes: int, gpus: int) -> float:
    """A job's best goodput (or throughput) on ``gpus`` GPUs over ``nodes`` nodes: its value at
    a fair share, when that is beyond its speedup table."""
    return model.optimize(nodes, gpus, statistical).goodput[0]


@register("pollux")
class Goodput(ElasticPolicy):
    """Pollux-style: maximise the fairness-weighted goodput of all jobs."""

    name = "goodput"
    statistical = True
    default_agent = "goodput"


@register("throughput-only")
class ThroughputOnly(ElasticPolicy):
    """Elastic GPUs and batch, ranked by examples per second alone."""

    name = "throughput"
    statistical = False
    default_agent = "throughput"
