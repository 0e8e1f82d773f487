"""Compiled arithmetic of the Sia artifact's fit objective
(:class:`~goodput_sim.models.artifact_fit._ArtifactObjective`): its value and gradient at a
point, in one call (:func:`objective`), from its step-time pieces, errors and backward pass.

A fit evaluates the objective about 40 times on a handful of observations, so an evaluation's
time was that of some 45 numpy calls, then of seven kernel calls, not arithmetic. These kernels
do the same IEEE operations in the same order as those calls (no fast-math; sums in numpy's
pairwise order, added to zero as ``np.add.reduce`` adds them), so value and gradient keep their
bits; the tests compare them with automatic differentiation. ``log`` and ``power`` are the C
library's, as numpy computes them at its baseline SIMD level: numpy's AVX-512 routines round
differently in the last bit, and a fit near a flat optimum would then stop elsewhere on such a
CPU (:func:`powers_and_logs`).
"""

from __future__ import annotations

import math

import numba
import numpy as np

from goodput_sim.models.fit_kernels import _pairwise_sum
from goodput_sim.models.libm import scalar_power
from goodput_sim.numba_cache import use_writable_cache

use_writable_cache()  # a read-only installation caches elsewhere
# IEEE results (inf, NaN) rather than Python's ZeroDivisionError, as numpy gives them.
_jit = numba.njit(cache=True, nogil=True, error_model="numpy")


@_jit
def _sum(values):
    """``np.add.reduce(values)``: numpy's pairwise sum, added to zero."""
    return 0.0 + _pairwise_sum(values, values.shape[0])


@_jit
def step_pieces(theta, local_bsz, inter, intra, extra):
    """Per observation, T_acc = alpha_c + beta_c b and T_net = alpha + beta (replicas - 2) with
    the slowest link's pair (across nodes, within one, else 1e-8 each)."""
    rows = local_bsz.shape[0]
    t_acc, t_net = np.empty(rows), np.empty(rows)
    for i in range(rows):
        t_acc[i] = theta[0] + theta[1] * local_bsz[i]
        if inter[i]:
            link, retro = theta[2], theta[3]
        elif intra[i]:
            link, retro = theta[4], theta[5]
        else:
            link, retro = 1e-8, 1e-8
        t_net[i] = link + retro * extra[i]
    return t_acc, t_net


@_jit
def powers_and_logs(t_acc, t_net, gamma):
    """Per observation: T_acc^g, T_net^g, their sum, its log, log T_acc, T_acc^(g-1), log T_net
    and T_net^(g-1), each rounded by the C library's ``pow`` and ``log`` on every CPU.

    numpy's ``power`` and ``log`` call the same functions at its baseline SIMD level, so these are
    its results there, bit for bit; on a CPU with AVX-512 numpy switches to vector routines that
    round differently, which moved sia's choices from one machine to another."""
    rows = t_acc.shape[0]
    acc_pow, net_pow, powers, log_sum = (
        np.empty(rows),
        np.empty(rows),
        np.empty(rows),
        np.empty(rows),
    )
    log_acc, acc_less, log_net, net_less = (
        np.empty(rows),
        np.empty(rows),
        np.empty(rows),
        np.empty(rows),
    )
    less = gamma - 1
    for i in range(rows):
        acc_pow[i] = scalar_power(t_acc[i], gamma)
        net_pow[i] = scalar_power(t_net[i], gamma)
        powers[i] = acc_pow[i] + net_pow[i]
        log_sum[i] = math.log(powers[i])
        log_acc[i] = math.log(t_acc[i])
        acc_less[i] = scalar_power(t_acc[i], less)
        log_net[i] = math.log(t_net[i])
        net_less[i] = scalar_power(t_net[i], less)
    return acc_pow, net_pow, powers, log_sum, log_acc, acc_less, log_net, net_less


@_jit
def log_errors(log_sum, log_acc, log_step, log_accum, gamma):
    """The step-time and accumulation-time log errors and their mean squares."""
    rows = log_sum.shape[0]
    step_error, acc_error, squares = np.empty(rows), np.empty(rows), np.empty(rows)
    for i in range(rows):
        step_error[i] = log_sum[i] / gamma - log_step[i]
        acc_error[i] = log_acc[i] - log_accum[i]
    for i in range(rows):
        squares[i] = acc_error[i] * acc_error[i]
    acc_mean = _sum(squares) / rows
    for i in range(rows):
        squares[i] = step_error[i] * step_error[i]
    step_mean = _sum(squares) / rows
    return step_error, acc_error, acc_mean, step_mean


@_jit
def gradient(
    step_error,
    acc_error,
    step_scale,
    acc_scale,
    gamma,
    gamma_sq,
    powers,
    log_sum,
    t_acc,
    acc_pow,
    log_acc,
    acc_pow_less,
    net_pow,
    log_net,
    net_pow_less,
    extra,
    local_bsz,
    across,
    within,
    priors,
):
    """The objective's gradient from its last operation to its first (reverse mode), starting
    from the priors' parts ``priors`` (alpha_n, beta_n, alpha_r, beta_r, gamma); ``*_pow_less``
    are the times to the power gamma - 1, ``step_scale``/``acc_scale`` the derivative of each
    root mean square per unit error."""
    rows = step_error.shape[0]
    g_step, g_sum, g_net = np.empty(rows), np.empty(rows), np.empty(rows)
    g_acc, terms = np.empty(rows), np.empty(rows)
    grad_alpha_n, grad_beta_n, grad_alpha_r, grad_beta_r, grad_gamma = (
        priors[0],
        priors[1],
        priors[2],
        priors[3],
        priors[4],
    )
    for i in range(rows):
        g_step[i] = step_scale * step_error[i]
        terms[i] = -g_step[i] * log_sum[i] / gamma_sq
    grad_gamma = grad_gamma + _sum(terms)
    for i in range(rows):
        g_sum[i] = g_step[i] / gamma / powers[i]
        g_net[i] = g_sum[i] * gamma * net_pow_less[i]
        terms[i] = g_sum[i] * log_net[i] * net_pow[i]
    grad_gamma = grad_gamma + _sum(terms)
    for i in across:
        grad_beta_n = grad_beta_n + extra[i] * g_net[i]
    for i in within:
        grad_beta_r = grad_beta_r + extra[i] * g_net[i]
    for i in across:
        grad_alpha_n = grad_alpha_n + g_net[i]
    for i in within:
        grad_alpha_r = grad_alpha_r + g_net[i]
    for i in range(rows):
        g_acc[i] = g_sum[i] * gamma * acc_pow_less[i]
        terms[i] = g_sum[i] * log_acc[i] * acc_pow[i]
    grad_gamma = grad_gamma + _sum(terms)
    for i in range(rows):
        g_acc[i] = g_acc[i] + acc_scale * acc_error[i] / t_acc[i]
    out = np.empty(7)
    out[0] = _sum(g_acc)
    for i in range(rows):
        terms[i] = local_bsz[i] * g_acc[i]
    out[1] = _sum(terms)
    out[2], out[3], out[4], out[5], out[6] = (
        grad_alpha_n,
        grad_beta_n,
        grad_alpha_r,
        grad_beta_r,
        grad_gamma,
    )
    return out


@_jit
def objective(x, local_bsz, inter, intra, extra, log_step, log_accum, across, within, two, half):
    """The objective's value and gradient at ``x``, as the artifact's evaluation computes them
    (:class:`~goodput_sim.models.artifact_fit._ArtifactObjective`): forward, then backward from
    the priors' parts. Its scalar powers are numpy's: ``np.power(v, 2)`` squares, while
    ``v ** 2`` and ``v ** -0.5`` call the C library's ``pow``, which differs from a square in
    about 1 case in 1,200; so ``two`` (2.0) and ``half`` (-0.5) are passed in at run time, where
    the compiler cannot turn ``pow(v, 2.0)`` into ``v * v``."""
    alpha_n, beta_n, alpha_r, beta_r, gamma = x[2], x[3], x[4], x[5], x[6]
    rows = local_bsz.shape[0]
    # Forward.
    t_acc, t_net = step_pieces(x, local_bsz, inter, intra, extra)
    acc_pow, net_pow, powers, log_sum, log_acc, acc_less, log_net, net_less = powers_and_logs(
        t_acc, t_net, gamma
    )
    step_error, acc_error, acc_mean, step_mean = log_errors(
        log_sum, log_acc, log_step, log_accum, gamma
    )
    gamma_less = gamma - 1
    ratio_n, ratio_r = beta_n / alpha_n, beta_r / alpha_r
    value = (
        math.sqrt(acc_mean)
        + math.sqrt(step_mean)
        + 1e-3 * (gamma_less * gamma_less)
        + 1e-2 * (ratio_n * ratio_n + ratio_r * ratio_r)
    )
    # Backward, from the last operation to the first: the priors' parts, then the step-time
    # terms' and the accumulation-time terms'. A mean's derivative spreads over the rows, then
    # the square's doubles: scalars first, then per row.
    g_ratio = 1e-2 * 1.0 * 2
    g_ratio_r, g_ratio_n = g_ratio * ratio_r, g_ratio * ratio_n
    priors = np.empty(5)
    priors[0] = -g_ratio_n * beta_n / math.pow(alpha_n, two)
    priors[1] = g_ratio_n / alpha_n
    priors[2] = -g_ratio_r * beta_r / math.pow(alpha_r, two)
    priors[3] = g_ratio_r / alpha_r
    priors[4] = 1e-3 * 1.0 * 2 * gamma_less
    gradient_at = gradient(
        step_error,
        acc_error,
        1.0 * 0.5 * math.pow(step_mean, half) / rows * 2,
        1.0 * 0.5 * math.pow(acc_mean, half) / rows * 2,
        gamma,
        math.pow(gamma, two),
        powers,
        log_sum,
        t_acc,
        acc_pow,
        log_acc,
        acc_less,
        net_pow,
        log_net,
        net_less,
        extra,
        local_bsz,
        across,
        within,
        priors,
    )
    return value, gradient_at
