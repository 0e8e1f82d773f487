"""Fidelity checks against the Pollux artifact's published workload-6 results (SPEC 9)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from goodput_sim.api import run

WORKLOAD = "workloads/workload-6.csv"


@dataclass(frozen=True)
class FidelityBar:
    """A policy's average JCT must lie within ``tolerance`` (a fraction) of the reference's
    ``target`` seconds; an ``upper_only`` bar (a stochastic reference) only caps it."""

    policy: str
    target: float
    tolerance: float
    upper_only: bool = False

    @property
    def low(self) -> float:
        return 0.0 if self.upper_only else self.target * (1 - self.tolerance)

    @property
    def high(self) -> float:
        return self.target * (1 + self.tolerance)

    @property
    def note(self) -> str:
        if self.upper_only:
            return f"at most {self.target:g} x {1 + self.tolerance:.2f} s (reference is stochastic)"
        return f"within {self.tolerance:.0%} of {self.target:.1f} s"


BARS = (
    FidelityBar("tiresias", 3469.69375, 0.02),
    FidelityBar("optimus", 5301.875, 0.03),
    FidelityBar("goodput", 2446.0, 0.10, upper_only=True),
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
