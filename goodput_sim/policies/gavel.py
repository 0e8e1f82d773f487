"""Gavel (OSDI'20) with tuned jobs: heterogeneity-aware max-min fairness over effective
throughput, as the Sia artifact runs it for comparison (Sia SPEC 6).

Every job runs at exactly its requested GPUs and batch. Each Gavel round (``round_seconds``,
360 s in the reference) the linear program of :mod:`~goodput_sim.policies.gavel_lp` gives each
job a time fraction per GPU type from its true throughput there (Gavel profiles jobs offline,
so it reads ground truth), and the priority mechanism turns the fractions into one type per job
for the round. Between Gavel rounds allocations hold; finished jobs' GPUs wait for the next.
"""

from __future__ import annotations

import numpy as np

from goodput_sim.cluster import ClusterSpec
from goodput_sim.models.goodput import fixed_batch_config
from goodput_sim.params import Param
from goodput_sim.policies.base import Decision, JobView, Policy, Snapshot, register
from goodput_sim.policies.gavel_lp import RoundScheduler, max_min_fair_allocation
from goodput_sim.policies.placement import keep_or_fill, type_nodes
from goodput_sim.profiles.base import iteration_seconds


@register("gavel")
class Gavel(Policy):
    """Gavel: max-min fairness over effective throughput across GPU types, fixed job sizes."""

    name = "gavel"
    needs_oracle = True
    reads_beliefs = False
    params = (Param("round_seconds", float, 360.0, "seconds per Gavel round", 1.0, 86400.0),)

    def __init__(self, seed: int = 0, **values):
        super().__init__(seed, **values)
        self._rounds = RoundScheduler()
        self._next = 0.0
        self._speeds: dict[tuple, float] = {}  # per (true profile, batch, placement)

    def allocate(self, snapshot: Snapshot) -> Decision:
        jobs = list(snapshot.jobs)
        if snapshot.time < self._next:  # within a Gavel round: allocations hold
            return Decision({j.name: j.allocation.copy() for j in jobs if j.replicas})
        self._next = snapshot.time + self.values["round_seconds"]
        if not jobs:
            return Decision({})
        cluster = snapshot.cluster
        types = cluster.type_order
        capacity = cluster.type_capacity()
        nodes = {t: type_nodes(cluster, t) for t in types}
        throughput = np.array([[self._speed(job, t, nodes[t]) for t in types] for job in jobs])
        replicas = [job.requested_replicas for job in jobs]
        x = max_min_fair_allocation(throughput, replicas, capacity)
        names = [job.name for job in jobs]
        chosen = self._rounds.schedule(names, x, replicas, capacity, self.values["round_seconds"])
        scheduled = sorted(
            (j for j in jobs if chosen.get(j.name) is not None), key=lambda j: -j.requested_replicas
        )
        counts = {j.name: j.requested_replicas for j in scheduled}
        on_type = {j.name: chosen[j.name] for j in scheduled}
        placed = keep_or_fill(scheduled, counts, cluster, on_type)
        return Decision(placed.allocations)  # node ids in order, not the fill order

    def _speed(self, job: JobView, gpu_type: str, nodes: ClusterSpec) -> float:
        """Optimizer steps per second of the job at its requested size and batch on
        ``gpu_type``, packed onto ``nodes`` (that type's nodes up, largest first), from ground
        truth (whether it fits the GPUs free now is the linear program's concern)."""
        truth = (job.type_truths or {}).get(gpu_type, job.truth)
        replicas = job.requested_replicas
        placement = nodes.packed_layout(replicas)
        key = (truth, job.requested_batch, placement)
        if key not in self._speeds:
            b, s = fixed_batch_config(job.requested_batch, replicas, truth.limits, True)
            step, sync = truth.step_sync(placement, np.array([float(b)]))
            seconds = float(iteration_seconds(step, sync, np.array([s]))[0])
            self._speeds[key] = 1.0 / (seconds * truth.slowdown)
        return self._speeds[key]
