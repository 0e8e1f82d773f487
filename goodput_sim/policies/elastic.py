"""Elastic policies that choose GPUs and batch size together each round.

* ``goodput`` (Pollux-style, Qiao et al., OSDI'21): speedups from goodput = throughput x
  statistical efficiency, with the job's goodput-optimal batch and accumulation.
* ``throughput`` (throughput-only): the same machinery ranking by examples per second, ignoring
  statistical efficiency; the seeds' "throughput chart" applied to a cluster.

Differences from the reference (SPEC 6) by design: the optimiser is deterministic (greedy plus
placement, :mod:`goodput_sim.policies.greedy`) instead of an unseeded NSGA-II, and the fair-share
base goodput packs the fair share onto ceil(fair_R / GPUs-per-node) nodes instead of one node.
"""

from __future__ import annotations

import dataclasses
import functools

import numpy as np
from numpy.typing import NDArray

from goodput_sim.models.goodput import GoodputModel
from goodput_sim.policies.base import (
    Decision,
    JobView,
    Policy,
    Snapshot,
    fixed_configs,
    register,
)
from goodput_sim.policies.greedy import solve_greedy
from goodput_sim.policies.placement import packed_nodes
from goodput_sim.policies.problem import AllocationProblem, speedup_table


class ElasticPolicy(Policy):
    """Shared machinery; subclasses choose the statistic (goodput or raw throughput)."""

    statistical: bool = True

    def __init__(self, seed: int = 0, restart_penalty: bool = True):
        super().__init__(seed)
        self.restart_penalty = restart_penalty
        self._tables: dict[str, dict[str, tuple]] = {}  # per job: cache key and value

    def allocate(self, snapshot: Snapshot) -> Decision:
        problem = self.problem(snapshot)
        allocation = solve_greedy(problem, snapshot.cluster.total_gpus)
        return dict(zip(problem.names, allocation, strict=True))

    def problem(self, snapshot: Snapshot) -> AllocationProblem:
        """The round's allocation problem, jobs in least-attained-service order."""
        cluster = snapshot.cluster
        jobs = sorted(snapshot.jobs, key=lambda j: (j.attained_service, j.arrival, j.name))
        fair = max(-(-cluster.total_gpus // max(len(jobs), 1)), 1)
        names = [job.name for job in jobs]
        self._tables = {name: self._tables.get(name, {}) for name in names}
        caps = [job.belief.max_replicas(cluster.total_gpus) for job in jobs]
        tables = [
            self._table(job, cap, fair, snapshot) for job, cap in zip(jobs, caps, strict=True)
        ]
        delay = snapshot.restart_delay
        penalties = np.array(
            [
                max(job.age - delay * job.num_restarts, 0.0) / (job.age + delay)
                if self.restart_penalty and job.age + delay > 0
                else 1.0
                for job in jobs
            ]
        )
        current = np.array([job.allocation for job in jobs], dtype=np.int64).reshape(
            len(jobs), cluster.nodes
        )
        return AllocationProblem(
            names, np.array(caps, dtype=np.int64), penalties, current, cluster.gpus_per_node, tables
        )

    def _table(self, job: JobView, cap: int, fair: int, snapshot: Snapshot) -> NDArray:
        """Speedups of ``job`` relative to its value at a fair share.

        The goodput table and the fair-share base are cached per job apart, keyed by what each
        depends on: the belief (fitted parameters, plus gradient statistics when
        ``statistical``) and the cap or fair share, so an arrival (new fair share) only
        rescales the table."""
        cluster = snapshot.cluster
        model = job.belief.goodput_model()  # refits first if needed, which bumps the version
        if model is None:  # not yet profiled: assume linear scaling
            return speedup_table(lambda n, r: r / fair, cap, cluster.nodes, cluster.gpus_per_node)
        belief = job.belief.version if self.statistical else job.belief.fits
        cached = self._tables[job.name]
        if cached.get("table", (None,))[0] != (belief, cap):
            if not self.statistical:
                model = _without_statistics(model)
            values = _goodput_table(
                model, self.statistical, cap, cluster.nodes, cluster.gpus_per_node
            )
            cached["table"] = ((belief, cap), values)
        if cached.get("base", (None,))[0] != (belief, fair):
            nodes = packed_nodes(fair, cluster.gpus_per_node)
            table = cached["table"][1]
            if fair < table.shape[1]:  # the table has it (its row 2 stands for any multi-node)
                base = table[min(nodes, 2), fair]
            else:
                base = model.optimize(nodes, fair, self.statistical).goodput[0]
            cached["base"] = ((belief, fair), base)
        return cached["table"][1] / cached["base"][1]

    def batch_configs(self, job, nodes, replicas, grad_sqr, grad_var):
        model = job.belief.goodput_model()
        if model is None:  # before the first observation: a fixed, safe batch (SPEC 5.3)
            lim = job.limits
            total = max(lim.init_batch_size, lim.min_local_bsz * replicas)
            return fixed_configs(lim, total, replicas, np.shape(grad_sqr))
        size = np.shape(grad_sqr)
        if not self.statistical:  # gradient statistics do not matter: one choice for all epochs
            local_bsz, accum_steps = _fastest_config(_without_statistics(model), nodes, replicas)
            return np.full(size, local_bsz), np.full(size, accum_steps)
        choice = model.optimize(nodes, replicas, True, grad_sqr, grad_var)
        return choice.local_bsz, choice.accum_steps

    def describe(self) -> dict:
        return {
            **super().describe(),
            "restart_penalty": self.restart_penalty,
            "optimizer": "greedy",
        }


def _without_statistics(model: GoodputModel) -> GoodputModel:
    """``model`` with neutral gradient statistics, for uses that ignore them: jobs with equal
    fitted parameters then have equal models and share memoised results."""
    return dataclasses.replace(model, grad_sqr=1.0, grad_var=0.0)


@functools.lru_cache(maxsize=4096)
def _goodput_table(
    model: GoodputModel, statistical: bool, cap: int, nodes: int, gpus_per_node: int
) -> NDArray:
    """A job's best goodput (or throughput) by [min(nodes, 2), GPUs] (read-only). Memoised:
    jobs of one application that ran the same configurations share fitted parameters (see
    :func:`goodput_sim.jobs._fitted_params`), and so their tables."""
    table = speedup_table(
        lambda n, r: model.optimize(n, r, statistical).goodput, cap, nodes, gpus_per_node
    )
    table.flags.writeable = False
    return table


@functools.lru_cache(maxsize=4096)
def _fastest_config(model: GoodputModel, nodes: int, replicas: int) -> tuple[float, float]:
    """(per-GPU batch, accumulation steps) with the most examples per second; memoised like
    :func:`_goodput_table`."""
    choice = model.optimize(nodes, replicas, statistical=False)
    return float(choice.local_bsz[0]), float(choice.accum_steps[0])


@register("pollux")
class Goodput(ElasticPolicy):
    """Pollux-style: maximise the fairness-weighted goodput of all jobs."""

    name = "goodput"
    statistical = True


@register("throughput-only")
class ThroughputOnly(ElasticPolicy):
    """Elastic GPUs and batch, ranked by examples per second alone."""

    name = "throughput"
    statistical = False


class RecordingGoodput(Goodput):
    """The goodput policy, keeping every round's allocation problem (and the cluster's GPU
    count) so optimisers can be compared on exactly the rounds a run met."""

    name = "goodput-recording"

    def __init__(self, seed: int = 0, restart_penalty: bool = True):
        super().__init__(seed, restart_penalty)
        self.problems: list[tuple[AllocationProblem, int]] = []

    def problem(self, snapshot: Snapshot) -> AllocationProblem:
        problem = super().problem(snapshot)
        self.problems.append((problem, snapshot.cluster.total_gpus))
        return problem


def sample_rounds(problems: list, count: int, min_jobs: int = 2) -> list:
    """``count`` recorded rounds with at least ``min_jobs`` jobs, evenly spread over the run."""
    busy = [p for p in problems if p[0].num_jobs >= min_jobs]
    picks = np.unique(np.linspace(0, len(busy) - 1, count).astype(int))
    return [busy[i] for i in picks]
