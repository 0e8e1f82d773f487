"""The throughput fit as the Sia artifact's simulator runs it (Sia SPEC 3.1).

The objective is Pollux's (Pollux SPEC 3.3): the root-mean-square log error of the
accumulation-step times plus that of the synchronising-step times (each a square root, not
squared), plus the two priors. The artifact minimises it with SciPy's bounded quasi-Newton
solver (L-BFGS-B) from the same fixed starting point at every refit, and stops at a tolerance of
1e-5. Where the observations leave parameters free (one GPU count, one per-GPU batch), the
solver stops near the starting point rather than at the least-squares optimum
(:class:`~goodput_sim.models.throughput.ThroughputModel`): the network terms then stay near
their starting 0.1 s, and the model expects little speed-up from more GPUs until it has run on
them. Sia's goodput estimates, and so its choices, follow from that; this module reproduces it
for the sia policy's ``fit="artifact"`` setting.
"""

from __future__ import annotations

import dataclasses

import numpy as np
from numpy.typing import ArrayLike

from goodput_sim.models.numerics import TINY
from goodput_sim.models.throughput import (
    _INITIAL,
    _LOWER,
    _UPPER,
    PARAM_NAMES,
    ThroughputModel,
    ThroughputParams,
)

TOLERANCE = 1e-5  # the artifact's solver tolerance


def artifact_fit(
    nodes: ArrayLike,
    replicas: ArrayLike,
    local_bsz: ArrayLike,
    accum_time: ArrayLike,
    step_time: ArrayLike,
) -> ThroughputParams:
    """Throughput parameters fitted to observed (nodes, replicas, b) -> (accumulation-step,
    optimizer-step) seconds, as the Sia artifact fits them: frozen parameters as
    :class:`ThroughputModel` freezes them, the others from the fixed start by L-BFGS-B on the
    sum of the two RMS log errors and the priors, tolerance 1e-5; then the multi-node prior."""
    from scipy.optimize import Bounds, minimize

    from goodput_sim.models.throughput_fit import LogFitObjective

    nodes, replicas, local_bsz, accum_time, step_time = (
        np.atleast_1d(np.asarray(a, dtype=np.float64))
        for a in (nodes, replicas, local_bsz, accum_time, step_time)
    )
    if nodes.size == 0:
        raise ValueError("cannot fit a throughput model without observations")
    frozen = ThroughputModel._frozen_values(nodes, replicas, local_bsz, accum_time)
    names = PARAM_NAMES
    start = _INITIAL.copy()
    lower, upper = _LOWER.copy(), _UPPER.copy()
    for name, value in frozen.items():
        k = names.index(name)
        start[k] = lower[k] = upper[k] = value
    free = np.ones(len(names), dtype=bool)
    objective = LogFitObjective(
        nodes,
        replicas,
        local_bsz,
        np.log(np.maximum(accum_time, TINY)),
        np.log(np.maximum(step_time, TINY)),
        start.copy(),
        free,
    )
    rows = nodes.size

    def value_and_gradient(x):
        with np.errstate(all="ignore"):
            r = objective.residuals(x)
            jac = objective.jacobian(x)
        value, gradient = 0.0, np.zeros_like(x)
        for part in (slice(0, rows), slice(rows, 2 * rows)):
            norm = float(np.sqrt(np.sum(r[part] ** 2)))
            value += norm
            if norm > 0:
                gradient += jac[part].T @ r[part] / norm
        priors = slice(2 * rows, None)
        value += float(np.sum(r[priors] ** 2))
        gradient += 2.0 * jac[priors].T @ r[priors]
        return value, gradient

    result = minimize(
        value_and_gradient,
        start,
        jac=True,
        bounds=Bounds(lower, upper, keep_feasible=True),
        tol=TOLERANCE,
    )
    theta = np.asarray(result.x, dtype=np.float64)
    params = ThroughputParams(*theta.tolist())
    if not np.any(nodes > 1):  # crossing nodes costs at least 10% more (SPEC 3.3's prior)
        params = dataclasses.replace(
            params,
            alpha_n=max(params.alpha_n, 1.1 * params.alpha_r),
            beta_n=max(params.beta_n, 1.1 * params.beta_r),
        )
    return params
