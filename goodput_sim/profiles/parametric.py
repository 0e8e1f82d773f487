"""Compact fitted application profiles: the data the project ships (``traces/profiles/*.yaml``).

The ground-truth step time keeps the shape of the Pollux model (SPEC 3.1), compute and
communication overlapping as a gamma-norm, but with the corrections real measurements need for
fidelity: compute time is piecewise linear in the per-GPU batch through fitted knots, gradient
exchange time is a fitted table over (nodes, replicas) and gamma is fitted per node count.
Gradient statistics are log-linear between knots over epochs and linear in total batch size
between the validated batch sizes, as SPEC 2.2 does for the raw traces.
"""

from __future__ import annotations

import difflib
import math
from functools import cached_property
from pathlib import Path
from typing import Any

import numpy as np
from numpy.typing import ArrayLike, NDArray

from goodput_sim.errors import InputError
from goodput_sim.inputs.safe_yaml import load_yaml
from goodput_sim.models.efficiency import gain
from goodput_sim.models.limits import JOB_FIELDS, Limits
from goodput_sim.models.lr import parse_schedule
from goodput_sim.models.throughput import gamma_norm
from goodput_sim.profiles.base import (
    ApplicationProfile,
    Placement,
    canonical_placement,
    interp_rows,
    linear_or_nearest,
)

SCHEMA_VERSION = 1


def _optional_seconds(
    data: dict, key: str, source: str | Path, low: float, high: float
) -> float | None:
    """An optional number in [low, high] at the top level of a profile."""
    value = data.get(key)
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int | float) or not low <= value <= high:
        raise InputError(
            source, f"must be a number in [{low:g}, {high:g}], found {value!r}", f"field {key}"
        )
    return float(value)


def _checkpoint_interval(value: Any, source: str | Path) -> float | None:
    """The optional ``checkpoint_interval`` (seconds of training between checkpoints)."""
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int | float) or not 1 <= value <= 1e8:
        raise InputError(
            source, f"must be seconds in [1, 1e8], found {value!r}", "field checkpoint_interval"
        )
    return float(value)


def _require(data: dict, key: str, source: str | Path, section: str = "") -> Any:
    if not isinstance(data, dict) or key not in data:
        where = f"{section}.{key}" if section else key
        raise InputError(source, f"missing field {where!r}", where=f"field {where}")
    return data[key]


def _array(data: dict, key: str, source, section: str, ndim: int = 1) -> NDArray:
    value = _require(data, key, source, section)
    try:
        array = np.asarray(value, dtype=np.float64)
    except (TypeError, ValueError):
        raise InputError(
            source, "must be a list of numbers", where=f"field {section}.{key}"
        ) from None
    if array.ndim != ndim or array.size == 0 or not np.all(np.isfinite(array)):
        raise InputError(
            source,
            f"must be a non-empty {ndim}-D list of finite numbers",
            where=f"field {section}.{key}",
        )
    return array


PROFILE_KEYS = frozenset(
    {"schema_version", "application", "provenance", "limits", "throughput", "progress"}
    | {"gradient_stats", "checkpoint_interval", "checkpoint_seconds", "restart_delay"}
    | {"crash_hours", "slowdown"}
)
LIMIT_KEYS = frozenset(set(Limits.__dataclass_fields__) - set(JOB_FIELDS))


def _refuse_unknown(data: dict, known: frozenset[str], source, prefix: str) -> None:
    """A misspelt key (``restart_dely``) is an error, not a setting silently left at its
    default; the message names the closest known key."""
    unknown = sorted(str(k) for k in data if k not in known)
    if unknown:
        guess = [f"{prefix}{k}" for k in difflib.get_close_matches(unknown[0], sorted(known), n=1)]
        if not prefix and unknown[0] in LIMIT_KEYS:
            guess = [f"limits.{unknown[0]}"]
        hint = f" (did you mean {guess[0]}?)" if guess else ""
        raise InputError(
            source,
            f"unknown field{hint}; known: {', '.join(sorted(known))}",
            where=f"field {prefix}{unknown[0]}",
        )


class ParametricProfile(ApplicationProfile):
    """Ground truth from a fitted YAML profile; answers the same questions as a measured one."""

    def __init__(self, data: dict, source: str | Path = "<profile>"):
        self.source = str(source)
        version = data.get("schema_version")
        if version != SCHEMA_VERSION or isinstance(version, bool):
            raise InputError(
                source, f"must be {SCHEMA_VERSION}, found {version!r}", where="field schema_version"
            )
        name = _require(data, "application", source)
        if not isinstance(name, str) or not name.strip() or not name.isprintable():
            raise InputError(
                source, f"must be an application name, found {name!r}", where="field application"
            )
        self.name = name.strip()
        _refuse_unknown(data, PROFILE_KEYS, source, "")
        limits = _require(data, "limits", source)
        if isinstance(limits, dict):
            _refuse_unknown(limits, LIMIT_KEYS, source, "limits.")
        optional = {"max_replicas", "fixed_batch_size", "lr_schedule", "noise_prior"}
        try:
            values = {
                k: _require(limits, k, source, "limits")
                for k in Limits.__dataclass_fields__
                if k not in JOB_FIELDS and (k not in optional or limits.get(k) is not None)
            }
            schedule = values.pop("lr_schedule", None)
            for key, value in values.items():
                if isinstance(value, bool) or not float(value).is_integer():
                    raise ValueError(key)
            self.limits = Limits(**{k: int(v) for k, v in values.items()}, lr_schedule=schedule)
        except (TypeError, ValueError, OverflowError):
            raise InputError(source, "limits must be integers", where="field limits") from None
        for field, problem in self.limits.problems():
            raise InputError(source, problem, where=f"field limits.{field}")
        if schedule is not None:
            try:
                parse_schedule(schedule)
            except ValueError as problem:
                raise InputError(source, str(problem), where="field limits.lr_schedule") from None
        tp = _require(data, "throughput", source)
        compute = _require(tp, "compute", source, "throughput")
        self._knot_bsz = _array(compute, "local_bsz", source, "throughput.compute")
        self._knot_acc = _array(compute, "accum_time", source, "throughput.compute")
        network = _require(tp, "network", source, "throughput")
        self._net_nodes = _array(network, "nodes", source, "throughput.network")
        self._net_replicas = _array(network, "replicas", source, "throughput.network")
        self._net_time = _array(network, "time", source, "throughput.network")
        gamma = _require(tp, "gamma", source, "throughput")
        self._gamma_nodes = _array(gamma, "nodes", source, "throughput.gamma")
        self._gamma_value = _array(gamma, "value", source, "throughput.gamma")
        progress = _require(data, "progress", source)
        thresholds = _array(progress, "thresholds", source, "progress")
        self.progress_thresholds = np.concatenate([[0.0], thresholds])
        stats = _require(data, "gradient_stats", source)
        self.batch_sizes = _array(stats, "batch_sizes", source, "gradient_stats")
        self._stat_epochs = _array(stats, "epochs", source, "gradient_stats")
        self._log_sqr = _array(stats, "log_grad_sqr", source, "gradient_stats", ndim=2)
        self._log_var = _array(stats, "log_grad_var", source, "gradient_stats", ndim=2)
        self.checkpoint_interval = _checkpoint_interval(data.get("checkpoint_interval"), source)
        self.restart_delay = _optional_seconds(data, "restart_delay", source, 0.0, 86400.0)
        self.checkpoint_seconds = _optional_seconds(
            data, "checkpoint_seconds", source, 0.0, 86400.0
        )
        crash = _optional_seconds(data, "crash_hours", source, 1e-3, 87600.0)
        self.crash_hours = crash
        self.slowdown = _optional_seconds(data, "slowdown", source, 1.0, 100.0) or 1.0
        self._validate(source)

    def _validate(self, source) -> None:
        checks = [
            (
                len(self._knot_bsz) == len(self._knot_acc),
                "throughput.compute",
                "lists differ in length",
            ),
            (np.all(np.diff(self._knot_bsz) > 0), "throughput.compute.local_bsz", "must increase"),
            (np.all(self._knot_acc > 0), "throughput.compute.accum_time", "must be positive"),
            (
                len(self._net_nodes) == len(self._net_replicas) == len(self._net_time),
                "throughput.network",
                "lists differ in length",
            ),
            (np.all(self._net_time > 0), "throughput.network.time", "must be positive"),
            (
                len(self._gamma_nodes) == len(self._gamma_value),
                "throughput.gamma",
                "lists differ in length",
            ),
            (np.all(np.diff(self._gamma_nodes) > 0), "throughput.gamma.nodes", "must increase"),
            (np.all(self._gamma_value >= 1), "throughput.gamma.value", "must be >= 1"),
            (
                len(self.progress_thresholds) == self.limits.max_epochs + 1,
                "progress.thresholds",
                f"must list one threshold per epoch ({self.limits.max_epochs})",
            ),
            (np.all(np.diff(self.progress_thresholds) > 0), "progress.thresholds", "must increase"),
            (
                self.batch_sizes[0] > 0 and np.all(np.diff(self.batch_sizes) > 0),
                "gradient_stats.batch_sizes",
                "must be positive and increase",
            ),
            (np.all(np.diff(self._stat_epochs) > 0), "gradient_stats.epochs", "must increase"),
            (
                np.all(np.abs(self._log_sqr) < 700) and np.all(np.abs(self._log_var) < 700),
                "gradient_stats",
                "log statistics must lie within (-700, 700), so that exp() is a finite number",
            ),
            (
                len(self._net_nodes) == len(self._net_replicas)
                and np.all(self._net_nodes >= 1)
                and np.all(self._net_replicas >= self._net_nodes)
                and np.all(self._net_nodes % 1 == 0)
                and np.all(self._net_replicas % 1 == 0),
                "throughput.network",
                "needs whole nodes >= 1 and at least one GPU per node (replicas >= nodes)",
            ),
            (
                self._log_sqr.shape
                == self._log_var.shape
                == (len(self.batch_sizes), len(self._stat_epochs)),
                "gradient_stats",
                "tables must be (batch sizes) x (epochs)",
            ),
        ]
        for ok, field, problem in checks:
            if not ok:
                raise InputError(source, problem, where=f"field {field}")

    @classmethod
    def from_yaml(cls, path: str | Path) -> ParametricProfile:
        path = Path(path)
        data = load_yaml(path)
        if not isinstance(data, dict):
            raise InputError(path, "expected a mapping at the top level")
        return cls(data, source=path)

    # ----------------------------------------------------------------------------- throughput
    def accum_time(self, local_bsz: ArrayLike) -> NDArray:
        """Compute seconds per micro-step: linear through the knots, extrapolated linearly."""
        b = np.asarray(local_bsz, dtype=np.float64)
        x, y = self._knot_bsz, self._knot_acc
        inside = np.interp(b, x, y)
        if len(x) == 1:
            return inside
        lo_slope = (y[1] - y[0]) / (x[1] - x[0])
        hi_slope = (y[-1] - y[-2]) / (x[-1] - x[-2])
        below = y[0] + lo_slope * (b - x[0])
        above = y[-1] + hi_slope * (b - x[-1])
        out = np.where(b < x[0], below, np.where(b > x[-1], above, inside))
        return np.maximum(out, 0.05 * y.min())

    def network_time(self, nodes: int, replicas: int) -> float:
        """Gradient-exchange seconds for a job on ``nodes`` nodes with ``replicas`` GPUs."""
        if replicas <= 1:
            return 0.0
        return float(self._network_lookup(float(nodes), float(replicas)))

    def _network_lookup(self, nodes: float, replicas: float) -> float:
        key = (nodes, replicas)
        table = self._network_table
        if key in table:
            return table[key]
        linear, nearest = self._network_interpolators
        point = np.array([[nodes, replicas]])
        value = linear(point)[0]
        if not np.isfinite(value):
            value = nearest(point)[0]
        table[key] = math.exp(float(value))  # the C library's, as numpy's without AVX-512
        return table[key]

    @cached_property
    def _network_table(self) -> dict[tuple[float, float], float]:
        return {
            (n, r): t
            for n, r, t in zip(self._net_nodes, self._net_replicas, self._net_time, strict=True)
        }

    @cached_property
    def _network_interpolators(self):
        points = np.column_stack([self._net_nodes, self._net_replicas])
        from goodput_sim.models import libm  # the C library's log on every CPU

        values = libm.log(self._net_time)
        return linear_or_nearest(points, values, min_points=4)

    def gamma(self, nodes: int) -> float:
        return float(np.interp(nodes, self._gamma_nodes, self._gamma_value))

    def step_sync(self, placement: Placement, local_bsz: ArrayLike) -> tuple[NDArray, NDArray]:
        key = canonical_placement(placement)
        nodes, replicas = len(key), sum(key)
        acc = self.accum_time(local_bsz)
        if replicas <= 1:
            return acc, np.zeros_like(acc)
        net = np.full_like(acc, self.network_time(nodes, replicas))
        step = gamma_norm(acc, net, self.gamma(nodes))
        return step, step - acc

    # ------------------------------------------------------------------ statistical efficiency
    def grad_stats(self, batch_size: ArrayLike, epoch: ArrayLike) -> tuple[NDArray, NDArray]:
        stats = interp_rows(self.batch_sizes, self._per_epoch_stats, batch_size, epoch)
        return stats[..., 0], stats[..., 1]

    @cached_property
    def _per_epoch_stats(self) -> NDArray:
        """(batch sizes x epochs x [sqr, var]): the statistics at every epoch for each validated
        batch size (log-linear between knots)."""
        epochs = np.arange(self.limits.max_epochs, dtype=np.float64)
        return np.stack(
            [
                np.exp(np.stack([np.interp(epochs, self._stat_epochs, row) for row in table]))
                for table in (self._log_sqr, self._log_var)
            ],
            axis=-1,
        )

    def iterations(self, batch_size: ArrayLike, epoch: ArrayLike) -> NDArray:
        """Derived: each epoch needs its progress divided by the per-step gain at that batch."""
        batch_size, epoch = np.broadcast_arrays(
            np.asarray(batch_size, dtype=np.float64), np.asarray(epoch)
        )
        flat = batch_size.ravel()
        epochs = np.arange(self.limits.max_epochs)
        sqr, var = self.grad_stats(flat[:, None], epochs[None, :])
        per_epoch = np.diff(self.progress_thresholds)[None, :] / gain(
            flat[:, None], self.limits.init_batch_size, sqr, var
        )
        cumulative = np.cumsum(per_epoch, axis=1)
        rows = np.clip(epoch.ravel().astype(np.int64), 0, self.limits.max_epochs - 1)
        return cumulative[np.arange(flat.size), rows].reshape(batch_size.shape)


def load_profile_yaml(path: str | Path) -> ApplicationProfile:
    """One YAML profile: a :class:`ParametricProfile`, or, with a ``gpu_types`` section (each
    type's ``limits`` overrides and ``throughput``), a :class:`TypedProfile` of them."""
    from goodput_sim.profiles.typed import TypedProfile

    path = Path(path)
    data = load_yaml(path)
    if not isinstance(data, dict):
        raise InputError(path, "expected a mapping at the top level")
    sections = data.get("gpu_types")
    if sections is None:
        return ParametricProfile(data, source=path)
    if not isinstance(sections, dict) or not sections:
        raise InputError(path, "must map GPU type names to sections", "field gpu_types")
    shared = {k: v for k, v in data.items() if k != "gpu_types"}
    if not isinstance(shared.get("limits") or {}, dict):
        raise InputError(path, "expected a mapping of limits", "field limits")
    by_type = {}
    for gpu_type, section in sections.items():
        where = f"field gpu_types.{gpu_type}"
        if not isinstance(section, dict) or set(section) - {"limits", "throughput"}:
            raise InputError(path, "expected limits and throughput", where)
        if not isinstance(section.get("limits") or {}, dict):
            raise InputError(path, "expected a mapping of limits", f"{where}.limits")
        limits = {**(shared.get("limits") or {}), **(section.get("limits") or {})}
        merged = {**shared, "limits": limits, "throughput": section.get("throughput")}
        by_type[str(gpu_type)] = ParametricProfile(merged, source=f"{path} [{gpu_type}]")
    return TypedProfile(
        next(iter(by_type.values())).name,
        {t: (lambda p=p: p) for t, p in by_type.items()},
        by_type[next(iter(by_type))].restart_delay,
        by_type[next(iter(by_type))].slowdown,
        source=path,
    )


def load_parametric_profiles(folder: str | Path) -> dict[str, ApplicationProfile]:
    """Every ``*.yaml`` profile in ``folder``, keyed by application name."""
    folder = Path(folder)
    files = sorted(folder.glob("*.yaml"))
    if not files:
        raise InputError(folder, "no *.yaml profiles found")
    profiles: dict[str, ApplicationProfile] = {}
    for path in files:
        profile = load_profile_yaml(path)
        if profile.name in profiles:
            raise InputError(
                path,
                f"application {profile.name!r} is also defined by {profiles[profile.name].source}",
            )
        profiles[profile.name] = profile
    return profiles
