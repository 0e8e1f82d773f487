"""Fidelity checks against the Pollux artifact's published workload-6 results (SPEC 9)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from goodput_sim.api import run

WORKLOAD = "workloads/workload-6.csv"


@dataclass(frozen=True)
class FidelityBar:
    """A policy's average JCT must lie within [low, high] seconds."""

    policy: str
    target: float
    low: float
    high: float
    note: str


BARS = (
    FidelityBar(
        "tiresias", 3469.69375, 3469.69375 * 0.98, 3469.69375 * 1.02, "within 2% of 3469.7 s"
    ),
    FidelityBar("optimus", 5301.875, 5301.875 * 0.97, 5301.875 * 1.03, "within 3% of 5301.9 s"),
    FidelityBar(
        "goodput", 2446.0, 0.0, 2446.0 * 1.10, "at most 2446 x 1.10 s (reference is stochastic)"
    ),
)


@dataclass(frozen=True)
class FidelityResult:
    bar: FidelityBar
    avg_jct: float
    wall_seconds: float

    @property
    def passed(self) -> bool:
        return self.bar.low <= self.avg_jct <= self.bar.high


def check_fidelity(reference: Path, bars: tuple[FidelityBar, ...] = BARS) -> list[FidelityResult]:
    """Run each policy on reference workload-6 with the reference's measured profiles."""
    results = []
    for bar in bars:
        result = run(bar.policy, reference / WORKLOAD, reference / "traces")
        results.append(FidelityResult(bar, float(result.jobs["jct"].mean()), result.wall_seconds))
    return results
