"""Compiled arithmetic of the throughput fit (:mod:`goodput_sim.models.throughput_fit`): the
model's pieces, log errors and Jacobian at a point, and each Levenberg-Marquardt step's normal
equations and damped solve.

A fit takes about a dozen steps on a handful of rows, so a step's time was the fixed cost of
Python and numpy calls, not arithmetic. These kernels do the same IEEE operations in the same
order as the numpy expressions and the plain-Python solver they replace (products rounded before
they are summed, numpy's pairwise summation, no fast-math), so fits are bit-identical;
the tests compare them. Not BLAS or LAPACK: the kernels they pick for the machine's CPU sum in
different orders, so fits would differ from one machine to another. The transcendental parts of
the fit (``log``, ``**``) stay in numpy, whose SIMD routines round differently from the C
library's."""

from __future__ import annotations

import numba
import numpy as np

from goodput_sim.numba_cache import use_writable_cache

use_writable_cache()  # a read-only installation caches elsewhere
_jit = numba.njit(cache=True, nogil=True)


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
        m = a if (a >= n or a != a) else n
        small = a if (a <= n or a != a) else n
        t_acc[i], t_net[i], big[i] = a, n, m
        u[i] = small / m
        u_floor[i] = u[i] if (u[i] >= 1e-300 or u[i] != u[i]) else 1e-300
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


@_jit
def log_error_jacobian(
    t_acc,
    t_net,
    total,
    ug,
    powered,
    log_total,
    log_u,
    local_bsz,
    extra,
    inter,
    intra,
    scale,
    gamma,
    gamma_sq,
):
    """The log errors' derivatives in all seven parameters (prior rows left zero), from
    :func:`sync_terms`' pieces, ``powered`` = its shares to the power gamma, ``log_total`` =
    log(1 + u^g), ``log_u`` = log max(u, 1e-300) and ``gamma_sq`` = gamma ** 2."""
    rows = t_acc.shape[0]
    jac = np.zeros((2 * rows + 3, 7))
    for i in range(rows):
        w_acc = powered[i] / total[i]  # share of T_acc^g in the gamma-norm
        w_net = powered[rows + i] / total[i]
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
        jac[rows + i, 6] = scale * (
            -log_total[i] / gamma_sq + ug[i] * log_u[i] / (gamma * total[i])
        )
    return jac
