"""The ``fixed`` agent: the job keeps the total batch its user asked for (Tiresias, Optimus and
FIFO jobs, and the TunedJobs configurations of the Pollux artifact)."""

from __future__ import annotations

import numpy as np

from goodput_sim.agents.base import BatchAgent, fixed_configs, register_agent


@register_agent
class FixedBatch(BatchAgent):
    """Requested total batch on any allocation, split over GPUs and accumulation steps."""

    name = "fixed"
    reads_beliefs = False

    def configs(self, belief, requested_batch, nodes, replicas, grad_sqr, grad_var, hint=None):
        return fixed_configs(belief.limits, requested_batch, replicas, np.shape(grad_sqr))

    def depends_on(self, belief):
        return None  # nothing the job learns changes a fixed batch
