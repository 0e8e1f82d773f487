"""The 7-parameter step-time model of Pollux (SPEC 3), fitted by bounded least squares.

Per micro-step compute ``T_acc = alpha_c + beta_c * b``; gradient exchange ``T_net`` is
``alpha_n + beta_n * (R - 2)`` across nodes, ``alpha_r + beta_r * (R - 2)`` within one node and 0
for one GPU; compute and communication overlap as a gamma-norm,
``T_sync = (T_acc^g + T_net^g)^(1/g)``.
An optimizer step with ``s`` accumulation steps takes ``s * T_acc + T_sync``.
"""

from __future__ import annotations

import math
import warnings
from dataclasses import astuple, dataclass, fields

import numpy as np
from numpy.typing import ArrayLike, NDArray

TINY = 1e-8
PARAM_NAMES = ("alpha_c", "beta_c", "alpha_n", "beta_n", "alpha_r", "beta_r", "gamma")
_INITIAL = np.array([0.1, 0.01, 0.1, 0.01, 0.1, 0.01, 1.001])
_LOWER = np.array([TINY] * 6 + [1.0])
_UPPER = np.array([np.inf] * 6 + [10.0])
_GAMMA_PRIOR, _NET_PRIOR = 1e-3, 1e-2  # regularisation weights of SPEC 3.3
_SQRT_GAMMA_PRIOR, _SQRT_NET_PRIOR = math.sqrt(_GAMMA_PRIOR), math.sqrt(_NET_PRIOR)


@dataclass(frozen=True)
class ThroughputParams:
    """Fitted values of the step-time model (seconds, seconds per sample, dimensionless gamma)."""

    alpha_c: float
    beta_c: float
    alpha_n: float
    beta_n: float
    alpha_r: float
    beta_r: float
    gamma: float

    def as_array(self) -> NDArray[np.float64]:
        return np.array(astuple(self), dtype=np.float64)

    def as_dict(self) -> dict[str, float]:
        return {f.name: float(getattr(self, f.name)) for f in fields(self)}


def network_time(params: ThroughputParams, nodes: ArrayLike, replicas: ArrayLike) -> NDArray:
    """Gradient-exchange time for jobs spread over ``nodes`` nodes with ``replicas`` GPUs."""
    nodes = np.asarray(nodes, dtype=np.float64)
    replicas = np.asarray(replicas, dtype=np.float64)
    extra = np.maximum(replicas - 2.0, TINY)
    p = params
    return _network_seconds(
        p.alpha_n, p.beta_n, p.alpha_r, p.beta_r, nodes > 1, replicas > 1, extra
    )


def _network_seconds(alpha_n, beta_n, alpha_r, beta_r, across, within, extra) -> NDArray:
    """SPEC 3.1's T_net from where the GPUs are: ``across`` nodes, else ``within`` one node
    (more than one GPU), else a single GPU; ``extra`` is max(R - 2, tiny)."""
    inter = alpha_n + beta_n * extra
    intra = alpha_r + beta_r * extra
    return np.where(across, inter, np.where(within, intra, TINY + TINY * extra))


def gamma_norm(a: ArrayLike, b: ArrayLike, gamma: ArrayLike) -> NDArray:
    """``(a^g + b^g)^(1/g)``, the overlap of compute and communication, computed as
    ``m * (1 + (x/m)^g)^(1/g)`` with ``m = max(a, b)`` to avoid overflow."""
    big, small = np.maximum(a, b), np.minimum(a, b)
    return big * (1.0 + (small / big) ** gamma) ** (1.0 / gamma)


def step_times(
    params: ThroughputParams,
    nodes: ArrayLike,
    replicas: ArrayLike,
    local_bsz: ArrayLike,
    accum_steps: ArrayLike = 0,
) -> tuple[NDArray, NDArray, NDArray]:
    """(T_acc, T_sync, T_iter): micro-step, synchronising-step and whole-iteration seconds."""
    t_acc = params.alpha_c + params.beta_c * np.asarray(local_bsz, dtype=np.float64)
    t_net = network_time(params, nodes, replicas)
    t_sync = gamma_norm(t_acc, t_net, params.gamma)
    t_iter = np.asarray(accum_steps, dtype=np.float64) * t_acc + t_sync
    return t_acc, t_sync, t_iter


class _LogFitObjective:
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
        alpha_c, beta_c, alpha_n, beta_n, alpha_r, beta_r, gamma = theta.tolist()
        t_acc = alpha_c + beta_c * self.local_bsz
        t_net = _network_seconds(
            alpha_n, beta_n, alpha_r, beta_r, self.inter, self.intra, self.extra
        )
        # log T_sync = log m + log(1 + u^g)/g with m = max(T_acc, T_net), u = min/max.
        big = np.maximum(t_acc, t_net)
        u = np.minimum(t_acc, t_net) / big
        ug = u**gamma
        total = 1.0 + ug
        self._last = (x, theta, t_acc, t_net, big, u, ug, total)
        rows = self.rows
        out = np.empty(2 * rows + 3)
        out[:rows] = np.log(t_acc)
        out[rows : 2 * rows] = np.log(big) + np.log(total) / gamma
        out[: 2 * rows] = self.scale * (out[: 2 * rows] - self.targets)
        out[2 * rows :] = (
            _SQRT_GAMMA_PRIOR * (gamma - 1.0),
            _SQRT_NET_PRIOR * beta_n / alpha_n,
            _SQRT_NET_PRIOR * beta_r / alpha_r,
        )
        return out

    def jacobian(self, x: NDArray) -> NDArray:
        if self._last is None or self._last[0] is not x:
            self.residuals(x)
        _, theta, t_acc, t_net, big, u, ug, total = self._last
        _, _, alpha_n, beta_n, alpha_r, beta_r, gamma = theta.tolist()
        rows, scale, b = self.rows, self.scale, self.local_bsz
        w_acc = (t_acc / big) ** gamma / total  # share of T_acc^g in the gamma-norm
        w_net = (t_net / big) ** gamma / total
        jac = np.zeros((2 * rows + 3, 7))
        jac[:rows, 0] = scale / t_acc
        jac[:rows, 1] = jac[:rows, 0] * b
        jac[rows : 2 * rows, 0] = w_acc * jac[:rows, 0]
        jac[rows : 2 * rows, 1] = jac[rows : 2 * rows, 0] * b
        net = scale * w_net / t_net
        jac[rows : 2 * rows, 2] = np.where(self.inter, net, 0.0)
        jac[rows : 2 * rows, 3] = jac[rows : 2 * rows, 2] * self.extra
        jac[rows : 2 * rows, 4] = np.where(self.intra, net, 0.0)
        jac[rows : 2 * rows, 5] = jac[rows : 2 * rows, 4] * self.extra
        log_u = np.log(np.maximum(u, 1e-300))
        jac[rows : 2 * rows, 6] = scale * (-np.log(total) / gamma**2 + ug * log_u / (gamma * total))
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
    # Imported here, not at the top: numba costs every command 80 ms, and only fits need it.
    from goodput_sim.models.fit_kernels import damped_solve, normal_equations

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


class ThroughputModel:
    """Estimator for :class:`ThroughputParams` (scikit-learn style: ``fit`` returns self).

    Fitting minimises the squared log errors of the observed accumulation-step and
    synchronising-step times plus the SPEC 3.3 priors, by projected Levenberg-Marquardt with the
    exact Jacobian (:func:`projected_levenberg_marquardt`). Parameters the data cannot identify
    are frozen (listed in ``frozen_``) exactly as the reference does; degenerate input (one
    observation, repeated points) never raises.
    """

    def __init__(self, warm_start: ThroughputParams | None = None):
        self.warm_start = warm_start

    def fit(
        self,
        nodes: ArrayLike,
        replicas: ArrayLike,
        local_bsz: ArrayLike,
        accum_time: ArrayLike,
        step_time: ArrayLike,
    ) -> ThroughputModel:
        """Fit from observed (nodes, replicas, b) -> (accumulation-step, optimizer-step) seconds."""
        nodes, replicas, local_bsz, accum_time, step_time = (
            np.atleast_1d(np.asarray(a, dtype=np.float64))
            for a in (nodes, replicas, local_bsz, accum_time, step_time)
        )
        if nodes.size == 0:
            raise ValueError("cannot fit a throughput model without observations")
        log_acc = np.log(np.maximum(accum_time, TINY))
        log_sync = np.log(np.maximum(step_time, TINY))
        initial = self.warm_start.as_array() if self.warm_start else _INITIAL.copy()
        frozen = self._frozen_values(nodes, replicas, local_bsz, accum_time)
        free = np.array([name not in frozen for name in PARAM_NAMES])
        full = np.clip(initial, _LOWER, _UPPER)
        for name, value in frozen.items():
            full[PARAM_NAMES.index(name)] = value
        objective = _LogFitObjective(nodes, replicas, local_bsz, log_acc, log_sync, full, free)
        x0 = np.clip(full[free], _LOWER[free] * (1 + 1e-9), _UPPER[free])
        with warnings.catch_warnings(), np.errstate(all="ignore"):
            warnings.simplefilter("ignore")
            x, self.converged_ = projected_levenberg_marquardt(
                objective.residuals, objective.jacobian, x0, _LOWER[free], _UPPER[free]
            )
            if np.all(np.isfinite(x)):
                full[free] = x
        params = ThroughputParams(*full)
        if not np.any(nodes > 1):
            # Prior: crossing nodes costs at least 10% more than staying within one (SPEC 3.3).
            params = ThroughputParams(
                params.alpha_c,
                params.beta_c,
                max(params.alpha_n, 1.1 * params.alpha_r),
                max(params.beta_n, 1.1 * params.beta_r),
                params.alpha_r,
                params.beta_r,
                params.gamma,
            )
        self.params_ = params
        self.frozen_ = tuple(sorted(frozen, key=PARAM_NAMES.index))
        self.n_observations_ = int(nodes.size)
        return self

    @staticmethod
    def _frozen_values(nodes, replicas, local_bsz, accum_time) -> dict[str, float]:
        """Parameters the observations cannot identify, with the values they are frozen at."""
        frozen: dict[str, float] = {}
        if np.unique(local_bsz).size == 1:
            frozen["alpha_c"] = max(float(np.mean(accum_time)) / 2.0, TINY)
        if not np.any(nodes > 1):
            frozen.update(alpha_n=TINY, beta_n=TINY)
        if not np.any((nodes == 1) & (replicas > 1)):
            frozen.update(alpha_r=TINY, beta_r=TINY)
        if not np.any(replicas > 2):
            frozen.update(beta_n=TINY, beta_r=TINY)
        return frozen

    def predict(self, nodes, replicas, local_bsz, accum_steps=0) -> NDArray:
        """Predicted seconds per optimizer step."""
        if not hasattr(self, "params_"):
            raise RuntimeError("ThroughputModel is not fitted; call fit() first")
        return step_times(self.params_, nodes, replicas, local_bsz, accum_steps)[2]
