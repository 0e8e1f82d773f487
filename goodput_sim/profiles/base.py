"""The questions every application profile answers: the ground truth the engine advances jobs with.

Two kinds implement it: :class:`~goodput_sim.profiles.measured.MeasuredProfile` (raw reference
measurements, interpolated) and :class:`~goodput_sim.profiles.parametric.ParametricProfile`
(the compact YAML the project ships). The engine and the policies cannot tell them apart.
"""

from __future__ import annotations

import bisect
from abc import ABC, abstractmethod

import numpy as np
from numpy.typing import ArrayLike, NDArray

from goodput_sim.inputs.cluster import placement_of
from goodput_sim.models.limits import Limits

Placement = tuple[int, ...]
"""GPUs used on each node that holds at least one replica of a job, e.g. (4, 4, 2)."""


def iteration_seconds(step: ArrayLike, sync: ArrayLike, accum_steps: ArrayLike) -> NDArray:
    """Seconds of one optimizer step with ``accum_steps`` extra micro-steps, from a profile's
    (step, sync) times: each accumulation micro-step costs the step without its
    synchronisation."""
    return step + (step - sync) * accum_steps


def canonical_placement(placement: ArrayLike) -> Placement:
    """Drop empty nodes and rotate to the lexicographically smallest cyclic rotation (SPEC 2.1)."""
    digits = placement_of(np.ravel(placement))
    if not digits:
        return ()
    return min(digits[i:] + digits[:i] for i in range(len(digits)))


def linear_or_nearest(
    points: NDArray, values: NDArray, min_points: int = 0
) -> tuple[LinearOnTriangulation | NearestOnTree, NearestOnTree]:
    """(linear, nearest) interpolators of scattered ``values``: linear over the points'
    triangulation (NaN outside their hull, where callers use nearest), or nearest for both when
    there are fewer than ``min_points`` points or they cannot be triangulated (too few, or all
    in a line or plane)."""
    from scipy.spatial import QhullError

    nearest = NearestOnTree(points, values)
    if len(points) < min_points:
        return nearest, nearest
    try:
        return LinearOnTriangulation(points, values), nearest
    except (QhullError, ValueError):
        return nearest, nearest


class LinearOnTriangulation:
    """The values of ``scipy.interpolate.LinearNDInterpolator``, computed as it computes them
    (the same Delaunay triangulation and simplex search, barycentric sums in the same order),
    on ``scipy.spatial`` alone: importing scipy.interpolate (and scipy.optimize with it) costs
    more than a measured run's interpolation."""

    def __init__(self, points: NDArray, values: NDArray):
        from scipy.spatial import Delaunay

        self.tri = Delaunay(np.ascontiguousarray(points, dtype=np.float64))
        values = np.asarray(values, dtype=np.float64)
        self.shape = values.shape[1:]
        self.values = values.reshape(len(values), -1)

    def __call__(self, xi: NDArray) -> NDArray:
        """Values at the rows of ``xi``; NaN outside the points' convex hull."""
        xi = np.ascontiguousarray(xi, dtype=np.float64)
        tri, count, ndim = self.tri, len(xi), xi.shape[1]
        simplex = tri.find_simplex(xi)
        inside = simplex >= 0
        transform = tri.transform[np.where(inside, simplex, 0)]
        offset = xi - transform[:, ndim, :]
        weights = np.empty((count, ndim + 1))
        last = np.ones(count)
        for i in range(ndim):
            acc = np.zeros(count)
            for j in range(ndim):
                acc = acc + transform[:, i, j] * offset[:, j]
            weights[:, i] = acc
            last = last - acc
        weights[:, ndim] = last
        vertices = tri.simplices[np.where(inside, simplex, 0)]
        out = np.zeros((count, self.values.shape[1]))
        for j in range(ndim + 1):
            out = out + weights[:, j, None] * self.values[vertices[:, j]]
        out[~inside] = np.nan
        return out.reshape((count, *self.shape))


class NearestOnTree:
    """The values of ``scipy.interpolate.NearestNDInterpolator`` (the nearest point by a
    ``cKDTree`` of the points), on ``scipy.spatial`` alone."""

    def __init__(self, points: NDArray, values: NDArray):
        from scipy.spatial import cKDTree

        self.tree = cKDTree(np.asarray(points, dtype=np.float64))
        self.values = np.asarray(values)

    def __call__(self, xi: NDArray) -> NDArray:
        _, index = self.tree.query(np.asarray(xi, dtype=np.float64))
        return self.values[index]


def interp_rows(keys: NDArray, table: NDArray, key: ArrayLike, row: ArrayLike) -> NDArray:
    """Linear interpolation between the two rows of ``table`` that bracket ``key`` (SPEC 2.2).

    ``table`` is (keys x epochs) or (keys x epochs x k); trailing axes are carried through."""
    if np.ndim(key) == 0:  # one batch size (per job and round, or per plan): scalar weights
        return _interp_at(keys, table, float(key), row)
    key = np.asarray(key, dtype=np.float64)
    if key.shape == np.shape(row) and key.size and (key == key.flat[0]).all():
        return _interp_at(keys, table, float(key.flat[0]), row)  # e.g. a fixed batch per epoch
    key = _clamp(key, keys[0], keys[-1])
    row = _clamp(np.asarray(row, dtype=np.int64), 0, table.shape[1] - 1)
    # ``key`` lies within the keys, so both searches land inside the table.
    hi = np.searchsorted(keys, key, side="left")
    lo = np.searchsorted(keys, key, side="right") - 1
    span = keys[hi] - keys[lo]
    weight = np.divide(key - keys[lo], span, out=np.zeros_like(key), where=span > 0)
    weight = np.expand_dims(weight, tuple(range(weight.ndim, weight.ndim + table.ndim - 2)))
    return (1.0 - weight) * table[lo, row] + weight * table[hi, row]


def _clamp(values: NDArray, low, high) -> NDArray:
    """``np.clip(values, low, high)`` for ``low <= high`` (the same values, NaN kept), without
    np.clip's argument handling, which costs four times the clamp on a plan's few epochs."""
    return np.minimum(np.maximum(values, low), high)


def _interp_at(keys: NDArray, table: NDArray, key: float, row: ArrayLike) -> NDArray:
    """:func:`interp_rows` for one key."""
    key = min(max(key, keys[0]), keys[-1])
    last = table.shape[1] - 1
    if np.ndim(row):
        row = _clamp(np.asarray(row, dtype=np.int64), 0, last)
    else:
        row = min(max(int(row), 0), last)
    hi = bisect.bisect_left(keys, key)
    lo = bisect.bisect_right(keys, key) - 1
    span = keys[hi] - keys[lo]
    weight = (key - keys[lo]) / span if span > 0 else 0.0
    return (1.0 - weight) * table[lo, row] + weight * table[hi, row]


class ApplicationProfile(ABC):
    """Ground truth for one application: step times, gradient statistics and progress.

    Subclasses set ``name``, ``limits`` and ``progress_thresholds`` and implement the three
    lookups. Every lookup is defined everywhere (inputs are clamped to the data, never raising),
    because the engine must be able to run any allocation a policy chooses.
    """

    name: str
    limits: Limits
    progress_thresholds: NDArray[np.float64]
    """P(e) for e = 0..max_epochs: progress needed to have completed e epochs (P(0) = 0)."""
    checkpoint_interval: float | None = None
    """Seconds of training between the application's checkpoints (None: the engine's default);
    what a node failure can undo."""
    checkpoint_seconds: float | None = None
    """Seconds a checkpoint of this application takes to save (None: the run's, else 0)."""
    crash_hours: float | None = None
    """Mean hours a job of this application runs between crashes (None: the run's, else no
    crashes)."""
    restart_delay: float | None = None
    """Seconds a checkpoint-restore costs this application (None: the run's --restart-delay)."""
    slowdown: float = 1.0
    """Calibration: the true progress rate is divided by this (Sia SPEC 3.5); beliefs are not."""

    @abstractmethod
    def step_sync(self, placement: Placement, local_bsz: ArrayLike) -> tuple[NDArray, NDArray]:
        """True (step, sync) seconds of one optimizer step without accumulation."""

    @abstractmethod
    def grad_stats(self, batch_size: ArrayLike, epoch: ArrayLike) -> tuple[NDArray, NDArray]:
        """True (grad_sqr, grad_var) at total batch ``batch_size`` during 0-based ``epoch``."""

    @abstractmethod
    def iterations(self, batch_size: ArrayLike, epoch: ArrayLike) -> NDArray:
        """Cumulative optimizer steps at ``batch_size`` by the end of 0-based ``epoch``."""

    @property
    def total_progress(self) -> float:
        """Progress at which a job of this application completes: P(max_epochs)."""
        return float(self.progress_thresholds[-1])

    def epoch_of(self, progress: ArrayLike) -> NDArray[np.int64]:
        """Number of completed epochs at ``progress`` (capped at max_epochs)."""
        epochs = np.searchsorted(self.progress_thresholds, progress, side="right") - 1
        return np.clip(epochs, 0, self.limits.max_epochs)


class FrozenProfile:
    """A read-only view of a ground-truth profile, for oracle policies: every read passes
    through (arrays come back read-only), every write raises, so no policy can change the
    truth the engine advances jobs by."""

    __slots__ = ("_profile",)

    def __init__(self, profile: ApplicationProfile):
        object.__setattr__(self, "_profile", profile)

    def __getattr__(self, name: str):
        value = getattr(self._profile, name)
        if isinstance(value, np.ndarray):
            value = value.view()
            value.flags.writeable = False
        return value

    def __setattr__(self, name: str, value: object) -> None:
        raise AttributeError(f"profile {self._profile.name!r} is read-only for policies")

    def __delattr__(self, name: str) -> None:
        raise AttributeError(f"profile {self._profile.name!r} is read-only for policies")
