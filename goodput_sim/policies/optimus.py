"""Optimus+Oracle (+TunedJobs): fixed batch, GPUs handed out one at a time to the job whose
remaining time drops most, with remaining work and step times read from the true profile
(SPEC 7.1; Peng et al., EuroSys'18). A job's step time at r GPUs is read at r packed onto the
nodes up of its GPU type, largest first (:func:`~goodput_sim.inputs.cluster.type_nodes`)."""

from __future__ import annotations

import numpy as np

from goodput_sim.inputs.cluster import ClusterSpec, type_nodes
from goodput_sim.models.goodput import fixed_batch_config
from goodput_sim.policies.base import Decision, JobView, Policy, Snapshot, register
from goodput_sim.policies.placement import keep_or_fill
from goodput_sim.profiles.base import iteration_seconds


@register("optimus+oracle")
class Optimus(Policy):
    """Greedy marginal-gain GPU allocation with oracle knowledge of the remaining iterations."""

    name = "optimus"
    needs_oracle = True
    reads_beliefs = False

    def __init__(self, seed: int = 0, **values):
        super().__init__(seed, **values)
        # Iteration seconds per (true profile, batch, placement): everything they are read from.
        self._time_cache: dict[tuple, float] = {}

    def allocate(self, snapshot: Snapshot) -> Decision:
        cluster = snapshot.cluster
        total = cluster.total_gpus
        jobs = list(snapshot.jobs)
        counts = {job.name: 0 for job in jobs}
        free = total
        for job in jobs:  # everyone gets one GPU (rigid jobs theirs) while they last, in order
            first = job.limits.min_replicas or 1
            if free >= first:
                counts[job.name] = first
                free -= first
        remaining = {job.name: self._remaining_iterations(job) for job in jobs}
        types = {job.name: _gpu_type(job) for job in jobs}
        nodes = {t: type_nodes(cluster, t) for t in set(types.values())}
        # A job never spans two GPU types: no count beyond the GPUs of the largest type.
        caps = {
            job.name: min(
                job.limits.cap(max(job.requested_batch // job.limits.min_local_bsz, 1)),
                cluster.max_job_gpus,
            )
            for job in jobs
        }

        def gain(job: JobView) -> float:
            r = counts[job.name]
            if r == 0 or r + 1 > caps[job.name]:
                return 0.0
            mine = nodes[types[job.name]]
            t = self._iteration_time(job, r, mine) - self._iteration_time(job, r + 1, mine)
            return t * remaining[job.name]

        gains = np.array([gain(job) for job in jobs])
        while free > 0 and len(jobs) and gains.max() > 0:
            best = int(np.argmax(gains))
            counts[jobs[best].name] += 1
            free -= 1
            gains[best] = gain(jobs[best])
        # On several GPU types a resized or waiting job is placed on the type its estimate is
        # for, if that has room (else where a type-blind fill puts it), so that the estimate and
        # the placement agree and a job does not move between types at every round.
        order = cluster.type_order
        prefer = {name: order.index(t) for name, t in types.items() if t is not None}
        ranked = sorted(jobs, key=lambda j: counts[j.name])
        return keep_or_fill(ranked, counts, cluster, prefer=prefer)

    @staticmethod
    def _remaining_iterations(job: JobView) -> float:
        completion = job.limits.max_epochs - 1
        if completion <= job.epoch:
            return 1.0
        iters = job.truth.iterations(job.requested_batch, np.array([completion, job.epoch]))
        return float(iters[0] - iters[1])

    def _iteration_time(self, job: JobView, replicas: int, nodes: ClusterSpec) -> float:
        """True seconds per iteration of ``job`` at its requested batch on ``replicas`` GPUs
        packed onto the nodes up of ``nodes``, largest first."""
        truth = job.truth
        placement = nodes.packed_layout(replicas)
        key = (truth, job.requested_batch, placement)
        cache = self._time_cache
        if key not in cache:
            b, s = fixed_batch_config(
                job.requested_batch, replicas, truth.limits, accumulate_on_one_gpu=True
            )
            step, sync = truth.step_sync(placement, b)
            cache[key] = float(iteration_seconds(step, sync, s))
        return cache[key]


def _gpu_type(job: JobView) -> str | None:
    """The GPU type whose ground truth the job is handed: the type it runs on, else the type
    whose truth is its own (a waiting job's last type); None on a cluster of one type."""
    if job.gpu_type is not None:
        return job.gpu_type
    for gpu_type, truth in (job.type_truths or {}).items():
        if truth is job.truth:
            return gpu_type
    return None
