"""One function call per run: ``run`` a policy, or ``compare`` several on the same inputs.

Both return pandas DataFrames (inside a :class:`~goodput_sim.engine.SimResult` or
:class:`Comparison`) and are what the CLI calls.
"""

from __future__ import annotations

import hashlib
import json
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass
from pathlib import Path

import pandas as pd

from goodput_sim import __version__
from goodput_sim.cluster import ClusterSpec, parse_cluster
from goodput_sim.engine import SimConfig, SimResult, Simulation
from goodput_sim.errors import InputError
from goodput_sim.metrics import claim_check, summarize
from goodput_sim.policies import get_policy
from goodput_sim.profiles import bundled_profiles_path, load_profiles
from goodput_sim.workload import load_workload

DEFAULT_POLICIES = ("fifo", "tiresias", "optimus", "throughput", "goodput")


def bundled_workload() -> Path:
    """The default workload shipped in ``traces/workloads/``."""
    return Path(__file__).resolve().parents[1] / "traces" / "workloads" / "default.csv"


def _cluster(cluster: ClusterSpec | str | Path) -> ClusterSpec:
    return cluster if isinstance(cluster, ClusterSpec) else parse_cluster(cluster)


def _workload(
    workload: pd.DataFrame | str | Path, profiles: dict, cluster: ClusterSpec
) -> pd.DataFrame:
    if isinstance(workload, pd.DataFrame):
        # A job larger than the cluster can never be placed: without this check the gang
        # policies (fifo, tiresias) wait for it forever and the run never ends.
        too_big = workload[workload["num_replicas"] > cluster.total_gpus]
        if len(too_big):
            job = too_big.iloc[0]
            raise InputError(
                "workload",
                f"job {job['name']!r} asks for {int(job['num_replicas'])} GPUs, "
                f"more than the cluster's {cluster.total_gpus}",
            )
        return workload
    return load_workload(workload, applications=set(profiles), max_gpus=cluster.total_gpus)


def run(
    policy: str,
    workload: pd.DataFrame | str | Path | None = None,
    profiles: str | Path | dict | None = None,
    cluster: ClusterSpec | str | Path = "16x4",
    seed: int = 0,
    config: SimConfig | None = None,
) -> SimResult:
    """Replay ``workload`` (default: the bundled one) under ``policy``; jobs and rounds tables."""
    profile_map = profiles if isinstance(profiles, dict) else load_profiles(profiles)
    spec = _cluster(cluster)
    frame = _workload(workload if workload is not None else bundled_workload(), profile_map, spec)
    missing = sorted(set(frame["application"]) - set(profile_map))
    if missing:
        raise InputError("workload", f"no profile for application(s) {missing}")
    return Simulation(frame, profile_map, get_policy(policy, seed=seed), spec, config).run()


def _run_one(args: tuple) -> SimResult:
    policy, workload, profiles, cluster, seed, config = args
    return run(policy, workload, profiles, cluster, seed, config)


@dataclass
class Comparison:
    """Results of several policies on the same inputs."""

    results: dict[str, SimResult]
    summary: pd.DataFrame  # one row per policy
    claim: dict

    def as_json(self) -> dict:
        return {"policies": self.summary.to_dict(orient="index"), "claim": self.claim}


def compare(
    policies: list[str] | tuple[str, ...] = DEFAULT_POLICIES,
    workload: pd.DataFrame | str | Path | None = None,
    profiles: str | Path | None = None,
    cluster: ClusterSpec | str | Path = "16x4",
    seed: int = 0,
    config: SimConfig | None = None,
    workers: int = 1,
) -> Comparison:
    """Run each policy on the same inputs (in ``workers`` processes) and summarise."""
    for name in policies:  # fail fast on a typo, before any simulation runs
        get_policy(name)
    spec = _cluster(cluster)
    profile_map = load_profiles(profiles)
    frame = _workload(workload if workload is not None else bundled_workload(), profile_map, spec)
    tasks = [(name, frame, profiles, spec, seed, config) for name in policies]
    if workers > 1 and len(tasks) > 1:
        with ProcessPoolExecutor(max_workers=workers) as pool:
            results = dict(zip(policies, pool.map(_run_one, tasks), strict=True))
    else:
        results = {name: run(name, frame, profile_map, spec, seed, config) for name in policies}
    summaries = {name: summarize(r.jobs, spec.total_gpus) for name, r in results.items()}
    for name, r in results.items():
        summaries[name]["wall_seconds"] = r.wall_seconds
    summary = pd.DataFrame.from_dict(summaries, orient="index")
    return Comparison(results, summary, claim_check(summaries))


def file_hash(path: str | Path) -> str:
    """sha256 of a file, or of every file below a folder (sorted), for the manifest."""
    path = Path(path)
    digest = hashlib.sha256()
    files = sorted(p for p in path.rglob("*") if p.is_file()) if path.is_dir() else [path]
    for file in files:
        digest.update(str(file.relative_to(path) if path.is_dir() else file.name).encode())
        digest.update(file.read_bytes())
    return digest.hexdigest()


def write_run(
    result: SimResult, out: Path, inputs: dict[str, str | Path | None], seed: int
) -> Path:
    """A results folder: jobs.csv, rounds.csv, manifest.json and jct_cdf.png."""
    from goodput_sim.plots import jct_cdf

    out.mkdir(parents=True, exist_ok=True)
    result.jobs.to_csv(out / "jobs.csv", index=False, float_format="%.6f")
    result.rounds.to_csv(out / "rounds.csv", index=False)
    hashes = {k: file_hash(v) for k, v in inputs.items() if v is not None and Path(v).exists()}
    manifest = {
        "goodput_sim_version": __version__,
        "policy": result.policy,
        "config": result.config,
        "cluster": result.cluster,
        "seed": seed,
        "inputs": {k: str(v) if v is not None else None for k, v in inputs.items()},
        "input_sha256": hashes,
        "wall_seconds": result.wall_seconds,
        "summary": summarize(
            result.jobs, result.cluster["nodes"] * result.cluster["gpus_per_node"]
        ),
    }
    (out / "manifest.json").write_text(json.dumps(manifest, indent=2, sort_keys=True) + "\n")
    jct_cdf({result.policy["name"]: result.jobs}, out / "jct_cdf.png")
    return out


def default_profiles_path(profiles: str | Path | None) -> Path:
    return Path(profiles) if profiles is not None else bundled_profiles_path()
