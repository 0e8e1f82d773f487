"""A batch agent: the linear scaling rule, a total batch that grows with the job's GPUs."""

import numpy as np

from goodput_sim.agents import BatchAgent, fixed_configs
from goodput_sim.params import Param


class LinearScaling(BatchAgent):
    """The linear scaling rule (Goyal et al., 2017): on more GPUs than ``base_gpus`` the total
    batch grows in proportion, up to the application's largest; a job whose category fixes its
    batch keeps the one it asked for."""

    name = "linear-scaling"
    reads_beliefs = False  # it reads no throughput belief
    params = (
        Param("base_gpus", int, 1, "GPUs the requested batch is meant for", low=1, high=4096),
    )

    def configs(self, belief, requested_batch, nodes, replicas, grad_sqr, grad_var, hint=None):
        limits = belief.limits
        total = requested_batch
        if limits.fixed_batch_size is None:
            scale = max(1.0, replicas / self.values["base_gpus"])
            total = min(requested_batch * scale, limits.max_batch_size)
        # The same (per-GPU batch, accumulation steps) for every upcoming epoch.
        return fixed_configs(limits, total, replicas, np.shape(grad_sqr))

    def depends_on(self, belief):
        return None  # nothing the job measures changes its batch
