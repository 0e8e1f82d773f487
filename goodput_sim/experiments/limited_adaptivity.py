"""How schedulers cope when jobs cannot adapt (the Sia paper's limited-adaptivity experiment):
each workload is given a share of rigid jobs (or strong-scaling ones), drawn i.i.d. per job
with one seed so that the mixes are nested (a job rigid at 25% is rigid at 50%), and every
policy runs every mix. Reported per (policy, share): average JCT and makespan over the
workloads, and each against the same policy at share 0. Runs are a resumable sweep.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import pandas as pd

from goodput_sim.inputs.cluster import ClusterSpec
from goodput_sim.inputs.workload import categorize, load_workload, write_workload

POLICIES = ("sia", "goodput", "gavel")
SHARES = (0.0, 0.25, 0.5, 0.75, 1.0)


def categorized_workloads(
    files: Sequence[Path], folder: Path, category: str, shares: Sequence[float], seed: int
) -> dict[Path, float]:
    """Write each workload at each share of ``category`` into ``folder``; the files and their
    shares. Names carry the share (``workload-1-rigid25.csv``) so that a sweep keys them apart."""
    out = {}
    for file in files:
        jobs = load_workload(file)
        for share in shares:
            path = folder / f"{file.stem}-{category}{round(share * 100)}.csv"
            write_workload(categorize(jobs, {category: share}, seed), path)
            out[path] = share
    return out


def run_limited_adaptivity(
    files: Sequence[Path],
    out: Path,
    profiles: str | Path | None,
    cluster: ClusterSpec | str,
    policies: Sequence[str] = POLICIES,
    category: str = "rigid",
    shares: Sequence[float] = SHARES,
    seed: int = 0,
    workers: int = 2,
    progress: bool = True,
) -> pd.DataFrame:
    """Run (or resume) every policy on every mix into ``out``; the report (also written as
    ``out/report.csv``)."""
    from goodput_sim.experiments.sweep import sweep

    mixes = categorized_workloads(files, out / "workloads", category, shares, seed)
    runs = sweep(
        policies,
        list(mixes),
        out / "runs",
        profiles=str(profiles) if profiles is not None else None,
        cluster=cluster,
        workers=workers,
        progress=progress,
    )
    share_of = {path.stem: share for path, share in mixes.items()}
    runs = runs[runs["workload"].isin(share_of)].copy()
    runs["share"] = runs["workload"].map(share_of)
    report = summarize(runs, category)
    report.to_csv(out / "report.csv", index=False, float_format="%.6g")
    return report


def summarize(runs: pd.DataFrame, category: str = "rigid") -> pd.DataFrame:
    """Per (policy, share): workloads, mean average JCT and makespan (hours), and both as
    ratios to the policy's all-adaptive runs."""
    report = (
        runs.groupby(["policy", "share"], sort=True)
        .agg(
            workloads=("workload", "size"),
            avg_jct=("avg_jct", "mean"),
            makespan=("makespan", "mean"),
        )
        .reset_index()
    )
    report["avg_jct_h"] = report.pop("avg_jct") / 3600
    report["makespan_h"] = report.pop("makespan") / 3600
    base = report[report["share"] == 0].set_index("policy")
    for column in ("avg_jct_h", "makespan_h"):
        report[f"{column}_vs_adaptive"] = report[column] / report["policy"].map(base[column])
    report.insert(1, "category", category)
    return report
