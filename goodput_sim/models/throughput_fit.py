"""Fitting the step-time model (:mod:`goodput_sim.models.throughput`): the objective (log
errors of compute and step times plus SPEC 3.3's priors, with its exact Jacobian) and a
projected Levenberg-Marquardt solver. Both run in compiled kernels
(:mod:`goodput_sim.models.fit_kernels`), a whole fit in one call, keeping the bits of the
numpy code and plain-Python solver they replaced."""

from __future__ import annotations

import numpy as np
from numpy.typing import NDArray

from goodput_sim.models.fit_kernels import jacobian, levenberg_marquardt, objective
from goodput_sim.models.numerics import TINY

MAX_STEPS = 200  # Levenberg-Marquardt steps before a fit is reported as not converged
# The exponent of the fit's squares, passed to the kernels at run time so that ``x ** 2`` stays
# the C library's ``pow`` (:func:`~goodput_sim.models.fit_kernels.jacobian`).
_TWO = 2.0


class LogFitObjective:
    """Residuals of the fit (scaled log errors of compute and step times, then the three SPEC 3.3
    priors) and their exact Jacobian, over the free parameters (``free``, a mask of the seven;
    the others keep their values in ``full``).

    Everything that depends only on the observations is computed once per fit, and the Jacobian
    reuses the intermediate values of the residuals at the same point."""

    def __init__(self, nodes, replicas, local_bsz, log_acc, log_sync, full, free):
        self.local_bsz = np.ascontiguousarray(local_bsz, dtype=np.float64)
        self.extra = np.maximum(replicas - 2.0, TINY)
        self.inter = nodes > 1
        self.intra = ~self.inter & (replicas > 1)
        self.targets = np.concatenate([log_acc, log_sync])
        self.rows = len(local_bsz)
        self.scale = 1.0 / np.sqrt(self.rows)
        self.full, self.free = full, free
        self._columns = np.flatnonzero(free).astype(np.int64)
        # The kernels' inputs after the point: the data of this fit.
        self._data = (self.full, self._columns, self.local_bsz, self.inter, self.intra)
        self._data += (self.extra, self.targets, self.scale, TINY)
        self._last: tuple | None = None

    def residuals(self, x: NDArray) -> NDArray:
        x = np.ascontiguousarray(x, dtype=np.float64)
        pieces = objective(x, *self._data)
        self._last = (x, pieces)
        return pieces[0]

    def jacobian(self, x: NDArray) -> NDArray:
        if self._last is None or self._last[0] is not x:
            self.residuals(x)
        _, pieces = self._last
        local_bsz, inter, intra, extra = self.local_bsz, self.inter, self.intra, self.extra
        return jacobian(pieces, self._columns, local_bsz, inter, intra, extra, self.scale, _TWO)

    def minimise(self, x0: NDArray, lower: NDArray, upper: NDArray) -> tuple[NDArray, bool]:
        """(free parameters, converged): projected Levenberg-Marquardt from ``x0`` within the
        box [lower, upper] (:func:`~goodput_sim.models.fit_kernels.levenberg_marquardt`). For 7
        parameters a step is a few microseconds of arithmetic, where scipy's bounded
        trust-region solver spends milliseconds of Python per fit."""
        x0, lower, upper = (np.ascontiguousarray(a, dtype=np.float64) for a in (x0, lower, upper))
        return levenberg_marquardt(x0, lower, upper, *self._data, _TWO, MAX_STEPS)
