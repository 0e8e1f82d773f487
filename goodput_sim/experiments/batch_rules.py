"""Do the seeds' batch-size rules help on a shared cluster? (issue: batch rules as agents)

Batch agents {fixed, goodput, throughput, critical-batch (compute and time), tail-weighted}
run under the schedulers {goodput, throughput, tiresias} on a set of workloads. For each
(scheduler, agent): average JCT with a 95% bootstrap confidence interval across workloads,
GPU-hours and examples processed per workload, and the JCT ratio against the fixed agent under
the same scheduler (a paired bootstrap over workloads), so "helps" and "hurts" are stated with
their uncertainty. Runs are a resumable sweep.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd

from goodput_sim import jsonio
from goodput_sim.cluster import ClusterSpec
from goodput_sim.engine import SimConfig
from goodput_sim.stats import bootstrap_mean_ci
from goodput_sim.sweep import sweep

SCHEDULERS = ("goodput", "throughput", "tiresias")
AGENTS: dict[str, tuple[str, dict]] = {
    "fixed": ("fixed", {}),
    "goodput": ("goodput", {}),
    "throughput": ("throughput", {}),
    "critical-compute": ("critical-batch", {"mode": "compute"}),
    "critical-time": ("critical-batch", {"mode": "time"}),
    "tail-weighted": ("tail-weighted", {}),
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


def summarize_batch_rules(runs: pd.DataFrame, seed: int = 0) -> pd.DataFrame:
    """The report table from the sweep rows (``label`` column naming the agent variant)."""
    rng = np.random.default_rng(seed)
    rows = []
    for scheduler in [s for s in SCHEDULERS if s in set(runs["policy"])]:
        mine = runs[runs["policy"] == scheduler]
        base = mine[mine["label"] == "fixed"].set_index("workload")["avg_jct"]
        for label in [a for a in AGENTS if a in set(mine["label"])]:
            part = mine[mine["label"] == label].set_index("workload").sort_index()
            jct = part["avg_jct"].to_numpy(dtype=float)
            low, high = bootstrap_mean_ci(jct, rng)
            row = {
                "scheduler": scheduler,
                "agent": label,
                "workloads": len(part),
                "avg_jct_s": float(jct.mean()),
                "avg_jct_ci_low_s": low,
                "avg_jct_ci_high_s": high,
                "gpu_hours": float(part["gpu_hours"].mean()),
                "examples": float(part["examples"].mean()),
                "unfinished": int(part["unfinished"].sum()),
            }
            if len(base):
                paired = np.stack([jct, base.reindex(part.index).to_numpy(dtype=float)], axis=1)
                row["jct_vs_fixed"] = float(jct.mean() / paired[:, 1].mean())
                row["jct_vs_fixed_ci_low"], row["jct_vs_fixed_ci_high"] = bootstrap_mean_ci(
                    paired, rng
                )
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
) -> BatchRulesResult:
    """Run (or resume) the grid into ``out`` and report; writes ``report.csv``,
    ``report.json`` and ``batch_rules.png`` there."""
    variants = [AGENTS[label] for label in agents]
    runs = sweep(
        schedulers,
        workloads,
        out / "runs",
        (0,),
        str(profiles) if profiles is not None else None,
        cluster,
        config,
        workers=workers,
        progress=progress,
        variants=variants,
    )
    by_variant = {
        (agent, json.dumps(params, sort_keys=True)): label
        for label, (agent, params) in AGENTS.items()
    }
    runs["label"] = [by_variant[(a, p)] for a, p in zip(runs["agent"], runs["params"], strict=True)]
    report = summarize_batch_rules(runs, seed)
    names = sorted({Path(w).stem for w in workloads})
    result = BatchRulesResult(runs, report, names)
    out.mkdir(parents=True, exist_ok=True)
    report.to_csv(out / "report.csv", index=False, float_format="%.6g")
    (out / "report.json").write_text(jsonio.dumps(result.as_json(), sort_keys=False) + "\n")
    from goodput_sim.plots import batch_rules_figure

    batch_rules_figure(report, out / "batch_rules.png", names, str(cluster))
    return result
