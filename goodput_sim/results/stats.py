"""Uncertainty for results: percentile bootstrap intervals of a mean and of a paired ratio.

Every interval is computed with an explicit generator, so a report is the same bytes each time."""

from __future__ import annotations

import zlib

import numpy as np

LEVEL = 0.95
RESAMPLES = 4000


def content_rng(seed: int, *samples: np.ndarray) -> np.random.Generator:
    """A generator seeded by ``seed`` and the sample values themselves: the same values give
    the same interval whatever folder, label or table position they come from."""
    digest = zlib.crc32(b"".join(np.ascontiguousarray(s, dtype=float).tobytes() for s in samples))
    return np.random.default_rng([seed, digest])


def bootstrap_mean_ci(
    values: np.ndarray,
    rng: np.random.Generator,
    resamples: int = RESAMPLES,
    level: float = LEVEL,
) -> tuple[float, float]:
    """Percentile bootstrap interval of the mean of ``values`` (rows resampled together when
    ``values`` is 2-D: the statistic is then the ratio of column means, for paired ratios).
    NaN for fewer than two values."""
    values = np.asarray(values, dtype=np.float64)
    n = len(values)
    if n < 2:
        return float("nan"), float("nan")
    picks = rng.integers(0, n, (resamples, n))
    if values.ndim == 1:
        stats = values[picks].mean(axis=1)
    else:
        sample = values[picks]  # (resamples, n, 2)
        stats = sample[:, :, 0].mean(axis=1) / sample[:, :, 1].mean(axis=1)
    tail = (1 - level) / 2 * 100
    low, high = np.percentile(stats, [tail, 100 - tail])
    return float(low), float(high)


def reduction_ci(
    ours: np.ndarray, theirs: np.ndarray, rng: np.random.Generator
) -> tuple[float, float, float]:
    """``1 - mean(ours) / mean(theirs)`` over paired units (workload-seed runs, or jobs) and its
    paired bootstrap interval: the claim check's statistic."""
    ours, theirs = np.asarray(ours, dtype=float), np.asarray(theirs, dtype=float)
    keep = np.isfinite(ours) & np.isfinite(theirs)
    ours, theirs = ours[keep], theirs[keep]
    if not len(ours) or theirs.mean() <= 0:
        return float("nan"), float("nan"), float("nan")
    low, high = bootstrap_mean_ci(np.stack([ours, theirs], axis=1), rng)
    return 1.0 - ours.mean() / theirs.mean(), 1.0 - high, 1.0 - low
