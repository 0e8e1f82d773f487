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
agent. The final loss is reported twice: at the static run's rate (``final_loss``: an arm that
takes fewer or more steps descends less or more, so this column mostly counts steps) and with the
rate tuned to each job's own steps (``final_loss_tuned``, as a comparison with the rate tuned per
arm would). Runs are a resumable sweep.

Under ``lr-aware`` the tail-weighted arms (and the fixed batch, their baseline) also run in seed
004's own geometry (``tail_geometry: steps``: the plan laid on the static run's optimizer steps,
steps and examples both the static run's), in a sweep of their own (``runs-steps``); the report
has a ``geometry`` column. Each agent's effect is also reported on the jobs it changes (``changed``
columns: the jobs its run moved off their static batch, compared with the same jobs under the
fixed agent), beside its effect on all jobs, which dilutes it by the jobs it leaves alone.
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
from goodput_sim.sim.budget import DEFAULT_MAX_RUNS, MAX_GRID_RUNS
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
GEOMETRIES = ("examples", "steps")
"""``tail_geometry`` values; ``steps`` runs under ``lr-aware`` only, for :data:`STEP_LABELS`."""
STEP_LABELS = ("fixed", "tail-blind", "tail-forecast", "tail-hindsight")
"""Arms run in the steps geometry: the tail-weighted plans and their fixed baseline."""


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
JOB_OBJECTIVES = {key: f"{key}_vs_static" for key in OBJECTIVES}
"""Report key -> the ``jobs.csv`` column holding it per job."""
CHANGED = 1e-6
"""A job's run changed it when its learning-rate-weighted noise is off its static batch's by
more than this (relative): its batch differed from the static batch somewhere."""
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


def summarize_batch_rules(runs: pd.DataFrame, seed: int | list[int] = 0) -> pd.DataFrame:
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


def changed_jobs_report(
    runs: pd.DataFrame, jobs: dict[str, pd.DataFrame], seed: int = 0
) -> pd.DataFrame:
    """Per (progress, geometry, scheduler, agent) of ``runs``: the share of jobs the agent's
    runs changed (:data:`CHANGED`), and its objectives on those jobs against the same jobs
    under the fixed agent (``<key>_changed_vs_fixed``: ratio of means over the runs, with a 95%
    paired bootstrap interval over runs paired by workload and seed). ``jobs`` maps each run's
    key to its ``jobs.csv``."""
    rng = np.random.default_rng([seed, 2])
    runs = runs.assign(pair=runs["workload"] + "/" + runs["seed"].astype(str))
    keys = ["progress", "geometry", "scheduler", "agent"]
    rows = []
    for (model, geometry, scheduler), mine in runs.groupby(
        ["progress", "geometry", "policy"], sort=False
    ):
        base = mine[mine["label"] == "fixed"].set_index("pair")["run_key"]
        for label, part in mine.groupby("label", sort=False):
            share, values = [], {key: ([], []) for key in JOB_OBJECTIVES}
            for pair, key in part.set_index("pair")["run_key"].sort_index().items():
                arm = jobs[key].set_index("name")
                moved = (arm["lr_noise_vs_static"] - 1).abs() > CHANGED
                share.append(float(moved.mean()))
                if pair not in base.index or not moved.any():
                    continue
                fixed = jobs[base[pair]].set_index("name").reindex(arm.index[moved])
                for key, column in JOB_OBJECTIVES.items():
                    values[key][0].append(float(np.nanmean(arm.loc[moved, column])))
                    values[key][1].append(float(np.nanmean(fixed[column])))
            row = dict(zip(keys, (model, geometry, scheduler, label), strict=True))
            row["changed_share"] = float(np.mean(share)) if share else float("nan")
            for key, (ours, theirs) in values.items():
                ratio, lo, hi = _paired(np.array(ours), np.array(theirs), rng)
                row[f"{key}_changed_vs_fixed"] = ratio
                row[f"{key}_changed_vs_fixed_ci_low"] = lo
                row[f"{key}_changed_vs_fixed_ci_high"] = hi
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
    geometries: tuple[str, ...] = GEOMETRIES,
) -> BatchRulesResult:
    """Run (or resume) the grid into ``out`` and report; writes ``report.csv``,
    ``report.json`` and ``batch_rules.png`` there. ``seeds`` resample each workload (0: as
    it is); every run records seed 004's objective. With ``steps`` among ``geometries`` and
    ``lr-aware`` among ``models``, the arms of :data:`STEP_LABELS` also run in the steps
    geometry (into ``runs-steps``)."""
    base = replace(config or SimConfig(), seed_objective=True)
    common = dict(workers=workers, progress=progress)
    grids = []
    if "examples" in geometries:
        labels = list(agents)
        grids.append((out / "runs", labels, {"progress": list(models)}))
    stepped = [label for label in agents if label in STEP_LABELS]
    if "steps" in geometries and "lr-aware" in models and stepped:
        settings = {"progress": ["lr-aware"], "tail_geometry": ["steps"]}
        grids.append((out / "runs-steps", stepped, settings))
    parts = []
    for folder, labels, settings in grids:
        size = len(schedulers) * len(workloads) * len(seeds) * len(labels)
        size *= int(np.prod([len(values) for values in settings.values()]))
        parts.append(
            sweep(
                schedulers,
                workloads,
                folder,
                seeds,
                str(profiles) if profiles is not None else None,
                cluster,
                base,
                variants=[AGENTS[label] for label in labels],
                settings=settings,
                max_runs=min(max(size, DEFAULT_MAX_RUNS), MAX_GRID_RUNS),  # the grid is ours
                **common,
            )
        )
    runs = pd.concat(parts, ignore_index=True)
    chosen = [json.loads(s) for s in runs["settings"]]
    runs["progress"] = [c.get("progress", "noise") for c in chosen]
    runs["geometry"] = [c.get("tail_geometry", "examples") for c in chosen]
    by_variant = {
        (agent, json.dumps({k: str(v) for k, v in params.items()}, sort_keys=True)): label
        for label, (agent, params) in AGENTS.items()
    }
    runs["label"] = [by_variant[(a, p)] for a, p in zip(runs["agent"], runs["params"], strict=True)]
    report = _report(runs, [out / "runs", out / "runs-steps"], seed)
    names = sorted({Path(w).stem for w in workloads})
    result = BatchRulesResult(runs, report, names)
    out.mkdir(parents=True, exist_ok=True)
    report.to_csv(out / "report.csv", index=False, float_format="%.6g")
    (out / "report.json").write_text(jsonio.dumps(result.as_json(), sort_keys=False) + "\n")
    from goodput_sim.results.plots import batch_rules_figure

    batch_rules_figure(report, out / "batch_rules.png", names, str(cluster))
    return result


def _report(runs: pd.DataFrame, folders: list[Path], seed: int) -> pd.DataFrame:
    """The report of both geometries: each geometry's rows as :func:`summarize_batch_rules`
    makes them (the examples rows first, with the generator they always had, so they stay the
    rows of a report made before the steps geometry), a ``geometry`` column after
    ``progress``, and the changed-jobs columns at the end."""
    parts = []
    for k, geometry in enumerate(g for g in GEOMETRIES if g in set(runs["geometry"])):
        part = summarize_batch_rules(
            runs[runs["geometry"] == geometry], seed if k == 0 else [seed, k]
        )
        part.insert(1, "geometry", geometry)
        parts.append(part)
    report = pd.concat(parts, ignore_index=True)
    jobs = _jobs_by_key(folders, set(runs["run_key"]))
    changed = changed_jobs_report(runs, jobs, seed)
    return report.merge(changed, on=["progress", "geometry", "scheduler", "agent"], how="left")


def _jobs_by_key(folders: list[Path], keys: set[str]) -> dict[str, pd.DataFrame]:
    """Each run's ``jobs.csv`` (name and objective columns) by its run key, from the sweep
    folders."""
    out = {}
    columns = ["name", *JOB_OBJECTIVES.values()]
    for folder in folders:
        for summary in sorted(folder.rglob("summary.json")) if folder.is_dir() else []:
            key = json.loads(summary.read_text()).get("run_key")
            if key in keys and key not in out:
                out[key] = pd.read_csv(summary.parent / "jobs.csv", usecols=columns)
    missing = keys - set(out)
    if missing:
        raise RuntimeError(f"{len(missing)} run(s) of the sweep have no jobs.csv in {folders}")
    return out
