"""One application on several GPU types (heterogeneous clusters).

The type changes only step and sync times and the per-GPU batch range; gradient statistics,
progress per epoch and the completion rule are shared (Sia SPEC 1.2: its validation files are
the same on every type). The Sia artifact's per-application restart delays and calibration
factors (Sia SPEC 3.4, 3.5) are profile parameters: a typed measurement folder gets them from
:data:`SIA_RESTART_DELAYS` and :data:`SIA_SLOWDOWNS`, a parametric YAML profile from its
``restart_delay`` and ``slowdown`` fields.
"""

from __future__ import annotations

import copy
from collections.abc import Callable, Mapping
from functools import cache
from pathlib import Path

import numpy as np
from numpy.typing import ArrayLike, NDArray

from goodput_sim.errors import InputError
from goodput_sim.profiles.base import ApplicationProfile, Placement
from goodput_sim.profiles.measured import PIPELINE_APPS, MeasuredProfile, measured_gpu_types

# Seconds a checkpoint-restore costs, per application, in the Sia simulator (Sia SPEC 3.4;
# siasosp23/artifacts, commit aaf7a0d, sia-simulator). Other applications: 30 s.
SIA_RESTART_DELAYS = {
    "bert": 120.0,
    "cifar10": 50.0,
    "deepspeech2": 25.0,
    "imagenet": 250.0,
    "ncf": 15.0,
    "yolov3": 80.0,
}
# Factors dividing the true progress rate, fitted by the Sia authors to real runs (Sia SPEC 3.5).
SIA_SLOWDOWNS = {
    "cifar10": 1.8,
    "imagenet": 1.2,
    "yolov3": 1.2,
    "bert": 1.2,
    "deepspeech2": 1.2,
    "ncf": 1.5,
}


class TypedProfile(ApplicationProfile):
    """An application's profiles by GPU type; by itself it answers as its first type does."""

    def __init__(
        self,
        name: str,
        loaders: Mapping[str, Callable[[], ApplicationProfile]],
        restart_delay: float | None = None,
        slowdown: float = 1.0,
        source: str | Path = "<profile>",
    ):
        if not loaders:
            raise InputError(name, "has no GPU type")
        self.name = name
        self.source = str(source)  # the file it came from, for messages
        self._loaders = dict(loaders)
        self.restart_delay = restart_delay
        self.slowdown = slowdown
        self._load = cache(self._loaded)
        first = self.for_type(self.gpu_types[0])
        self.limits = first.limits
        self.progress_thresholds = first.progress_thresholds
        self.checkpoint_interval = first.checkpoint_interval
        self.checkpoint_seconds = first.checkpoint_seconds
        self.crash_hours = first.crash_hours

    @property
    def gpu_types(self) -> tuple[str, ...]:
        return tuple(self._loaders)

    def for_type(self, gpu_type: str) -> ApplicationProfile:
        """The application's ground truth on ``gpu_type`` (loaded on first use)."""
        if gpu_type not in self._loaders:
            raise InputError(
                self.name, f"has no profile for GPU type {gpu_type!r}; has {self.gpu_types}"
            )
        return self._load(gpu_type)

    def _loaded(self, gpu_type: str) -> ApplicationProfile:
        """A type's profile, loaded once, carrying the application's restart delay and
        calibration: a copy where they differ, so a profile handed in by a loader (perhaps
        shared with other runs) is never changed."""
        profile = self._loaders[gpu_type]()
        if (profile.restart_delay, profile.slowdown) == (self.restart_delay, self.slowdown):
            return profile
        profile = copy.copy(profile)
        profile.restart_delay, profile.slowdown = self.restart_delay, self.slowdown
        return profile

    def step_sync(self, placement: Placement, local_bsz: ArrayLike) -> tuple[NDArray, NDArray]:
        return self.for_type(self.gpu_types[0]).step_sync(placement, local_bsz)

    def grad_stats(self, batch_size: ArrayLike, epoch: ArrayLike) -> tuple[NDArray, NDArray]:
        return self.for_type(self.gpu_types[0]).grad_stats(batch_size, epoch)

    def iterations(self, batch_size: ArrayLike, epoch: ArrayLike) -> NDArray:
        return self.for_type(self.gpu_types[0]).iterations(batch_size, epoch)

    def single_gpu_throughput(self, gpu_type: str) -> float:
        """Examples per second on one GPU of ``gpu_type`` at the largest per-GPU batch that fits
        there: the per-type factor a belief for an untried type is scaled by (Sia SPEC 4.1,
        taken from one measurement rather than the reference's two maxima)."""
        profile = self.for_type(gpu_type)
        batch = float(profile.limits.max_local_bsz)
        step, _ = profile.step_sync((1,), np.array([batch]))
        return batch / float(step[0])

    def peak_single_gpu_throughput(self, gpu_type: str) -> float:
        """The Sia reference's reading of the same factor (SPEC 4.1): the largest per-GPU batch
        among ``gpu_type``'s one-GPU measurements over the largest step time among them (the
        two need not come from one measurement). Profiles without measurements (fitted ones)
        give :meth:`single_gpu_throughput`."""
        profile = self.for_type(gpu_type)
        rows = getattr(profile, "placements", None)
        if rows is not None and "key" in rows:
            mine = rows[rows["key"] == (1,)]
            if len(mine):
                return float(mine["local_bsz"].max()) / float(mine["step_time"].max())
        return self.single_gpu_throughput(gpu_type)


def as_typed(profile: ApplicationProfile, gpu_type: str) -> TypedProfile:
    """``profile`` as a :class:`TypedProfile`: itself if typed, else the same ground truth on
    every GPU, named ``gpu_type``, with its own restart delay and calibration."""
    if isinstance(profile, TypedProfile):
        return profile
    return TypedProfile(
        profile.name, {gpu_type: lambda: profile}, profile.restart_delay, profile.slowdown
    )


def is_typed_measurement_folder(path: Path) -> bool:
    return path.is_dir() and bool(measured_gpu_types(path))


def load_typed_measured_profiles(
    folder: str | Path, gpu_types: tuple[str, ...] | None = None, legacy_floats: bool = False
) -> dict[str, TypedProfile]:
    """Every application of a typed measurement folder (the Sia artifact's ``traces/``), with
    the Sia restart delays and calibration factors (``legacy_floats``: decimals read as
    :mod:`~goodput_sim.profiles.legacy_floats` says)."""
    folder = Path(folder)
    types = gpu_types or tuple(measured_gpu_types(folder))
    out = {}
    for app in sorted(p for p in folder.iterdir() if p.is_dir() and p.name not in PIPELINE_APPS):
        loaders = {
            t: (lambda app=app, t=t: MeasuredProfile(app, None, t, legacy_floats))
            for t in types
            if (app / f"placements-{t}.csv").is_file()
        }
        if loaders:
            out[app.name] = TypedProfile(
                app.name,
                loaders,
                SIA_RESTART_DELAYS.get(app.name, 30.0),
                SIA_SLOWDOWNS.get(app.name, 1.0),
            )
    if not out:
        raise InputError(folder, "no application with per-GPU-type measurements found")
    return out
