"""Optimus+Oracle (+TunedJobs): fixed batch, GPUs handed out one at a time to the job whose
remaining time drops most, with remaining work and step times read from the true profile
(SPEC 7.1; Peng et al., EuroSys'18)."""

from __future__ import annotations

import numpy as np

from goodput_sim.cluster import packed_placement
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
        self._time_cache: dict[tuple, float] = {}  # iteration seconds per (app, batch, GPUs)

    def allocate(self, snapshot: Snapshot) -> Decision:
        gpus = snapshot.cluster.gpus_per_node
        total = snapshot.cluster.total_gpus
        jobs = list(snapshot.jobs)
        counts = {job.name: 0 for job in jobs}
        free = total
        for job in jobs:  # everyone gets one GPU while they last, in arrival order
            if free > 0:
                counts[job.name] = 1
                free -= 1
        remaining = {job.name: self._remaining_iterations(job) for job in jobs}
        caps = {
            job.name: job.limits.cap(max(job.requested_batch // job.limits.min_local_bsz, 1))
            for job in jobs
        }

        def gain(job: JobView) -> float:
            r = counts[job.name]
            if r == 0 or r + 1 > caps[job.name]:
                return 0.0
            t = self._iteration_time(job, r, gpus) - self._iteration_time(job, r + 1, gpus)
            return t * remaining[job.name]

        gains = np.array([gain(job) for job in jobs])
        while free > 0 and len(jobs) and gains.max() > 0:
            best = int(np.argmax(gains))
            counts[jobs[best].name] += 1
            free -= 1
            gains[best] = gain(jobs[best])
        return keep_or_fill(sorted(jobs, key=lambda j: counts[j.name]), counts, snapshot.cluster)

    @staticmethod
    def _remaining_iterations(job: JobView) -> float:
        completion = job.limits.max_epochs - 1
        if completion <= job.epoch:
            return 1.0
        iters = job.truth.iterations(job.requested_batch, np.array([completion, job.epoch]))
        return float(iters[0] - iters[1])

    def _iteration_time(self, job: JobView, replicas: int, gpus_per_node: int) -> float:
        cache = self._time_cache
        key = (job.application, job.requested_batch, replicas, gpus_per_node)
        if key not in cache:
            b, s = fixed_batch_config(
                job.requested_batch, replicas, job.limits, accumulate_on_one_gpu=True
            )
            step, sync = job.truth.step_sync(packed_placement(replicas, gpus_per_node), b)
            cache[key] = float(iteration_seconds(step, sync, s))
        return cache[key]
