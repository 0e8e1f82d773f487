"""Do the seeds' batch-size rules help on a shared cluster, judged on JCT and on their own
terms? (issues: batch rules as agents; the seeds' rules judged on their own terms)

Batch agents {fixed, goodput, throughput, critical-batch (compute and time), tail-weighted
(blind, forecasting and hindsight plans)} run under the schedulers {goodput, throughput,
tiresias} on a set of workloads, each replayed as it is (seed 0) and resampled (seeds 1, 2...),
under both progress models (``noise``: Pollux's; ``lr-aware``: a fixed example budget and a
final loss). For each (progress model, scheduler, agent): average JCT with a 95% bootstrap
interval across runs, GPU-hours and examples per run, the JCT ratio against the fixed agent
under the same scheduler (paired by workload and seed), and seed 004's own objective, each job's
learning-rate-weighted noise and final loss relative to its static batch (1 = the fixed agent
on its requested GPUs), averaged over jobs and runs with paired intervals against the fixed
agent. Runs are a resumable sweep.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, replace
from pathlib import Path

import numpy as np
import pandas as pd

from goodput_sim import jsonio
from goodput_sim.experiments.sweep import sweep
from goodput_sim.inputs.cluster import ClusterSpec
from goodput_sim.results.stats import bootstrap_mean_ci
from goodput_sim.spec import SimConfig

SCHEDULERS = ("goodput", "throughput", "tiresias")
AGENTS: dict[str, tuple[str, dict]] = {
    "fixed": ("fixed", {}),
    "goodput": ("goodput", {}),
    "throughput": ("throughput", {}),
    "critical-compute": ("critical-batch", {"mode": "compute"}),
    "critical-time": ("critical-batch", {"mode": "time"}),
    "tail-blind": ("tail-weighted", {}),
    "tail-forecast": ("tail-weighted", {"forecast": True}),
    "tail-hindsight": ("tail-weighted", {"window": 0}),
}
"""Label -> (agent, parameters)."""


@dataclass
class BatchRulesResult:
    """Per-run rows and the per-(scheduler, agent) report."""

    runs: pd.DataFrame
    report: pd.DataFrame
    workloads: list[str]

    def as_json(self) -> dict:
        return {
            "workloads": self.workloads,
            "report": json.loads(self.report.to_json(orient="records")),
        }


PROGRESS_MODELS = ("noise", "lr-aware")
OBJECTIVES = {
    "lr_noise": "avg_lr_noise_vs_static",
    "final_loss": "avg_final_loss_vs_static",
    "final_loss_tuned": "avg_final_loss_tuned_vs_static",
}
"""Report key -> the sweep column holding it (each run's mean over jobs of the ratio)."""
MIN_PAIRS = 5  # fewer paired runs than this get no interval (the values say enough)


def _paired(values: np.ndarray, base: np.ndarray, rng: np.random.Generator) -> tuple:
    """(ratio of means, 95% paired bootstrap interval) of ``values`` against ``base``; no
    interval below :data:`MIN_PAIRS` pairs."""
    ok = np.isfinite(values) & np.isfinite(base)
    values, base = values[ok], base[ok]
    if not len(values):
        return float("nan"), float("nan"), float("nan")
    ratio = float(values.mean() / base.mean())
    if len(values) < MIN_PAIRS:
        return ratio, float("nan"), float("nan")
    low, high = bootstrap_mean_ci(np.stack([values, base], axis=1), rng)
    return ratio, low, high


def summarize_batch_rules(runs: pd.DataFrame, seed: int = 0) -> pd.DataFrame:
    """The report table from the sweep rows (``label`` naming the agent variant, ``progress``
    the progress model); runs are paired by (workload, seed)."""
    rng = np.random.default_rng(seed)
    rows = []
    runs = runs.assign(pair=runs["workload"] + "/" + runs["seed"].astype(str))
    for model in [m for m in PROGRESS_MODELS if m in set(runs["progress"])]:
        for scheduler in [s for s in SCHEDULERS if s in set(runs["policy"])]:
            mine = runs[(runs["policy"] == scheduler) & (runs["progress"] == model)]
            base = mine[mine["label"] == "fixed"].set_index("pair")
            for label in [a for a in AGENTS if a in set(mine["label"])]:
                part = mine[mine["label"] == label].set_index("pair").sort_index()
                jct = part["avg_jct"].to_numpy(dtype=float)
                low, high = bootstrap_mean_ci(jct, rng)
                row = {
                    "progress": model,
                    "scheduler": scheduler,
                    "agent": label,
                    "runs": len(part),
                    "avg_jct_s": float(jct.mean()),
                    "avg_jct_ci_low_s": low,
                    "avg_jct_ci_high_s": high,
                    "gpu_hours": float(part["gpu_hours"].mean()),
                    "examples": float(part["examples"].mean()),
                    "unfinished": int(part["unfinished"].sum()),
                }
                for key, column in OBJECTIVES.items():
                    row[f"{key}_vs_static"] = float(part[column].mean())
                if len(base):
                    paired = base.reindex(part.index)
                    for key, column in {"jct": "avg_jct", **OBJECTIVES}.items():
                        ratio, lo, hi = _paired(
                            part[column].to_numpy(float), paired[column].to_numpy(float), rng
                        )
                        row[f"{key}_vs_fixed"] = ratio
                        row[f"{key}_vs_fixed_ci_low"], row[f"{key}_vs_fixed_ci_high"] = lo, hi
                rows.append(row)
    return pd.DataFrame(rows)


def run_batch_rules(
    workloads: list[Path],
    out: Path,
    profiles: str | Path | None = None,
    cluster: ClusterSpec | str = "16x4",
    workers: int = 1,
    agents: tuple[str, ...] = tuple(AGENTS),
    schedulers: tuple[str, ...] = SCHEDULERS,
    config: SimConfig | None = None,
    progress: bool = True,
    seed: int = 0,
    seeds: tuple[int, ...] = (0, 1, 2),
    models: tuple[str, ...] = PROGRESS_MODELS,
) -> BatchRulesResult:
    """Run (or resume) the grid into ``out`` and report; writes ``report.csv``,
    ``report.json`` and ``batch_rules.png`` there. ``seeds`` resample each workload (0: as
    it is); every run records seed 004's objective."""
    variants = [AGENTS[label] for label in agents]
    runs = sweep(
        schedulers,
        workloads,
        out / "runs",
        seeds,
        str(profiles) if profiles is not None else None,
        cluster,
        replace(config or SimConfig(), seed_objective=True),
        workers=workers,
        progress=progress,
        variants=variants,
        settings={"progress": list(models)},
    )
    runs["progress"] = [json.loads(s).get("progress", "noise") for s in runs["settings"]]
    by_variant = {
        (agent, json.dumps({k: str(v) for k, v in params.items()}, sort_keys=True)): label
        for label, (agent, params) in AGENTS.items()
    }
    runs["label"] = [by_variant[(a, p)] for a, p in zip(runs["agent"], runs["params"], strict=True)]
    report = summarize_batch_rules(runs, seed)
    names = sorted({Path(w).stem for w in workloads})
    result = BatchRulesResult(runs, report, names)
    out.mkdir(parents=True, exist_ok=True)
    report.to_csv(out / "report.csv", index=False, float_format="%.6g")
    (out / "report.json").write_text(jsonio.dumps(result.as_json(), sort_keys=False) + "\n")
    from goodput_sim.results.plots import batch_rules_figure

    batch_rules_figure(report, out / "batch_rules.png", names, str(cluster))
    return result
