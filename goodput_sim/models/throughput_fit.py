"""Fitting the step-time model (:mod:`goodput_sim.models.throughput`): the objective (log
errors of compute and step times plus SPEC 3.3's priors, with its exact Jacobian) and a
projected Levenberg-Marquardt solver. Its arithmetic runs in compiled kernels
(:mod:`goodput_sim.models.fit_kernels`) that keep the bits of the numpy code they replaced."""

from __future__ import annotations

import math

import numpy as np
from numpy.typing import NDArray

from goodput_sim.models.fit_kernels import (
    damped_solve,
    log_error_jacobian,
    log_errors,
    normal_equations,
    sync_terms,
)
from goodput_sim.models.numerics import TINY

_GAMMA_PRIOR, _NET_PRIOR = 1e-3, 1e-2  # regularisation weights of SPEC 3.3
_SQRT_GAMMA_PRIOR, _SQRT_NET_PRIOR = math.sqrt(_GAMMA_PRIOR), math.sqrt(_NET_PRIOR)


class LogFitObjective:
    """Residuals of the fit (scaled log errors of compute and step times, then the three SPEC 3.3
    priors) and their exact Jacobian, over the free parameters.

    Everything that depends only on the observations is computed once per fit, and the Jacobian
    reuses the intermediate values of the residuals at the same point: the solver always asks for
    the Jacobian at the point whose residuals it has just accepted."""

    def __init__(self, nodes, replicas, local_bsz, log_acc, log_sync, full, free):
        self.local_bsz = local_bsz
        self.extra = np.maximum(replicas - 2.0, TINY)
        self.inter = nodes > 1
        self.intra = ~self.inter & (replicas > 1)
        self.targets = np.concatenate([log_acc, log_sync])
        self.rows = len(local_bsz)
        self.scale = 1.0 / np.sqrt(self.rows)
        self.full, self.free = full, free
        self._last: tuple | None = None

    def theta(self, x: NDArray) -> NDArray:
        """All seven parameters with the free ones set to ``x``."""
        theta = self.full.copy()
        theta[self.free] = x
        return theta

    def residuals(self, x: NDArray) -> NDArray:
        theta = self.theta(x)
        _, _, alpha_n, beta_n, alpha_r, beta_r, gamma = theta.tolist()
        t_acc, t_net, big, u, shares, u_floor = sync_terms(
            theta, self.local_bsz, self.inter, self.intra, self.extra, TINY
        )
        # log T_sync = log m + log(1 + u^g)/g with m = max(T_acc, T_net), u = min/max.
        ug = u**gamma
        total = 1.0 + ug
        logs = np.log(np.concatenate((t_acc, big, total)))
        self._last = (x, theta, t_acc, t_net, total, ug, shares, u_floor, logs)
        rows = self.rows
        out = np.empty(2 * rows + 3)
        log_errors(logs, self.targets, self.scale, gamma, out)
        out[2 * rows :] = (
            _SQRT_GAMMA_PRIOR * (gamma - 1.0),
            _SQRT_NET_PRIOR * beta_n / alpha_n,
            _SQRT_NET_PRIOR * beta_r / alpha_r,
        )
        return out

    def jacobian(self, x: NDArray) -> NDArray:
        if self._last is None or self._last[0] is not x:
            self.residuals(x)
        _, theta, t_acc, t_net, total, ug, shares, u_floor, logs = self._last
        _, _, alpha_n, beta_n, alpha_r, beta_r, gamma = theta.tolist()
        rows = self.rows
        jac = log_error_jacobian(
            t_acc,
            t_net,
            total,
            ug,
            shares**gamma,
            logs[2 * rows :],
            np.log(u_floor),
            self.local_bsz,
            self.extra,
            self.inter,
            self.intra,
            self.scale,
            gamma,
            gamma**2,
        )
        jac[2 * rows, 6] = _SQRT_GAMMA_PRIOR
        c = _SQRT_NET_PRIOR
        jac[2 * rows + 1, 2:4] = (-c * beta_n / alpha_n**2, c / alpha_n)
        jac[2 * rows + 2, 4:6] = (-c * beta_r / alpha_r**2, c / alpha_r)
        return jac[:, self.free]


def _sum_of_squares(r: NDArray) -> float:
    return float(np.sum(r * r))


def projected_levenberg_marquardt(
    residuals, jacobian, x0: NDArray, lower: NDArray, upper: NDArray, max_iter: int = 200
) -> tuple[NDArray, bool]:
    """Minimise ``|residuals(x)|^2`` within box bounds: Levenberg-Marquardt steps (Marquardt's
    diagonal scaling) on the parameters not held at a bound by the gradient, projected back
    into the box. For 7 parameters this is a few microseconds of linear algebra per step, where
    scipy's bounded trust-region solver spends milliseconds of Python per fit."""
    x = np.minimum(np.maximum(x0, lower), upper)
    r = residuals(x)
    cost = _sum_of_squares(r)
    damping = 1e-3
    for _ in range(max_iter):
        jac = jacobian(x)
        grad, hessian = normal_equations(jac, r)
        move = ~(((x <= lower) & (grad > 0)) | ((x >= upper) & (grad < 0)))
        if not move.all():  # work on the parameters free to move
            if not move.any():
                return x, True
            grad, low, high = grad[move], lower[move], upper[move]
            hessian = hessian[np.ix_(move, move)]
        else:
            low, high = lower, upper
        if np.abs(grad).max() < 1e-14:
            return x, True
        scaling = np.maximum(hessian.diagonal(), 1e-12)
        while True:
            step, solved = damped_solve(hessian, damping, scaling, -grad)
            if not solved:
                damping *= 10.0
                continue
            trial = x.copy()
            trial[move] = np.minimum(np.maximum(x[move] + step, low), high)
            r_trial = residuals(trial)
            cost_trial = _sum_of_squares(r_trial)
            if math.isfinite(cost_trial) and cost_trial < cost:
                improvement = cost - cost_trial
                x, r, cost = trial, r_trial, cost_trial
                damping = max(damping / 3.0, 1e-12)
                if improvement <= 1e-8 * cost + 1e-18:  # scipy's default ftol
                    return x, True
                break
            damping *= 4.0
            if damping > 1e12:
                return x, True  # no step improves: a (bounded) minimum
    return x, False
