"""The goodput policy with a memory of its rounds, for studying optimisers on the exact
allocation problems a run met (``benchmarks/bench_optimizer.py`` and the optimiser tests)."""

from __future__ import annotations

import numpy as np

from goodput_sim.policies.base import Snapshot
from goodput_sim.policies.elastic import Goodput
from goodput_sim.policies.problem import AllocationProblem


class RecordingGoodput(Goodput):
    """The goodput policy, keeping every round's allocation problem (and the cluster's GPU
    count) so optimisers can be compared on exactly the rounds a run met."""

    name = "goodput-recording"

    def __init__(self, seed: int = 0, **values):
        super().__init__(seed, **values)
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
