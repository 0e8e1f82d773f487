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

from goodput_sim.errors import InputError
from goodput_sim.inputs.cluster import ClusterSpec
from goodput_sim.inputs.workload import categorize, load_workload, write_workload
from goodput_sim.sim.budget import DEFAULT_MAX_RUNS

POLICIES = ("sia", "goodput", "gavel")
SHARES = (0.0, 0.25, 0.5, 0.75, 1.0)


def mix_name(file: Path, category: str, share: float) -> str:
    """A mix's file name: ``workload-1-rigid25.csv`` (a long stem shortened, its tail hashed)."""
    from goodput_sim.experiments.sweep import bounded_name

    return bounded_name(f"{file.stem}-{category}{share * 100:g}", suffix=".csv")


def categorized_mixes(
    files: Sequence[Path],
    category: str,
    shares: Sequence[float],
    seed: int,
    profiles: str | Path | None = None,
    cluster: ClusterSpec | str | None = None,
) -> dict[str, tuple[pd.DataFrame, float]]:
    """Each workload at each share of ``category``, in memory, by file name, with its share;
    every workload checked first (against the profiles and, when given, the cluster), so that
    nothing is written for inputs a sweep would refuse. Names carry the share
    (``workload-1-rigid25.csv``) so that a sweep keys them apart."""
    from goodput_sim.api import as_cluster
    from goodput_sim.inputs.cluster import check_gpu_types
    from goodput_sim.profiles import load_profiles

    applications = load_profiles(str(profiles) if profiles is not None else None)
    spec = as_cluster(cluster) if cluster is not None else None
    stems: dict[str, Path] = {}
    out: dict[str, tuple[pd.DataFrame, float]] = {}
    for file in files:
        if stems.setdefault(file.stem, file) != file:
            raise InputError(
                "--workloads",
                f"{stems[file.stem]} and {file} share the name {file.stem!r}; their mixes would "
                "overwrite each other (rename one)",
            )
        jobs = load_workload(file, applications, spec.total_gpus if spec is not None else None)
        if spec is not None:
            check_gpu_types(spec, applications, jobs["application"])
        for share in shares:
            name = mix_name(file, category, share)
            if name in out:
                raise InputError(
                    "--shares", f"{out[name][1]:g} and {share:g} are the same share to the percent"
                )
            out[name] = (categorize(jobs, {category: share}, seed), share)
    return out


def categorized_workloads(
    files: Sequence[Path], folder: Path, category: str, shares: Sequence[float], seed: int
) -> dict[Path, float]:
    """Write each workload at each share of ``category`` into ``folder``; the files and their
    shares (see :func:`categorized_mixes`)."""
    out = {}
    for name, (jobs, share) in categorized_mixes(files, category, shares, seed).items():
        write_workload(jobs, folder / name)
        out[folder / name] = share
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
    ``out/report.csv``). Every input is checked before anything is written, and a refusal of
    the sweep removes the mixes this call wrote, so a refused command leaves nothing behind."""
    from goodput_sim.api import check_policies
    from goodput_sim.experiments.sweep import sweep

    check_policies(policies)
    mixes = categorized_mixes(files, category, shares, seed, profiles, cluster)
    runs = len(policies) * len(mixes)
    if runs > DEFAULT_MAX_RUNS:
        raise InputError(
            "--shares",
            f"{len(policies)} policies x {len(mixes)} mixes make {runs} runs, more than the "
            f"sweep budget of {DEFAULT_MAX_RUNS}; give fewer shares or workloads",
        )
    folder = out / "workloads"
    for path in (folder, out / "runs"):
        if path.exists() and not path.is_dir():
            raise InputError("--out", f"{path} is a file, expected a folder")
    made = [p for p in (folder, *folder.parents) if not p.exists()]  # what this call creates
    written = []
    try:
        for name, (jobs, _) in mixes.items():
            if not (folder / name).exists():
                written.append(folder / name)
            write_workload(jobs, folder / name)
        runs = sweep(
            policies,
            [folder / name for name in mixes],
            out / "runs",
            profiles=str(profiles) if profiles is not None else None,
            cluster=cluster,
            workers=workers,
            progress=progress,
        )
    except InputError:
        for path in written:
            path.unlink(missing_ok=True)
        for path in made:  # deepest first
            if path.is_dir() and not any(path.iterdir()):
                path.rmdir()
        raise
    share_of = {Path(name).stem: share for name, (_, share) in mixes.items()}
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
