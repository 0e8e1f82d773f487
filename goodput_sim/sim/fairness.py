"""Finish-time fairness (Themis, NSDI'20; Sia, SOSP'23 Eq. 3): for each job,
rho = its JCT under the policy / its JCT alone on an equal share of the cluster.

The share is ``total GPUs / n_avg``, where ``n_avg`` is the time average, over the job's life,
of the number of jobs active (arrived, unfinished, itself included). It is computed exactly
from the jobs table; the Sia reference averages the count over its 60-second ticks.

The job alone on ``g`` GPUs trains with its own batch rule: an adaptive job under a batch
agent that adapts takes, in every epoch, the total batch with the best true progress rate;
every other job keeps its requested batch. A share of a non-integer ``g`` interpolates the
times on ``floor(g)`` and ``ceil(g)`` GPUs; below one GPU, or below a rigid job's own GPUs, the
job time-slices its share (the time on one GPU, or on its own, scaled by the shortfall); above
its largest useful count it leaves the rest idle. On clusters of several GPU types the time is
averaged over the types, weighted by each type's GPUs, with the share capped by the type's
GPUs (the reference's Eq. 3). The job alone starts once (its restart delay) and never waits
or restarts again: the ideal an equal share buys. A job with rho > 1 finished later than that
share would have let it.

The pieces that read only a run's tables (each job's contention, the summary of a fairness
table) are in :mod:`goodput_sim.results.fairness`; this module adds the isolated JCTs, which
need the application profiles.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence

import numpy as np
import pandas as pd

from goodput_sim.inputs.cluster import ClusterSpec, type_nodes
from goodput_sim.models.goodput import fixed_batch_configs
from goodput_sim.profiles.base import ApplicationProfile
from goodput_sim.results.fairness import contention
from goodput_sim.sim.progress import epoch_rates

COLUMNS = ("name", "n_avg", "share_gpus", "isolated_jct", "rho")
BATCH_CANDIDATES = 24  # total batches tried per epoch for an adaptive job alone (geometric)


def isolated_seconds(
    profile: ApplicationProfile,
    layout_of: Callable[[int], tuple[int, ...]],
    gpus: int,
    batch: int | None,
) -> float:
    """Seconds ``profile`` takes alone on ``gpus`` GPUs (placed as ``layout_of`` packs them):
    at total batch ``batch`` throughout, or (None) at the best true batch in every epoch."""
    lim = profile.limits
    layout = layout_of(gpus)
    epochs = np.arange(lim.max_epochs)
    if batch is None:
        low = max(lim.init_batch_size, lim.min_local_bsz * gpus)
        totals = np.unique(
            np.geomspace(min(low, lim.max_batch_size), lim.max_batch_size, BATCH_CANDIDATES).round()
        )
    else:
        totals = np.array([float(batch)])
    b, s = fixed_batch_configs(totals, gpus, lim)
    # (candidates x epochs) true rates in one call; the best candidate in every epoch.
    *_, rate = epoch_rates(profile, layout, b[:, None], s[:, None], gpus, epochs[None, :])
    best = rate.max(axis=0)
    with np.errstate(divide="ignore"):
        return float(np.sum(np.diff(profile.progress_thresholds) / best))


class IsolatedTimes:
    """Isolated JCTs on fractional shares, memoised per (application, type, GPUs, batch)."""

    def __init__(
        self, cluster: ClusterSpec, profile_of: Callable[[str, str | None], ApplicationProfile]
    ):
        self.cluster = cluster
        self.profile_of = profile_of
        self._memo: dict[tuple, float] = {}
        types = cluster.type_order if cluster.mixed else (None,)
        capacity = cluster.type_capacity() if cluster.mixed else [cluster.total_gpus]
        self.types = [(t, int(c)) for t, c in zip(types, capacity, strict=True) if c > 0]

    def _seconds(self, app: str, gpu_type: str | None, gpus: int, batch: int | None) -> float:
        key = (app, gpu_type, gpus, batch)
        if key not in self._memo:
            nodes = type_nodes(self.cluster, gpu_type)
            self._memo[key] = isolated_seconds(
                self.profile_of(app, gpu_type), nodes.packed_layout, gpus, batch
            )
        return self._memo[key]

    def on_share(self, app: str, share: float, batch: int | None, floor: int, cap: int) -> float:
        """Seconds alone on ``share`` GPUs, running on ``floor``..``cap`` GPUs (a rigid job:
        both its own count), averaged over GPU types weighted by their GPUs."""
        total = weight = 0.0
        for gpu_type, gpus in self.types:
            g = min(share, gpus)
            top = min(cap, gpus)
            if top < floor:
                continue  # the job cannot run on this type
            if g <= floor:  # time-slice the share: the time on its fewest GPUs, stretched
                seconds = self._seconds(app, gpu_type, floor, batch) * floor / g
            elif g >= top:
                seconds = self._seconds(app, gpu_type, top, batch)
            else:
                low, high = math.floor(g), math.ceil(g)
                t_low = self._seconds(app, gpu_type, low, batch)
                t_high = self._seconds(app, gpu_type, high, batch) if high > low else t_low
                seconds = t_low + (g - low) * (t_high - t_low)
            total += gpus * seconds
            weight += gpus
        return total / weight if weight else float("nan")


def fairness_table(
    jobs: pd.DataFrame,
    total_gpus: int,
    isolated: IsolatedTimes,
    rules: Sequence[tuple[int | None, int, int, float]],
) -> pd.DataFrame:
    """rho per job of the jobs table; ``rules`` gives each job, in row order, (batch alone,
    None for the best per epoch; fewest GPUs; most GPUs; seconds to start)."""
    n_avg = contention(jobs)
    share = total_gpus / n_avg
    times = [
        isolated.on_share(app, s, *rule[:3]) + rule[3]
        for app, s, rule in zip(jobs["application"], share, rules, strict=True)
    ]
    out = pd.DataFrame({"name": jobs["name"], "n_avg": n_avg, "share_gpus": share})
    out["isolated_jct"] = times
    finished = jobs["finished"].astype(bool).to_numpy()
    out["rho"] = np.where(finished, jobs["jct"].to_numpy(dtype=float) / out["isolated_jct"], np.nan)
    return out.loc[:, list(COLUMNS)]
