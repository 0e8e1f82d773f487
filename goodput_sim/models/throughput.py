"""The 7-parameter step-time model of Pollux (SPEC 3), fitted by bounded least squares.

Per micro-step compute ``T_acc = alpha_c + beta_c * b``; gradient exchange ``T_net`` is
``alpha_n + beta_n * (R - 2)`` across nodes, ``alpha_r + beta_r * (R - 2)`` within one node and 0
for one GPU; compute and communication overlap as a gamma-norm,
``T_sync = (T_acc^g + T_net^g)^(1/g)``.
An optimizer step with ``s`` accumulation steps takes ``s * T_acc + T_sync``.
"""

from __future__ import annotations

from dataclasses import astuple, dataclass, fields

import numpy as np
from numpy.typing import ArrayLike, NDArray

from goodput_sim.models.numerics import TINY

PARAM_NAMES = ("alpha_c", "beta_c", "alpha_n", "beta_n", "alpha_r", "beta_r", "gamma")
_INITIAL = np.array([0.1, 0.01, 0.1, 0.01, 0.1, 0.01, 1.001])
_LOWER = np.array([TINY] * 6 + [1.0])
_UPPER = np.array([np.inf] * 6 + [10.0])


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
    """Gradient-exchange time for jobs spread over ``nodes`` nodes with ``replicas`` GPUs
    (SPEC 3.1): across nodes, else within one node (more than one GPU), else a single GPU."""
    nodes = np.asarray(nodes, dtype=np.float64)
    replicas = np.asarray(replicas, dtype=np.float64)
    extra = np.maximum(replicas - 2.0, TINY)
    p = params
    inter = p.alpha_n + p.beta_n * extra
    intra = p.alpha_r + p.beta_r * extra
    return np.where(nodes > 1, inter, np.where(replicas > 1, intra, TINY + TINY * extra))


def gamma_norm(a: ArrayLike, b: ArrayLike, gamma: ArrayLike) -> NDArray:
    """``(a^g + b^g)^(1/g)``, the overlap of compute and communication, computed as
    ``m * (1 + (x/m)^g)^(1/g)`` with ``m = max(a, b)`` to avoid overflow; the powers are
    numpy's at its baseline SIMD level on every CPU (:mod:`~goodput_sim.models.libm`)."""
    from goodput_sim.models import libm  # the C library's pow on every CPU (loads numba)

    big, small = np.maximum(a, b), np.minimum(a, b)
    inverse = 1.0 / np.asarray(gamma, dtype=np.float64)
    return big * libm.power(1.0 + libm.power(small / big, gamma), inverse)


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
        # Imported here: the fit's compiled kernels load numba, which only fits need.
        from goodput_sim.models import libm
        from goodput_sim.models.throughput_fit import LogFitObjective

        log_acc = libm.log(np.maximum(accum_time, TINY))
        log_sync = libm.log(np.maximum(step_time, TINY))
        initial = self.warm_start.as_array() if self.warm_start else _INITIAL.copy()
        frozen = self._frozen_values(nodes, replicas, local_bsz, accum_time)
        free = np.array([name not in frozen for name in PARAM_NAMES])
        full = np.clip(initial, _LOWER, _UPPER)
        for name, value in frozen.items():
            full[PARAM_NAMES.index(name)] = value
        objective = LogFitObjective(nodes, replicas, local_bsz, log_acc, log_sync, full, free)
        x0 = np.clip(full[free], _LOWER[free] * (1 + 1e-9), _UPPER[free])
        x, self.converged_ = objective.minimise(x0, _LOWER[free], _UPPER[free])
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
