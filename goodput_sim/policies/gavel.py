"""Gavel (OSDI'20) with tuned jobs, as the Sia artifact runs it for comparison (Sia SPEC 6).

Every job runs at exactly its requested GPUs and batch. Each Gavel round (``round_seconds``,
360 s in the reference) a linear programme of :mod:`~goodput_sim.policies.gavel_lp` gives each
job a time fraction per GPU type from its true throughput there (Gavel profiles jobs offline,
so it reads ground truth), and the priority mechanism turns the fractions into one type per job
for the round. The default objective is the artifact's: the total raw iterations per second
(Gavel's ``max_sum_throughput_perf``); ``objective=max_min_fairness`` is Gavel's max-min
fairness over normalised throughput instead. Between Gavel rounds allocations hold; finished
jobs' GPUs wait for the next.

GPUs are handed out as the artifact hands out workers (SPEC 6.4): type by type, larger jobs
first, a job keeps its previous GPUs when it stays on their type and none is taken, and the
others take free GPUs server by server behind one forward pointer.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Sequence

import numpy as np

from goodput_sim.inputs.cluster import ClusterSpec, type_nodes
from goodput_sim.models.goodput import fixed_batch_config
from goodput_sim.params import Param
from goodput_sim.policies.base import Decision, JobView, Policy, Snapshot, register
from goodput_sim.policies.gavel_lp import (
    RoundScheduler,
    max_min_fair_allocation,
    max_sum_throughput_allocation,
)
from goodput_sim.profiles.base import iteration_seconds

OVERSIZED_THROUGHPUT = 0.1  # the artifact's iterations/s for a job larger than a type (SPEC 6.2)
CONFIG_TABLE_GPUS = 64  # the artifact's Gavel configuration tables end at 64 GPUs of a type

Worker = tuple[int, int]  # (node, GPU slot on the node)


@register("gavel")
class Gavel(Policy):
    """Gavel: heterogeneity-aware time sharing of fixed-size jobs across GPU types."""

    name = "gavel"
    needs_oracle = True
    reads_beliefs = False
    params = (
        Param("round_seconds", float, 360.0, "seconds per Gavel round", 1.0, 86400.0),
        Param(
            "objective",
            str,
            "max_sum_throughput",
            "max_sum_throughput: total raw iterations/s (the Sia artifact's Gavel); "
            "max_min_fairness: the smallest normalised throughput",
            choices=("max_sum_throughput", "max_min_fairness"),
        ),
        Param("leftover", bool, True, "GPUs the programme leaves idle go to jobs with no share"),
    )

    def __init__(self, seed: int = 0, **values):
        super().__init__(seed, **values)
        self._rounds = RoundScheduler(self.values["leftover"])
        self._next: float | None = None  # when the next Gavel round starts
        self._speeds: dict[tuple, float] = {}  # per (true profile, batch, placement)
        self._workers: dict[str, tuple[Worker, ...]] = {}  # each job's GPUs, in assigned order

    def allocate(self, snapshot: Snapshot) -> Decision:
        jobs = list(snapshot.jobs)
        length = self.values["round_seconds"]
        if self._next is None:  # Gavel rounds start at multiples of their length, as the
            self._next = math.ceil(snapshot.time / length) * length  # artifact's ticks do
        if snapshot.time < self._next:  # within a Gavel round: allocations hold
            return Decision({j.name: j.allocation.copy() for j in jobs if j.replicas})
        self._next = (math.floor(snapshot.time / length) + 1) * length
        if not jobs:
            self._workers = {}
            return Decision({})
        cluster = snapshot.cluster
        types = cluster.type_order
        capacity = cluster.type_capacity()
        nodes = {t: type_nodes(cluster, t) for t in types}
        throughput = np.array([[self._speed(job, t, nodes[t]) for t in types] for job in jobs])
        replicas = [job.requested_replicas for job in jobs]
        if self.values["objective"] == "max_sum_throughput":
            x = max_sum_throughput_allocation(throughput, replicas, capacity)
        else:
            x = max_min_fair_allocation(throughput, replicas, capacity)
        names = [job.name for job in jobs]
        chosen = self._rounds.schedule(names, x, replicas, capacity, length)
        on_type = {name: t for name, t in chosen.items() if t is not None}  # in placing order
        by_name = {job.name: job for job in jobs}
        placed = [by_name[name] for name in on_type]
        self._workers = assign_workers(placed, on_type, cluster, self._workers)
        decision, orders = {}, {}
        for name, workers in self._workers.items():
            decision[name], orders[name] = allocation_row(workers, cluster.capacity.size)
        return Decision(decision, node_orders=orders)

    def _speed(self, job: JobView, gpu_type: str, nodes: ClusterSpec) -> float:
        """Optimizer steps per second of the job at its requested size and batch on
        ``gpu_type``, packed onto ``nodes`` (that type's nodes up, largest first), from ground
        truth and with the calibration factor, as the artifact predicts it (SPEC 6.2): a small
        constant when the job has more GPUs than the type (whether it fits the GPUs free now is
        the programme's concern)."""
        truth = (job.type_truths or {}).get(gpu_type, job.truth)
        replicas = job.requested_replicas
        type_gpus = min(nodes.total_gpus, CONFIG_TABLE_GPUS)
        if replicas > type_gpus:
            return OVERSIZED_THROUGHPUT
        placement = nodes.packed_layout(replicas)
        key = (truth, job.requested_batch, placement)
        if key not in self._speeds:
            limits = truth.limits
            largest = getattr(truth, "max_local_bsz_at", None)
            if largest is not None:
                limits = dataclasses.replace(limits, max_local_bsz=largest(placement))
            b, s = fixed_batch_config(job.requested_batch, replicas, limits, True)
            step, sync = truth.step_sync(placement, np.array([float(b)]))
            seconds = float(iteration_seconds(step, sync, np.array([s]))[0])
            self._speeds[key] = 1.0 / (seconds * truth.slowdown)
        return self._speeds[key]


def assign_workers(
    jobs: Sequence[JobView],
    on_type: dict[str, int],
    cluster: ClusterSpec,
    previous: dict[str, tuple[Worker, ...]],
) -> dict[str, tuple[Worker, ...]]:
    """GPUs for the jobs ``on_type`` places (job name -> type index), as the artifact assigns
    workers (SPEC 6.4): per type, jobs by decreasing GPU count (ties in ``jobs`` order, the
    order the round scheduler placed them); among
    jobs of one count, those that stay on their previous type keep their previous GPUs if all
    are still free and up, then the rest take free GPUs server by server (nodes of the type in
    id order) behind a forward pointer shared by the type's jobs. Should the pointer run out
    (the artifact stops with an error there), the job takes the lowest free GPUs of the type."""
    types = cluster.node_type_index
    capacity = cluster.capacity
    out: dict[str, tuple[Worker, ...]] = {}
    for t in sorted(set(on_type.values())):
        mine = sorted(
            (j for j in jobs if on_type.get(j.name) == t), key=lambda j: -j.requested_replicas
        )
        servers = [int(n) for n in np.flatnonzero((types == t) & (capacity > 0))]
        slots = {n: list(range(int(capacity[n]))) for n in servers}
        taken: set[Worker] = set()
        pointer = 0
        for size in sorted({j.requested_replicas for j in mine}, reverse=True):
            group = [j for j in mine if j.requested_replicas == size]
            for job in group:
                held = previous.get(job.name, ())
                stays = all(types[n] == t for n, _ in held)
                if stays and _still_held(job, held, capacity) and not taken.intersection(held):
                    out[job.name] = held
                    taken.update(held)
            for job in group:
                if job.name in out:
                    continue
                workers: list[Worker] = []
                while len(workers) < size and pointer < len(servers):
                    free = slots[servers[pointer]]
                    if not free:
                        pointer += 1
                        continue
                    worker = (servers[pointer], free.pop(0))
                    if worker not in taken:
                        workers.append(worker)
                        taken.add(worker)
                if len(workers) < size:
                    spare = [(n, g) for n in servers for g in range(int(capacity[n]))]
                    spare = [w for w in spare if w not in taken][: size - len(workers)]
                    workers += spare
                    taken.update(spare)
                out[job.name] = tuple(workers)
    return out


def _still_held(job: JobView, held: tuple[Worker, ...], capacity: np.ndarray) -> bool:
    """The job still runs on exactly the GPUs recorded for it, all on nodes up."""
    if not held or len(held) != job.requested_replicas:
        return False
    if any(capacity[n] <= g for n, g in held):
        return False
    row, _ = allocation_row(held, capacity.size)
    return bool(np.array_equal(row, job.allocation))


def allocation_row(workers: Sequence[Worker], num_nodes: int) -> tuple[np.ndarray, tuple[int, ...]]:
    """GPUs per node of ``workers`` and the nodes in the order the workers first reach them."""
    nodes = [n for n, _ in workers]
    row = np.bincount(np.array(nodes, dtype=np.int64), minlength=num_nodes).astype(np.int64)
    return row, tuple(dict.fromkeys(nodes))
