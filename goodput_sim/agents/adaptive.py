"""Adaptive agents that re-choose the batch from the job's fitted throughput model.

* ``goodput`` (Pollux's agent, as in AdaptDL): the (b, s) maximising goodput = throughput x
  statistical efficiency at each upcoming epoch's gradient statistics.
* ``throughput``: the (b, s) with the most examples per second, ignoring efficiency.

Before the job's first observation there is no model; both run a fixed, safe batch
(max(M0, b_min x GPUs), SPEC 5.3). An application whose limits fix its batch
(``fixed_batch_size``, ncf in the Pollux artifact) keeps that batch under both."""

from __future__ import annotations

import dataclasses
import functools

import numpy as np

from goodput_sim.agents.base import BatchAgent, fixed_configs, register_agent
from goodput_sim.models.goodput import CandidateGrid, GoodputModel


def without_statistics(model: GoodputModel) -> GoodputModel:
    """``model`` with neutral gradient statistics, for uses that ignore them: jobs with equal
    fitted parameters then have equal models and share memoised results."""
    return dataclasses.replace(model, grad_sqr=1.0, grad_var=0.0)


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


@register_agent
class GoodputAgent(BatchAgent):
    """Goodput-maximising batch and accumulation at every upcoming epoch (Pollux)."""

    name = "goodput"

    def __init__(self, **values):
        super().__init__(**values)
        # Per agent (one per simulation): each allocation's candidate configurations and their
        # iteration times, keyed by the model without its gradient statistics (all they read),
        # so that a plan for new statistics computes only the efficiency terms.
        self._grids: dict[tuple, CandidateGrid] = {}

    def configs(self, belief, requested_batch, nodes, replicas, grad_sqr, grad_var, hint=None):
        fixed = _unadapted(belief, replicas, np.shape(grad_sqr))
        if fixed is not None:
            return fixed
        model = belief.goodput_model
        stripped = dataclasses.replace(model, grad_sqr=0.0, grad_var=0.0)
        key = (stripped, nodes, replicas)
        grid = self._grids.get(key)
        if grid is None:
            if len(self._grids) >= _MAX_GRIDS:
                self._grids.clear()
            pair = np.array([float(nodes)]), np.array([float(replicas)])
            grid = self._grids[key] = stripped.candidate_grid(*pair)
        choice = model.best_on(grid, True, grad_sqr, grad_var)
        return choice.local_bsz, choice.accum_steps


_MAX_GRIDS = 4096  # one-allocation grids kept per agent (a few kB each)


@register_agent
class ThroughputAgent(BatchAgent):
    """Batch and accumulation with the most examples per second (throughput-only)."""

    name = "throughput"

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
