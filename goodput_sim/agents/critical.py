"""The ``critical-batch`` agent (seed 002): the job's total batch follows its current gradient
noise scale, the critical batch ``B_crit = M0 * grad_var / grad_sqr``, re-chosen every epoch.

* ``compute`` mode stays at ``factor x B_crit``: the example-efficient choice, where each
  example still buys nearly full progress (a compute-bound job: a metered budget, many
  experiments sharing hardware).
* ``time`` mode grows past ``B_crit`` to fill the job's GPUs without accumulation
  (``GPUs x max per-GPU batch``), never below ``B_crit``: the fast choice for a time-bound job
  on GPUs it holds anyway.

Either stays within the job's limits: at least ``max(M0, min per-GPU batch x GPUs)``, at most
the largest validated batch. The statistics are the job's own measurements (SPEC 4.4: already
smoothed by a bias-corrected moving average as the job trains), so the agent reads no fitted
throughput model.
"""

from __future__ import annotations

import numpy as np

from goodput_sim.agents.base import BatchAgent, fixed_configs, register_agent
from goodput_sim.models.efficiency import noise_scale
from goodput_sim.models.goodput import fixed_batch_configs
from goodput_sim.params import Param


@register_agent
class CriticalBatch(BatchAgent):
    """Total batch at the job's current critical batch (compute mode) or past it to fill its
    GPUs (time mode), re-chosen every epoch (seed 002)."""

    name = "critical-batch"
    reads_beliefs = False
    params = (
        Param(
            "mode",
            str,
            "compute",
            "compute: stay near the critical batch; time: fill the GPUs, at least the critical "
            "batch",
            choices=("compute", "time"),
        ),
        Param("factor", float, 1.0, "multiple of the critical batch aimed at", low=0.05, high=20),
    )

    def configs(self, belief, requested_batch, nodes, replicas, grad_sqr, grad_var, hint=None):
        lim = belief.limits
        if lim.fixed_batch_size is not None:
            return fixed_configs(lim, lim.fixed_batch_size, replicas, np.shape(grad_sqr))
        target = self.values["factor"] * noise_scale(lim.init_batch_size, grad_sqr, grad_var)
        if self.values["mode"] == "time":
            target = np.maximum(target, replicas * lim.max_local_bsz)
        low = max(lim.init_batch_size, lim.min_local_bsz * replicas)
        total = np.clip(np.nan_to_num(target, posinf=lim.max_batch_size), low, lim.max_batch_size)
        return fixed_batch_configs(np.round(total), replicas, lim)

    def depends_on(self, belief):
        return None  # only the job's measured statistics, passed per epoch
