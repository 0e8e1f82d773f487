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

from goodput_sim.blas_kernel import check_kernel
from goodput_sim.models import artifact_kernels as kernels
from goodput_sim.models import libm
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
    nodes, replicas, local_bsz, accum_time, step_time = (
        np.atleast_1d(np.asarray(a, dtype=np.float64))
        for a in (nodes, replicas, local_bsz, accum_time, step_time)
    )
    if nodes.size == 0:
        raise ValueError("cannot fit a throughput model without observations")
    check_kernel()  # L-BFGS-B sums through BLAS
    start, lower, upper = start_and_bounds(nodes, replicas, local_bsz, accum_time)
    objective = _ArtifactObjective(nodes, replicas, local_bsz, accum_time, step_time)
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


def start_and_bounds(
    nodes: NDArray, replicas: NDArray, local_bsz: NDArray, accum_time: NDArray
) -> tuple[NDArray, NDArray, NDArray]:
    """The fit's fixed start and bounds, the parameters the observations leave free frozen as
    :class:`ThroughputModel` freezes them."""
    start, lower, upper = _INITIAL.copy(), _LOWER.copy(), _UPPER.copy()
    for name, value in ThroughputModel._frozen_values(
        nodes, replicas, local_bsz, accum_time
    ).items():
        k = PARAM_NAMES.index(name)
        start[k] = lower[k] = upper[k] = value
    return start, lower, upper


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
    the accumulation-step times plus that of the step times (the step time predicted as
    ``(T_acc^g + T_net^g)^(1/g)``) plus the priors ``1e-3 (g - 1)^2`` and
    ``1e-2 ((beta_n / alpha_n)^2 + (beta_r / alpha_r)^2)`` (Pollux SPEC 3.3).

    The artifact differentiates it by reverse-mode automatic differentiation. Near flat
    optima, as when the observations leave parameters free, a last-bit difference in a
    gradient steers L-BFGS-B to another stopping point, so the value and gradient here are
    computed in that evaluation's order, operation by operation: the forward pass as written
    above, then each operation's derivative from the last to the first, and a parameter's
    contributions summed in the order its uses are reached backwards (the priors', then the
    step-time terms', observations last to first). Tests compare both with an automatic
    differentiation of the formula, bit for bit."""

    def __init__(self, nodes, replicas, local_bsz, accum_time, step_time):
        self.local_bsz = np.ascontiguousarray(local_bsz, dtype=np.float64)
        self.inter = np.ascontiguousarray(nodes > 1)  # the slowest link: across nodes, else
        self.intra = ~self.inter & (replicas > 1)  # within one, else none
        self.extra = np.maximum(replicas - 2, 1e-8)  # rounds of the ring beyond two
        self.log_accum = libm.log(accum_time)  # the C library's, on every CPU (libm)
        self.log_step = libm.log(step_time)
        # Observations whose network time reads alpha_n, beta_n (across) or alpha_r, beta_r
        # (within), last first: the order their gradients are summed in.
        self.across = np.flatnonzero(self.inter)[::-1].copy()
        self.within = np.flatnonzero(self.intra)[::-1].copy()

    def __call__(self, x):
        """(value, gradient) at ``x``: one compiled call (``artifact_kernels.objective``)."""
        return kernels.objective(
            np.ascontiguousarray(x, dtype=np.float64),
            self.local_bsz,
            self.inter,
            self.intra,
            self.extra,
            self.log_step,
            self.log_accum,
            self.across,
            self.within,
            2.0,
            -0.5,
        )
