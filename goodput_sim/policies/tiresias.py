"""Tiresias (+TunedJobs): two-queue discretised least-attained-service, gang-scheduled at the
requested GPUs and batch size (SPEC 7.2; Gu et al., NSDI'19)."""

from __future__ import annotations

import numpy as np

from goodput_sim.policies.base import Decision, Policy, Snapshot, register
from goodput_sim.policies.placement import fill_most_free

QUEUE_THRESHOLD = 16 * 3600  # GPU-seconds of attained service before demotion to the low queue


@register("fixed-batch")
class Tiresias(Policy):
    """2D-LAS with two queues; demotion after 16 GPU-hours, no promotion, skip-ahead admission."""

    name = "tiresias"

    def __init__(self, seed: int = 0, queue_threshold: float = QUEUE_THRESHOLD):
        super().__init__(seed)
        self.queue_threshold = queue_threshold
        self.queues: tuple[list[str], list[str]] = ([], [])
        self.executed: dict[str, float] = {}
        self.last_check: dict[str, float] = {}
        self.running: set[str] = set()

    def allocate(self, snapshot: Snapshot) -> Decision:
        now = int(snapshot.time)
        jobs = {job.name: job for job in snapshot.jobs}
        high, low = self.queues
        for queue in self.queues:
            queue[:] = [name for name in queue if name in jobs]
        known = set(high) | set(low)
        high.extend(name for name in jobs if name not in known)
        for name in jobs:
            if name in self.running:
                self.executed[name] = (
                    self.executed.get(name, 0.0) + now - self.last_check.get(name, 0)
                )
                if (
                    name in high
                    and self.executed[name] * jobs[name].requested_replicas >= self.queue_threshold
                ):
                    high.remove(name)
                    low.append(name)
            self.last_check[name] = now
        remaining = snapshot.cluster.total_gpus
        self.running = set()
        for name in high + low:
            if jobs[name].requested_replicas <= remaining:
                self.running.add(name)
                remaining -= jobs[name].requested_replicas
        decision: Decision = {}
        free = np.full(snapshot.cluster.nodes, snapshot.cluster.gpus_per_node, dtype=np.int64)
        for name in self.running:
            if jobs[name].replicas > 0:
                decision[name] = jobs[name].allocation.copy()
                free -= decision[name]
        for name in high + low:
            if name in self.running and name not in decision:
                decision[name] = fill_most_free(jobs[name].requested_replicas, free)
        return decision

    def describe(self) -> dict:
        return {**super().describe(), "queue_threshold": self.queue_threshold}
