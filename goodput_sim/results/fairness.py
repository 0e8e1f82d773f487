"""Finish-time fairness read from a run's tables (Themis, NSDI'20; Sia, SOSP'23 Eq. 3): for
each job, rho = its JCT under the policy / its JCT alone on an equal share of the cluster.

What needs only a jobs table or a fairness table lives here: the contention each job saw
(:func:`contention`, the time-averaged number of active jobs that sets its share) and the
summary of a fairness table (:func:`fairness_summary`). The isolated JCTs on those shares,
which need the application profiles, are computed by :mod:`goodput_sim.sim.fairness`.
"""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
from numpy.typing import NDArray


def contention(jobs: pd.DataFrame) -> NDArray[np.float64]:
    """Per job (row order), the time-averaged number of active jobs over its life: jobs are
    active from arrival to finish (to the end of the run if unfinished)."""
    arrival = jobs["arrival"].to_numpy(dtype=float)
    end = arrival + jobs["jct"].to_numpy(dtype=float)
    done = end[np.isfinite(end)]
    horizon = float(done.max()) if done.size else float(arrival.max(initial=0.0))
    end = np.where(np.isfinite(end), end, horizon)
    times = np.unique(np.concatenate([arrival, end]))
    if len(times) < 2:
        return np.ones(len(jobs))
    starts, stops = times[:-1], times[1:]
    # Jobs active over each interval between consecutive events, and its running integral.
    active = np.searchsorted(np.sort(arrival), starts, "right") - np.searchsorted(
        np.sort(end), starts, "right"
    )
    area = np.concatenate([[0.0], np.cumsum(active * (stops - starts))])
    first, last = np.searchsorted(times, arrival), np.searchsorted(times, end)
    life = end - arrival
    with np.errstate(invalid="ignore", divide="ignore"):
        n_avg = (area[last] - area[first]) / life
    return np.where(life > 0, n_avg, 1.0)


def fairness_summary(table: pd.DataFrame) -> dict[str, float]:
    """Worst and median rho and the share of jobs with rho > 1 (finished jobs)."""
    rho = table["rho"].to_numpy(dtype=float) if len(table) else np.array([])
    rho = rho[np.isfinite(rho)]
    if not rho.size:
        return {
            "ftf_rho_max": math.nan,
            "ftf_rho_median": math.nan,
            "ftf_unfair_fraction": math.nan,
        }
    return {
        "ftf_rho_max": float(rho.max()),
        "ftf_rho_median": float(np.median(rho)),
        "ftf_unfair_fraction": float(np.mean(rho > 1.0)),
    }
