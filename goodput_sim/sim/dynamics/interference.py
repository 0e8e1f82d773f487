"""Interference: distributed jobs that share a node slow each other down by the run's
``interference`` fraction (Pollux's artifact's 0, 0.25 or 0.5), for the whole interval."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from goodput_sim.inputs.cluster import interference_flags
from goodput_sim.sim.dynamics.base import Dynamic, World
from goodput_sim.sim.jobs import Job


class Interference(Dynamic):
    """Each round, after the allocation and before the plans: every job's slowdown."""

    name = "interference"
    settings = ("interference",)

    @classmethod
    def build(cls, world: World) -> Interference | None:
        return cls(world) if world.config.interference > 0 else None

    def after_decide(self, jobs: Sequence[Job]) -> None:
        """Slowdowns first, so each plan is built once."""
        slowdown = self.world.config.interference
        slowed = interference_flags(np.array([j.allocation for j in jobs]))
        for job, flag in zip(jobs, slowed, strict=True):
            job.slowdown = slowdown if flag else 0.0
