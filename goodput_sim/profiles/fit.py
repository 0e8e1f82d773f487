"""Turn a measured profile into a compact parametric one, and measure how well it fits.

The throughput fit is one robust least-squares problem over every measurement: log compute
knots (one per measured per-GPU batch), log network time per measured (nodes, replicas) and gamma
per node count, minimising soft-L1 log errors of step time (weighted 3x) and compute time. The
robust loss keeps single noisy measurements (the traces have 10-20% outliers) from pulling the fit.
"""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass

import numpy as np
import pandas as pd

from goodput_sim import __version__
from goodput_sim.models.efficiency import efficiency
from goodput_sim.models.limits import JOB_FIELDS
from goodput_sim.models.throughput import gamma_norm
from goodput_sim.profiles.base import ApplicationProfile
from goodput_sim.profiles.measured import MeasuredProfile
from goodput_sim.profiles.parametric import SCHEMA_VERSION, ParametricProfile

STEP_WEIGHT = 3.0  # step time is what the engine uses most; compute time matters for accumulation
ROBUST_SCALE = 0.01  # soft-L1 transition at 1% log error
MAX_STAT_KNOTS = 24  # gradient-statistics knots per batch size (denser early in training)
SIGNIFICANT = 6


def _round(values, digits: int = SIGNIFICANT) -> list:
    """Plain Python floats rounded to ``digits`` significant digits, for compact YAML."""
    array = np.asarray(values, dtype=np.float64)
    rounded = [float(f"{v:.{digits}g}") for v in array.ravel()]
    return np.reshape(rounded, array.shape).tolist()


def fit_throughput(measurements: pd.DataFrame) -> dict:
    """Fit compute knots, (nodes, replicas) network table and per-node-count gamma."""
    bsz = measurements["local_bsz"].to_numpy(dtype=float)
    nodes = measurements["num_nodes"].to_numpy(dtype=float)
    replicas = measurements["num_replicas"].to_numpy(dtype=float)
    step = measurements["step_time"].to_numpy(dtype=float)
    acc = np.maximum(step - measurements["sync_time"].to_numpy(dtype=float), 1e-9)
    knots = np.unique(bsz)
    node_counts = np.unique(nodes)
    pairs = sorted({(n, r) for n, r in zip(nodes, replicas, strict=True) if r > 1})
    knot_of = np.searchsorted(knots, bsz)
    node_of = np.searchsorted(node_counts, nodes)
    pair_index = {p: i for i, p in enumerate(pairs)}
    pair_of = np.array([pair_index.get((n, r), 0) for n, r in zip(nodes, replicas, strict=True)])
    multi = replicas > 1
    n_knots, n_pairs = len(knots), len(pairs)

    def unpack(x):
        t_acc = np.exp(x[:n_knots])
        t_net = np.exp(x[n_knots : n_knots + n_pairs])
        gamma = 1.0 + np.exp(x[n_knots + n_pairs :])
        return t_acc, t_net, gamma

    def predict(x):
        t_acc, t_net, gamma = unpack(x)
        a = t_acc[knot_of]
        s = np.where(multi, gamma_norm(a, t_net[pair_of] if n_pairs else a, gamma[node_of]), a)
        return a, s

    def residuals(x):
        a, s = predict(x)
        return np.concatenate([np.log(a / acc), STEP_WEIGHT * np.log(s / step)])

    x0 = np.concatenate(
        [
            np.log([np.median(acc[bsz == k]) for k in knots]),
            np.log(
                [
                    max(np.median((step - acc)[(nodes == n) & (replicas == r)]), 1e-6)
                    for n, r in pairs
                ]
            ),
            np.zeros(len(node_counts)),
        ]
    )
    from scipy.optimize import least_squares  # slow import, needed only here

    result = least_squares(residuals, x0, loss="soft_l1", f_scale=ROBUST_SCALE)
    t_acc, t_net, gamma = unpack(result.x)
    return {
        "compute": {"local_bsz": _round(knots), "accum_time": _round(t_acc)},
        "network": {
            "nodes": [int(n) for n, _ in pairs],
            "replicas": [int(r) for _, r in pairs],
            "time": _round(t_net),
        },
        "gamma": {"nodes": [int(n) for n in node_counts], "value": _round(gamma)},
    }


def stat_knots(epochs: int, max_knots: int = MAX_STAT_KNOTS) -> np.ndarray:
    """Epoch indices for gradient-statistics knots: all if few, else geometric (dense early)."""
    if epochs <= max_knots:
        return np.arange(epochs)
    return np.unique(np.round(np.geomspace(1, epochs, max_knots)).astype(int) - 1)


def fit_profile(measured: MeasuredProfile, source: str) -> dict:
    """The YAML-ready parametric profile of one measured application."""
    knots = stat_knots(measured.limits.max_epochs)
    sqr, var = measured.grad_stats(measured.batch_sizes[:, None], knots[None, :])
    data = {
        "schema_version": SCHEMA_VERSION,
        "application": measured.name,
        "limits": {
            k: v
            for k, v in vars(measured.limits).items()
            if v is not None and k not in JOB_FIELDS  # a job's category is not the profile's
        },
        "throughput": fit_throughput(measured.measurements()),
        "progress": {"thresholds": _round(measured.progress_thresholds[1:], 8)},
        "gradient_stats": {
            "batch_sizes": [int(b) for b in measured.batch_sizes],
            "epochs": [int(k) for k in knots],
            "log_grad_sqr": _round(np.log(np.maximum(sqr, 1e-30)), 5),
            "log_grad_var": _round(np.log(np.maximum(var, 1e-30)), 5),
        },
    }
    errors = check_profile(ParametricProfile(data, source=measured.name), measured)
    data["provenance"] = {
        "source": source,
        "generated": dt.date.today().isoformat(),
        "tool": f"goodput-sim {__version__} profiles fit",
        "throughput_measurements": int(len(measured.measurements())),
        "fit_error": {k: round(v, 4) for k, v in vars(errors).items()},
    }
    return data


@dataclass(frozen=True)
class FitErrors:
    """Median and p90 relative errors of a parametric profile against measurements (fractions)."""

    step_time_median: float
    step_time_p90: float
    efficiency_median: float
    efficiency_p90: float


def check_profile(profile: ApplicationProfile, measured: MeasuredProfile) -> FitErrors:
    """Relative errors of step time (every measurement) and efficiency (every batch and epoch)."""
    rows = measured.measurements()
    predicted = np.empty(len(rows))
    for i, row in enumerate(rows.itertuples(index=False)):
        if row.placement is not None:
            placement = row.placement
        else:  # scalability rows: an even spread over the nodes (the interpolation key)
            placement = _spread(int(row.num_nodes), int(row.num_replicas))
        predicted[i] = profile.step_sync(placement, row.local_bsz)[0]
    step_err = np.abs(predicted / rows["step_time"].to_numpy() - 1.0)
    m0 = measured.limits.init_batch_size
    epochs = np.arange(measured.limits.max_epochs)
    batch = measured.batch_sizes[:, None]
    true_eff = efficiency(batch, m0, *measured.grad_stats(batch, epochs[None, :]))
    model_eff = efficiency(batch, m0, *profile.grad_stats(batch, epochs[None, :]))
    eff_err = np.abs(model_eff / true_eff - 1.0)
    return FitErrors(
        float(np.median(step_err)),
        float(np.quantile(step_err, 0.9)),
        float(np.median(eff_err)),
        float(np.quantile(eff_err, 0.9)),
    )


def _spread(nodes: int, replicas: int) -> tuple[int, ...]:
    base, extra = divmod(replicas, nodes)
    return tuple(base + (1 if i < extra else 0) for i in range(nodes))


def fit_typed_profile(profile, source: str) -> dict:
    """The YAML-ready profile of an application measured on several GPU types
    (:class:`~goodput_sim.profiles.typed.TypedProfile` of measured profiles): shared limits,
    progress and gradient statistics, one ``gpu_types`` section per type (its per-GPU batch
    range and fitted throughput), the restart delay and calibration, and each type's fit
    error in the provenance."""
    fitted = {t: fit_profile(profile.for_type(t), f"{source} [{t}]") for t in profile.gpu_types}
    first = fitted[profile.gpu_types[0]]
    shared_limits = {
        k: v for k, v in first["limits"].items() if k not in ("min_local_bsz", "max_local_bsz")
    }
    data = {
        "schema_version": SCHEMA_VERSION,
        "application": profile.name,
        "limits": shared_limits,
        "restart_delay": profile.restart_delay,
        "slowdown": profile.slowdown,
        "progress": first["progress"],
        "gradient_stats": first["gradient_stats"],
        "gpu_types": {
            t: {
                "limits": {k: d["limits"][k] for k in ("min_local_bsz", "max_local_bsz")},
                "throughput": d["throughput"],
            }
            for t, d in fitted.items()
        },
        "provenance": {
            **{k: v for k, v in first["provenance"].items() if k != "fit_error"},
            "source": source,
            "throughput_measurements": {
                t: d["provenance"]["throughput_measurements"] for t, d in fitted.items()
            },
            "fit_error": {t: d["provenance"]["fit_error"] for t, d in fitted.items()},
        },
    }
    if data["restart_delay"] is None:
        del data["restart_delay"]
    return data
