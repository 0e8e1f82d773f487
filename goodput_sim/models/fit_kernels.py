"""Compiled throughput fit (:mod:`goodput_sim.models.throughput_fit`): the model's pieces, log
errors and Jacobian at a point, each Levenberg-Marquardt step's normal equations and damped
solve, and the whole projected Levenberg-Marquardt loop (:func:`levenberg_marquardt`), one call
per fit.

A fit takes about a dozen steps on a handful of rows, so a step's time was the fixed cost of
Python and numpy calls, not arithmetic. These kernels do the same IEEE operations in the same
order as the numpy expressions and the plain-Python solver they replace (products rounded before
they are summed, numpy's pairwise summation, no fast-math), so fits are bit-identical;
the tests compare them. Not BLAS or LAPACK: the kernels they pick for the machine's CPU sum in
different orders, so fits would differ from one machine to another. ``log`` and ``**`` are the C
library's, as numpy computes them at its baseline SIMD level (:mod:`~goodput_sim.models.libm`):
numpy's AVX-512 routines round differently."""

from __future__ import annotations

import math

import numba
import numpy as np

from goodput_sim.models.libm import scalar_power
from goodput_sim.numba_cache import use_writable_cache

use_writable_cache()  # a read-only installation caches elsewhere
_jit = numba.njit(cache=True, nogil=True)
_jit_numpy_errors = numba.njit(cache=True, nogil=True, error_model="numpy")  # x / 0 is inf

SQRT_GAMMA_PRIOR = math.sqrt(1e-3)  # square roots of the regularisation weights of SPEC 3.3
SQRT_NET_PRIOR = math.sqrt(1e-2)


_BLOCK = 128  # numpy's pairwise-summation block


@_jit
def _block_sum(values, start, count):
    """numpy's sum of at most 128 values: a plain loop below 8, else eight interleaved partial
    sums combined as a tree, then the remainder in order."""
    if count < 8:
        total = 0.0
        for i in range(start, start + count):
            total += values[i]
        return total
    partial = values[start : start + 8].copy()
    i = 8
    while i < count - count % 8:
        for j in range(8):
            partial[j] += values[start + i + j]
        i += 8
    total = ((partial[0] + partial[1]) + (partial[2] + partial[3])) + (
        (partial[4] + partial[5]) + (partial[6] + partial[7])
    )
    while i < count:
        total += values[start + i]
        i += 1
    return total


@_jit
def _first_half(count):
    half = count // 2
    return half - half % 8


@_jit
def _pairwise_sum(values, count):
    """numpy's summation of ``values[:count]`` as it reduces a contiguous axis: blocks of up to
    128 (:func:`_block_sum`), larger runs split in halves (a multiple of 8 first) and the halves'
    sums added. The halving is walked with an explicit stack, not recursion: a recursive kernel
    reloaded from numba's cache crashed the interpreter."""
    if count <= _BLOCK:
        return _block_sum(values, 0, count)
    starts = np.zeros(64, dtype=np.int64)
    counts = np.zeros(64, dtype=np.int64)
    left_sums = np.zeros(64)
    right_pending = np.zeros(64, dtype=np.bool_)
    depth, counts[0] = 0, count
    while True:
        if counts[depth] > _BLOCK:  # descend into the left half
            right_pending[depth] = True
            starts[depth + 1], counts[depth + 1] = starts[depth], _first_half(counts[depth])
            depth += 1
            continue
        value = _block_sum(values, starts[depth], counts[depth])
        while True:  # hand the value up until some split still owes its right half
            if depth == 0:
                return value
            depth -= 1
            if right_pending[depth]:
                right_pending[depth] = False
                left_sums[depth] = value
                half = _first_half(counts[depth])
                starts[depth + 1] = starts[depth] + half
                counts[depth + 1] = counts[depth] - half
                depth += 1
                break
            value = left_sums[depth] + value


@_jit
def normal_equations(jac, r):
    """The gradient ``J^T r`` and the Gauss-Newton matrix ``J^T J``, summed as numpy sums
    ``(jac * r[:, None]).sum(axis=0)`` and ``(jac[:, :, None] * jac[:, None, :]).sum(axis=0)``
    for the column-major Jacobian the fit builds: rows pairwise, added to zero."""
    rows, k = jac.shape
    products = np.empty(rows)
    grad = np.empty(k)
    hessian = np.empty((k, k))
    for a in range(k):
        for i in range(rows):
            products[i] = jac[i, a] * r[i]
        grad[a] = 0.0 + _pairwise_sum(products, rows)
        for b in range(a + 1):
            for i in range(rows):
                products[i] = jac[i, a] * jac[i, b]
            hessian[a, b] = hessian[b, a] = 0.0 + _pairwise_sum(products, rows)
    return grad, hessian


@_jit
def damped_solve(hessian, damping, scaling, rhs):
    """Solve ``(hessian + diag(damping * scaling)) x = rhs`` by Gaussian elimination with partial
    pivoting: (x, True), or (anything, False) for an exactly singular system. A NaN pivot passes,
    as in LAPACK, and the caller sees a NaN step."""
    n = rhs.shape[0]
    rows = np.empty((n, n))
    for i in range(n):
        for j in range(n):
            rows[i, j] = hessian[i, j] + (damping * scaling[i] if i == j else 0.0)
    x = rhs.copy()
    for k in range(n):
        pivot, largest = k, abs(rows[k, k])
        for i in range(k + 1, n):
            if abs(rows[i, k]) > largest:
                pivot, largest = i, abs(rows[i, k])
        if rows[pivot, k] == 0.0:
            return x, False
        if pivot != k:
            for j in range(n):
                rows[k, j], rows[pivot, j] = rows[pivot, j], rows[k, j]
            x[k], x[pivot] = x[pivot], x[k]
        head, top_x = rows[k, k], x[k]
        for i in range(k + 1, n):
            factor = rows[i, k] / head
            for j in range(k, n):
                rows[i, j] -= factor * rows[k, j]
            x[i] -= factor * top_x
    for k in range(n - 1, -1, -1):
        done = 0.0
        for j in range(k + 1, n):
            done += rows[k, j] * x[j]
        x[k] = (x[k] - done) / rows[k, k]
    return x, True


@_jit
def _nan_max(a, b):
    """``np.maximum(a, b)``: NaN when either is."""
    return a if (a >= b or a != a) else b


@_jit
def _nan_min(a, b):
    """``np.minimum(a, b)``: NaN when either is."""
    return a if (a <= b or a != a) else b


@_jit
def sync_terms(theta, local_bsz, inter, intra, extra, tiny):
    """Per observation, the step-time model's pieces at parameters ``theta`` (SPEC 3.1):
    T_acc, T_net, m = max(T_acc, T_net), u = min / m, the shares T_acc / m and T_net / m (one
    array, T_acc's first) and max(u, 1e-300); NaN propagates as through np.maximum."""
    rows = local_bsz.shape[0]
    t_acc, t_net = np.empty(rows), np.empty(rows)
    big, u, u_floor = np.empty(rows), np.empty(rows), np.empty(rows)
    shares = np.empty(2 * rows)
    for i in range(rows):
        a = theta[0] + theta[1] * local_bsz[i]
        if inter[i]:
            n = theta[2] + theta[3] * extra[i]
        elif intra[i]:
            n = theta[4] + theta[5] * extra[i]
        else:
            n = tiny + tiny * extra[i]
        m = _nan_max(a, n)
        t_acc[i], t_net[i], big[i] = a, n, m
        u[i] = _nan_min(a, n) / m
        u_floor[i] = _nan_max(u[i], 1e-300)
        shares[i], shares[rows + i] = a / m, n / m
    return t_acc, t_net, big, u, shares, u_floor


@_jit
def log_errors(logs, targets, scale, gamma, out):
    """Fill ``out``'s first 2 x rows entries with the scaled log errors of compute and step
    times, from ``logs`` = log T_acc, log m and log(1 + u^g) (in that order, rows each)."""
    rows = targets.shape[0] // 2
    for i in range(rows):
        out[i] = scale * (logs[i] - targets[i])
        out[rows + i] = scale * ((logs[rows + i] + logs[2 * rows + i] / gamma) - targets[rows + i])


@_jit_numpy_errors
def objective(x, full, free, local_bsz, inter, intra, extra, targets, scale, tiny):
    """The fit's residuals at ``x`` (the parameters at indices ``free`` of ``full``): the
    scaled log errors of compute and step times, then the three SPEC 3.3 priors; and the
    pieces :func:`jacobian` reuses at the same point. ``log T_sync = log m + log(1 + u^g) / g``
    with ``m = max(T_acc, T_net)`` and ``u = min / m``, which cannot overflow."""
    theta = full.copy()
    for k in range(free.shape[0]):
        theta[free[k]] = x[k]
    gamma = theta[6]
    t_acc, t_net, big, u, shares, u_floor = sync_terms(theta, local_bsz, inter, intra, extra, tiny)
    rows = local_bsz.shape[0]
    ug, total, logs = np.empty(rows), np.empty(rows), np.empty(3 * rows)
    for i in range(rows):
        ug[i] = scalar_power(u[i], gamma)
        total[i] = 1.0 + ug[i]
    for i in range(rows):
        logs[i] = math.log(t_acc[i])
        logs[rows + i] = math.log(big[i])
        logs[2 * rows + i] = math.log(total[i])
    out = np.empty(2 * rows + 3)
    log_errors(logs, targets, scale, gamma, out)
    out[2 * rows] = SQRT_GAMMA_PRIOR * (gamma - 1.0)
    out[2 * rows + 1] = SQRT_NET_PRIOR * theta[3] / theta[2]
    out[2 * rows + 2] = SQRT_NET_PRIOR * theta[5] / theta[4]
    return out, theta, t_acc, t_net, total, ug, shares, u_floor, logs


@_jit_numpy_errors
def jacobian(pieces, free, local_bsz, inter, intra, extra, scale, two):
    """The residuals' exact Jacobian in the free parameters, from :func:`objective`'s pieces
    at the same point. ``two`` is 2.0, passed in so that ``x ** 2`` stays the C library's
    ``pow`` (as Python computes it) rather than being compiled to ``x * x``."""
    _, theta, t_acc, t_net, total, ug, shares, u_floor, logs = pieces
    gamma = theta[6]
    gamma_sq = math.pow(gamma, two)
    rows = t_acc.shape[0]
    jac = np.zeros((2 * rows + 3, 7))
    for i in range(rows):
        w_acc = scalar_power(shares[i], gamma) / total[i]  # share of T_acc^g in the gamma-norm
        w_net = scalar_power(shares[rows + i], gamma) / total[i]
        d_acc = scale / t_acc[i]
        jac[i, 0] = d_acc
        jac[i, 1] = d_acc * local_bsz[i]
        d_sync = w_acc * d_acc
        jac[rows + i, 0] = d_sync
        jac[rows + i, 1] = d_sync * local_bsz[i]
        net = scale * w_net / t_net[i]
        across = net if inter[i] else 0.0
        within = net if intra[i] else 0.0
        jac[rows + i, 2] = across
        jac[rows + i, 3] = across * extra[i]
        jac[rows + i, 4] = within
        jac[rows + i, 5] = within * extra[i]
        log_u = math.log(u_floor[i])
        jac[rows + i, 6] = scale * (
            -logs[2 * rows + i] / gamma_sq + ug[i] * log_u / (gamma * total[i])
        )
    jac[2 * rows, 6] = SQRT_GAMMA_PRIOR
    c = SQRT_NET_PRIOR
    jac[2 * rows + 1, 2] = -c * theta[3] / math.pow(theta[2], two)
    jac[2 * rows + 1, 3] = c / theta[2]
    jac[2 * rows + 2, 4] = -c * theta[5] / math.pow(theta[4], two)
    jac[2 * rows + 2, 5] = c / theta[4]
    out = np.empty((jac.shape[0], free.shape[0]))
    for k in range(free.shape[0]):
        out[:, k] = jac[:, free[k]]
    return out


@_jit
def _sum_of_squares(r):
    """``np.sum(r * r)``: products rounded, then numpy's pairwise sum."""
    return _pairwise_sum(r * r, r.shape[0])


@_jit_numpy_errors
def levenberg_marquardt(
    x0, lower, upper, full, free, local_bsz, inter, intra, extra, targets, scale, tiny, two, limit
):
    """Minimise the squared residuals of :func:`objective` within the box [lower, upper]:
    Levenberg-Marquardt steps (Marquardt's diagonal scaling) on the parameters the gradient
    does not hold at a bound, projected back into the box; at most ``limit`` steps. Returns
    (x, converged): converged when the cost stops improving by more than scipy's default
    ``ftol`` (relative 1e-8), the gradient vanishes or no damped step improves it."""
    n = x0.shape[0]
    x = np.empty(n)
    for k in range(n):
        x[k] = _nan_min(_nan_max(x0[k], lower[k]), upper[k])
    pieces = objective(x, full, free, local_bsz, inter, intra, extra, targets, scale, tiny)
    cost = _sum_of_squares(pieces[0])
    damping = 1e-3
    for _ in range(limit):
        jac = jacobian(pieces, free, local_bsz, inter, intra, extra, scale, two)
        grad, hessian = normal_equations(jac, pieces[0])
        moving = np.empty(n, dtype=np.int64)  # the parameters free to move, in order
        m = 0
        for k in range(n):
            held = (x[k] <= lower[k] and grad[k] > 0) or (x[k] >= upper[k] and grad[k] < 0)
            if not held:
                moving[m] = k
                m += 1
        if m == 0:
            return x, True
        moving = moving[:m]
        g, low, high = grad[moving], lower[moving], upper[moving]
        h = np.empty((m, m))
        for a in range(m):
            for b in range(m):
                h[a, b] = hessian[moving[a], moving[b]]
        largest = abs(g[0])  # np.abs(g).max(): NaN when any is
        for k in range(1, m):
            largest = _nan_max(largest, abs(g[k]))
        if largest < 1e-14:
            return x, True
        scaling = np.empty(m)
        for k in range(m):
            scaling[k] = _nan_max(h[k, k], 1e-12)
        while True:
            step, solved = damped_solve(h, damping, scaling, -g)
            if not solved:
                damping *= 10.0
                continue
            trial = x.copy()
            for j in range(m):
                k = moving[j]
                trial[k] = _nan_min(_nan_max(x[k] + step[j], low[j]), high[j])
            tried = objective(
                trial, full, free, local_bsz, inter, intra, extra, targets, scale, tiny
            )
            cost_trial = _sum_of_squares(tried[0])
            if math.isfinite(cost_trial) and cost_trial < cost:
                improvement = cost - cost_trial
                x, pieces, cost = trial, tried, cost_trial
                third = damping / 3.0
                damping = 1e-12 if third < 1e-12 else third  # Python's max(third, 1e-12)
                if improvement <= 1e-8 * cost + 1e-18:  # scipy's default ftol
                    return x, True
                break
            damping *= 4.0
            if damping > 1e12:
                return x, True  # no step improves: a (bounded) minimum
    return x, False
