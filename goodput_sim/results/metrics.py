"""Numbers from results: JCT statistics, makespan, utilisation, and the paper's claim check."""

from __future__ import annotations

import numpy as np
import pandas as pd

from goodput_sim.results.fairness import fairness_summary

PAPER_CLAIM = (0.37, 0.50)  # Pollux (OSDI'21): 37-50% lower average JCT than its baselines
REFERENCE_POLICY = "goodput"


def _mean(values) -> float:
    values = np.asarray(values, dtype=float)
    values = values[np.isfinite(values)]
    return float(values.mean()) if values.size else float("nan")


def _geometric_mean(values) -> float:
    """Geometric mean of the positive finite values: rates of different applications differ by
    orders of magnitude, so an arithmetic mean would be one application's number."""
    values = np.asarray(values, dtype=float)
    values = values[np.isfinite(values) & (values > 0)]
    return float(np.exp(np.log(values).mean())) if values.size else float("nan")


def summarize(jobs: pd.DataFrame, total_gpus: int) -> dict[str, float | int]:
    """JCT statistics over finished jobs, makespan, utilisation, examples processed.

    ``examples_per_gpu_second`` is the geometric mean over applications of examples processed
    per GPU-second of training (restart delays excluded): how fast the chosen configurations
    churn through data, the quantity a throughput-only scheduler maximises."""
    done = jobs[jobs["finished"].astype(bool)]
    jct = done["jct"].to_numpy(dtype=float)
    makespan = float(done["finish"].max()) - float(jobs["arrival"].min()) if len(done) else np.nan
    busy = float(jobs["gpu_seconds"].sum())
    examples = float(jobs["examples"].sum())
    per_app = jobs.groupby("application")[["examples", "train_gpu_seconds"]].sum()
    with np.errstate(divide="ignore", invalid="ignore"):
        app_rates = per_app["examples"] / per_app["train_gpu_seconds"]
    return {
        "jobs": int(len(jobs)),
        "finished": int(len(done)),
        "unfinished": int(len(jobs) - len(done)),
        "avg_jct": _mean(jct),
        "median_jct": float(np.median(jct)) if jct.size else np.nan,
        "p95_jct": float(np.percentile(jct, 95)) if jct.size else np.nan,
        "p99_jct": float(np.percentile(jct, 99)) if jct.size else np.nan,
        "makespan": makespan,
        "gpu_utilization": busy / (total_gpus * makespan) if makespan > 0 else np.nan,
        "avg_queueing": _mean(jobs["queueing"]),
        "avg_restarts": _mean(jobs["restarts"]),
        "gpu_hours": busy / 3600.0,
        "examples": examples,
        "examples_per_gpu_second": _geometric_mean(app_rates),
        "lost_gpu_hours": float(jobs["lost_gpu_seconds"].sum()) / 3600.0
        if "lost_gpu_seconds" in jobs
        else 0.0,
        "gpu_hours_per_job": busy / 3600.0 / len(jobs) if len(jobs) else np.nan,
        **{
            f"avg_jct_{app}": float(part.mean()) for app, part in done.groupby("application")["jct"]
        },
        **_seed_objectives(done),
        **({"job_crashes": int(jobs["crashes"].sum())} if "crashes" in jobs else {}),
    }


def _seed_objectives(done: pd.DataFrame) -> dict[str, float]:
    """Mean over finished jobs of seed 004's objectives relative to each job's static batch
    (runs that recorded them: ``--seed-objective`` or ``--progress lr-aware``)."""
    columns = ("lr_noise_vs_static", "final_loss_vs_static", "final_loss_tuned_vs_static")
    if not all(c in done for c in columns):
        return {}
    return {f"avg_{c}": _mean(done[c]) for c in columns}


def run_summary(result) -> dict[str, float | int]:
    """``summarize`` of a :class:`~goodput_sim.sim.result.SimResult`, with its cluster's node-hours
    (provisioned and failed), failures and cost, and the GPU utilisation of what was
    provisioned (which an autoscaled cluster changes)."""
    cluster = result.cluster
    out = {**summarize(result.jobs, cluster["total_gpus"]), **result.cluster_summary}
    if result.fairness is not None:
        out.update(fairness_summary(result.fairness))
    provisioned = out.get("provisioned_gpu_hours", 0.0) * 3600.0  # node by node
    busy = float(result.jobs["gpu_seconds"].sum())
    out["provisioned_gpu_utilization"] = busy / provisioned if provisioned > 0 else np.nan
    return out


def claim_check(
    summaries: dict[str, dict],
    reference: str = REFERENCE_POLICY,
    baselines: list[str] | None = None,
) -> dict:
    """Average-JCT reduction of ``reference`` against each baseline (default: every other
    policy), beside the paper's."""
    if reference not in summaries:
        return {"reference": reference, "available": False}
    ours = summaries[reference]["avg_jct"]
    versus = {}
    for name, summary in summaries.items():
        if name == reference or (baselines is not None and name not in baselines):
            continue
        reduction = 1.0 - ours / summary["avg_jct"]
        versus[name] = {
            "reduction": reduction,
            "within_paper_range": PAPER_CLAIM[0] <= reduction <= PAPER_CLAIM[1],
            "at_least_paper_low": reduction >= PAPER_CLAIM[0],
        }
    return {
        "reference": reference,
        "available": True,
        "paper_range": list(PAPER_CLAIM),
        "versus": versus,
    }
