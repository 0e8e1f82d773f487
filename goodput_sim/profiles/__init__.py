"""Application profiles: the ground truth of how each training job runs (see ``base``)."""

from __future__ import annotations

from pathlib import Path

from goodput_sim import bundled
from goodput_sim.errors import InputError
from goodput_sim.profiles.base import ApplicationProfile, Limits, Placement, canonical_placement
from goodput_sim.profiles.measured import (
    MeasuredProfile,
    is_measurement_folder,
    load_measured_profiles,
)
from goodput_sim.profiles.parametric import (
    ParametricProfile,
    load_parametric_profiles,
    load_profile_yaml,
)
from goodput_sim.profiles.typed import (
    TypedProfile,
    is_typed_measurement_folder,
    load_typed_measured_profiles,
)

__all__ = [
    "ApplicationProfile",
    "Limits",
    "MeasuredProfile",
    "ParametricProfile",
    "TypedProfile",
    "Placement",
    "bundled_profiles_path",
    "canonical_placement",
    "load_profiles",
]


def bundled_profiles_path() -> Path:
    """The shipped parametric profiles (the repository's ``traces/profiles/``)."""
    return bundled.path("traces/profiles")


def load_profiles(
    path: str | Path | None = None, legacy_floats: bool = False
) -> dict[str, ApplicationProfile]:
    """Profiles from a folder of YAML files or a measurement folder (default: the bundled YAML).
    ``legacy_floats``: a measurement folder's decimals read as pandas before 2.0 read them, as
    the reference simulators did (:mod:`~goodput_sim.profiles.legacy_floats`)."""
    path = Path(path) if path is not None else bundled_profiles_path()
    if not path.exists():
        raise InputError(path, "profiles path does not exist")
    if not path.is_dir() and not path.is_file():  # a FIFO or device: never a folder to list
        raise InputError(
            path,
            "is not a regular file or folder (a FIFO, device or socket); expected a folder of "
            "profiles or a profile YAML file",
        )
    if path.is_file():
        profile = load_profile_yaml(path)
        return {profile.name: profile}
    if is_typed_measurement_folder(path):
        return dict(load_typed_measured_profiles(path, legacy_floats=legacy_floats))
    if is_measurement_folder(path):
        return dict(load_measured_profiles(path, legacy_floats=legacy_floats))
    return dict(load_parametric_profiles(path))
