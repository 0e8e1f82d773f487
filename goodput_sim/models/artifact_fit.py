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
from numpy.typing import ArrayLike, NDArray

from goodput_sim.models.fit_kernels import (
    artifact_log_inputs,
    artifact_terms,
    artifact_value_parts,
)
from goodput_sim.models.numerics import TINY
from goodput_sim.models.throughput import (
    _INITIAL,
    _LOWER,
    _UPPER,
    PARAM_NAMES,
    ThroughputModel,
    ThroughputParams,
)
from goodput_sim.models.throughput_fit import _SQRT_GAMMA_PRIOR, _SQRT_NET_PRIOR

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
    nodes, replicas, local_bsz, accum_time, step_time = (
        np.atleast_1d(np.asarray(a, dtype=np.float64))
        for a in (nodes, replicas, local_bsz, accum_time, step_time)
    )
    if nodes.size == 0:
        raise ValueError("cannot fit a throughput model without observations")
    frozen = ThroughputModel._frozen_values(nodes, replicas, local_bsz, accum_time)
    start = _INITIAL.copy()
    lower, upper = _LOWER.copy(), _UPPER.copy()
    for name, value in frozen.items():
        k = PARAM_NAMES.index(name)
        start[k] = lower[k] = upper[k] = value
    objective = _ArtifactObjective(
        nodes,
        replicas,
        local_bsz,
        np.log(np.maximum(accum_time, TINY)),
        np.log(np.maximum(step_time, TINY)),
    )
    with np.errstate(all="ignore"):
        theta = lbfgsb(objective, start, lower, upper)
    params = ThroughputParams(*theta.tolist())
    if not np.any(nodes > 1):  # crossing nodes costs at least 10% more (SPEC 3.3's prior)
        params = dataclasses.replace(
            params,
            alpha_n=max(params.alpha_n, 1.1 * params.alpha_r),
            beta_n=max(params.beta_n, 1.1 * params.beta_r),
        )
    return params


def lbfgsb(objective, start: NDArray, lower: NDArray, upper: NDArray) -> NDArray:
    """``objective``'s minimiser within the bounds by L-BFGS-B from ``start``, tolerance 1e-5:
    ``scipy.optimize.minimize(objective, start, jac=True, bounds=..., tol=1e-5).x``.

    A fit takes about 40 evaluations of a handful of rows, where ``minimize``'s Python layers
    cost as much as the objective itself. With SciPy's compiled L-BFGS-B routine of 1.15 and
    later, this drives it directly as ``minimize`` does (same options, same calls, so the same
    iterates bit for bit; the tests compare the two); otherwise it calls ``minimize``."""
    routine = _setulb()
    if routine is None:  # pragma: no cover - SciPy before 1.15
        from scipy.optimize import Bounds, minimize

        bounds = Bounds(lower, upper, keep_feasible=True)
        return np.asarray(minimize(objective, start, jac=True, bounds=bounds, tol=TOLERANCE).x)
    n = start.size
    x = np.clip(start, lower, upper).astype(np.float64)
    low, high = np.where(np.isinf(lower), 0.0, lower), np.where(np.isinf(upper), 0.0, upper)
    # Which bounds a variable has: 0 none, 1 lower, 2 both, 3 upper (the routine's encoding).
    kinds = np.where(
        np.isinf(lower), np.where(np.isinf(upper), 0, 3), np.where(np.isinf(upper), 1, 2)
    ).astype(np.int32)
    f, g = np.array(0.0), np.zeros(n)
    m = _MEMORY
    task = np.zeros(2, dtype=np.int32)
    state = (  # the routine's workspace and saved state, in its argument order
        np.zeros(2 * m * n + 5 * n + 11 * m * m + 8 * m),
        np.zeros(3 * n, dtype=np.int32),
        task,
        np.zeros(4, np.int32),
        np.zeros(44, np.int32),
        np.zeros(29),
        _LINE_SEARCH_STEPS,
        np.zeros(2, dtype=np.int32),
    )
    factr = TOLERANCE / np.finfo(float).eps
    iterations = evaluations = 0
    while True:
        routine(m, x, low, high, kinds, f, g, factr, TOLERANCE, *state)
        if task[0] == _EVALUATE:
            value, gradient = objective(x.copy())
            f, g = float(value), np.asarray(gradient, dtype=np.float64)
            evaluations += 1
        elif task[0] == _NEW_ITERATE:
            iterations += 1
            if iterations >= _MAX_ITERATIONS or evaluations > _MAX_ITERATIONS:
                task[:] = _STOP  # as minimize stops: the routine is told, and returns
        else:
            break
    return x


# minimize's defaults for L-BFGS-B: stored corrections, line-search steps, iteration and
# evaluation limits; and the routine's requests: evaluate at x, or a new iterate is ready.
_MEMORY, _LINE_SEARCH_STEPS, _MAX_ITERATIONS = 10, 20, 15000
_EVALUATE, _NEW_ITERATE, _STOP = 3, 1, (5, 504)


def _setulb():
    """SciPy's compiled L-BFGS-B step (the C routine of SciPy 1.15 and later), or None."""
    import scipy
    from scipy.optimize import _lbfgsb

    major, minor = (int(part) for part in scipy.__version__.split(".")[:2])
    routine = getattr(_lbfgsb, "setulb", None)
    if (major, minor) < (1, 15) or routine is None:
        return None
    return routine


class _ArtifactObjective:
    """The artifact's objective and its gradient at a point, for L-BFGS-B: the RMS log error of
    the accumulation-step times plus that of the step times plus the priors' sum of squares.

    The arithmetic is :class:`~goodput_sim.models.throughput_fit.LogFitObjective`'s, bit for bit,
    in three compiled kernels around numpy's powers and logs (one call each); the gradient's
    products stay numpy's as well."""

    def __init__(self, nodes, replicas, local_bsz, log_acc, log_sync):
        self.local_bsz = local_bsz
        self.extra = np.maximum(replicas - 2.0, TINY)
        self.inter = nodes > 1
        self.intra = ~self.inter & (replicas > 1)
        self.targets = np.concatenate([log_acc, log_sync])
        self.rows = len(local_bsz)
        self.scale = 1.0 / np.sqrt(self.rows)

    def __call__(self, x):
        t_acc, t_net, big, u_floor, bases = artifact_terms(
            x, self.local_bsz, self.inter, self.intra, self.extra, TINY
        )
        _, _, alpha_n, beta_n, alpha_r, beta_r, gamma = x.tolist()
        powered = bases**gamma
        log_inputs = artifact_log_inputs(t_acc, big, powered, u_floor)
        c = _SQRT_NET_PRIOR
        priors = np.array(
            (_SQRT_GAMMA_PRIOR * (gamma - 1.0), c * beta_n / alpha_n, c * beta_r / alpha_r)
        )
        prior_jac = np.array(
            (
                _SQRT_GAMMA_PRIOR,
                -c * beta_n / alpha_n**2,
                c / alpha_n,
                -c * beta_r / alpha_r**2,
                c / alpha_r,
            )
        )
        r, first, second, prior_sum, jac = artifact_value_parts(
            log_inputs,
            np.log(log_inputs),
            powered,
            t_acc,
            t_net,
            self.local_bsz,
            self.extra,
            self.inter,
            self.intra,
            self.targets,
            self.scale,
            gamma,
            gamma**2,
            priors,
            prior_jac,
        )
        rows = self.rows
        value, gradient = 0.0, np.zeros_like(x)
        for norm, part in ((first, slice(0, rows)), (second, slice(rows, 2 * rows))):
            value += norm
            if norm > 0:
                gradient += jac[part].T @ r[part] / norm
        priors_part = slice(2 * rows, None)
        value += prior_sum
        gradient += 2.0 * jac[priors_part].T @ r[priors_part]
        return value, gradient
