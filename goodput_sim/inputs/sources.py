"""Where a sweep's workloads come from: a CSV file, or the generator with its settings.

A source turns (load, seed) into the jobs of one run. A file is replayed as it is at load 1.0
and seed 0, and resampled in its own window otherwise (``workload.resample_jobs``); a generated
source draws a new workload for every seed, with ``load`` times its jobs in the same window, as
the Pollux paper's 0.5x-2x load experiment does. The provenance goes into the run's manifest."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pandas as pd

from goodput_sim.errors import InputError
from goodput_sim.inputs import workload as wl

GENERATE_FIELDS = {
    "preset": str,
    "jobs": int,
    "hours": int,
    "days": int,
    "realistic": bool,
    "seed": int,
    "stats": str,
}
"""Settings a generated source takes (those of ``goodput-sim workload generate``)."""


@dataclass(frozen=True)
class WorkloadSource:
    """A named workload: a CSV file (``path``) or generator settings (``generate``, sorted
    (key, value) pairs)."""

    name: str
    path: Path | None = None
    generate: tuple[tuple[str, Any], ...] = ()

    @classmethod
    def file(cls, path: str | Path) -> WorkloadSource:
        return cls(Path(path).stem, Path(path))

    @property
    def derived(self) -> bool:
        """Whether a run's jobs differ from a file on disk (they are then saved with the run)."""
        return self.path is None

    def frame(self, load: float, seed: int) -> tuple[pd.DataFrame | Path, dict[str, Any]]:
        """The jobs of one run (the file's path when it is replayed as it is) and how they
        were made."""
        if self.path is not None:
            source = {"kind": "file", "path": str(self.path), "load": load}
            if load == 1.0 and seed == 0:
                return self.path, source
            jobs = wl.load_workload(self.path)
            return wl.resample_jobs(jobs, load, seed), {**source, "seed": seed}
        settings = dict(self.generate)
        preset = wl.PRESETS[settings.get("preset", "default")]
        num_jobs = max(1, round(load * settings.get("jobs", preset.num_jobs)))
        drawn = settings.get("seed", preset.seed) + seed
        # Read for every run (a few milliseconds), so an edited statistics file is never stale.
        stats = wl.load_philly_stats(settings.get("stats") or wl.bundled_path("philly_stats.yaml"))
        jobs = wl.generate_workload(
            stats,
            num_jobs=num_jobs,
            hours=settings.get("hours", preset.hours),
            seed=drawn,
            days=settings.get("days", preset.days if "hours" not in settings else None),
            realistic=settings.get("realistic", preset.realistic),
        )
        made = {"kind": "generated", **settings, "load": load, "jobs": num_jobs}
        return jobs, {**made, "generator_seed": drawn}


def checked_generate(settings: object, source: str | Path, where: str) -> tuple:
    """Generator settings from a mapping, each field checked (one-line errors)."""
    if not isinstance(settings, dict):
        raise InputError(source, "expected a mapping of generator settings", where)
    unknown = set(settings) - set(GENERATE_FIELDS)
    if unknown:
        raise InputError(
            source,
            f"unknown setting(s) {sorted(unknown)}; expected {sorted(GENERATE_FIELDS)}",
            where,
        )
    for key, value in settings.items():
        kind = GENERATE_FIELDS[key]
        ok = isinstance(value, kind) and (kind is bool or not isinstance(value, bool))
        if not ok or (kind is int and value < (0 if key == "seed" else 1)):
            raise InputError(source, f"{key} must be a {kind.__name__}, found {value!r}", where)
    if "preset" in settings and settings["preset"] not in wl.PRESETS:
        raise InputError(
            source, f"unknown preset {settings['preset']!r}; known: {sorted(wl.PRESETS)}", where
        )
    if "hours" in settings and "days" in settings:
        raise InputError(source, "give hours or days, not both", where)
    return tuple(sorted(settings.items()))
