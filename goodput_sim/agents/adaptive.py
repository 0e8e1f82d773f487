"""Adaptive agents that re-choose the batch from the job's fitted throughput model.

* ``goodput`` (Pollux's agent, as in AdaptDL): the (b, s) maximising goodput = throughput x
  statistical efficiency at each upcoming epoch's gradient statistics.
* ``throughput``: the (b, s) with the most examples per second, ignoring efficiency.

Before the job's first observation there is no model; both run a fixed, safe batch
(max(M0, b_min x GPUs), SPEC 5.3). An application whose limits fix its batch
(``fixed_batch_size``, ncf in the Pollux artifact) keeps that batch under both."""

from __future__ import annotations

import functools

import numpy as np

from goodput_sim.agents.base import BatchAgent, fixed_configs, register_agent
from goodput_sim.models.goodput import GoodputModel, without_statistics


def _unadapted(belief, replicas, shape):
    """The batch plan of a job that cannot adapt (yet): its application's fixed batch, or the
    safe batch before its first observation; None once it can."""
    lim = belief.limits
    if lim.fixed_batch_size is not None:
        return fixed_configs(lim, lim.fixed_batch_size, replicas, shape)
    if belief.goodput_model is None:
        total = max(lim.init_batch_size, lim.min_local_bsz * replicas)
        return fixed_configs(lim, total, replicas, shape)
    return None


def _model_key(belief, requested_batch, nodes, replicas):
    """What both adaptive agents' plans depend on besides the per-epoch statistics: the limits,
    the fitted model (its own statistics are not read), and the allocation's shape."""
    model = belief.goodput_model
    return belief.limits, None if model is None else without_statistics(model), nodes, replicas


@register_agent
class GoodputAgent(BatchAgent):
    """Goodput-maximising batch and accumulation at every upcoming epoch (Pollux)."""

    name = "goodput"
    plan_key = staticmethod(_model_key)

    def configs(self, belief, requested_batch, nodes, replicas, grad_sqr, grad_var, hint=None):
        fixed = _unadapted(belief, replicas, np.shape(grad_sqr))
        if fixed is not None:
            return fixed
        choice = belief.goodput_model.optimize(nodes, replicas, True, grad_sqr, grad_var)
        return choice.local_bsz, choice.accum_steps


@register_agent
class ThroughputAgent(BatchAgent):
    """Batch and accumulation with the most examples per second (throughput-only)."""

    name = "throughput"
    plan_key = staticmethod(_model_key)

    def __init__(self, **values):
        super().__init__(**values)
        # Memoised per agent (one per simulation): jobs of one application that ran the same
        # configurations share fitted parameters, and so their fastest configurations.
        self._fastest = functools.lru_cache(maxsize=4096)(_fastest_config)

    def configs(self, belief, requested_batch, nodes, replicas, grad_sqr, grad_var, hint=None):
        size = np.shape(grad_sqr)
        fixed = _unadapted(belief, replicas, size)
        if fixed is not None:
            return fixed
        model = without_statistics(belief.goodput_model)
        local_bsz, accum_steps = self._fastest(model, nodes, replicas)
        return np.full(size, local_bsz), np.full(size, accum_steps)


def _fastest_config(model: GoodputModel, nodes: int, replicas: int) -> tuple[float, float]:
    """(per-GPU batch, accumulation steps) with the most examples per second."""
    choice = model.optimize(nodes, replicas, statistical=False)
    return float(choice.local_bsz[0]), float(choice.accum_steps[0])
