"""The Sia artifact's other workload sets run end to end (issue 21): Helios (``saturn``),
``newtrace``, the arrival-rate sweep (``scale/rate_R``) and the cluster-size sweep
(``scale/scale_Kx`` on K times the default mix), under sia, goodput (type-blind), gavel and
tiresias, each on the first jobs of its workload-1 with the shipped per-type profiles."""

from __future__ import annotations

from pathlib import Path

import pytest

from goodput_sim import api
from goodput_sim.inputs.cluster import parse_cluster
from goodput_sim.inputs.workload import load_workload
from goodput_sim.profiles import load_profiles

ROOT = Path(__file__).resolve().parents[1]
WORKLOADS = ROOT.parent / "shared" / "reference" / "sia-sosp23" / "workloads"
DEFAULT_MIX = ROOT / "configs" / "cluster-sia-default.yaml"
DOUBLE_MIX = ROOT / "configs" / "cluster-sia-default-2x.yaml"
SETS = {
    "saturn": ("saturn/workload-1.csv", DEFAULT_MIX),
    "newtrace": ("newtrace/workload-1.csv", DEFAULT_MIX),
    "rate_50": ("scale/rate_50/workload-1.csv", DEFAULT_MIX),
    "scale_2x": ("scale/scale_2x/workload-1.csv", DOUBLE_MIX),
}
POLICIES = ("sia", "goodput", "gavel", "tiresias")
JOBS = 24


@pytest.fixture(scope="module")
def typed():
    return load_profiles(ROOT / "traces" / "profiles-sia")


@pytest.mark.parametrize("policy", POLICIES)
@pytest.mark.parametrize("name", sorted(SETS))
def test_every_set_runs_under_every_policy(name, policy, typed):
    path, cluster = SETS[name]
    if not (WORKLOADS / path).is_file():
        pytest.skip(f"Sia reference workloads not found at {WORKLOADS}")
    jobs = load_workload(WORKLOADS / path).iloc[:JOBS]
    result = api.run(policy, jobs, typed, cluster)
    assert result.stopped is None
    assert result.jobs["finished"].all()
    assert (result.jobs["jct"] > 0).all()
    assert result.fairness["rho"].notna().all()


def test_scale_sets_repeat_saturn_on_a_scaled_cluster():
    """scale_Kx is saturn with every row repeated K times; the 2x file's cluster has twice the
    nodes of every type."""
    if not (WORKLOADS / "scale" / "scale_2x").is_dir():
        pytest.skip(f"Sia reference workloads not found at {WORKLOADS}")
    saturn = load_workload(WORKLOADS / "saturn" / "workload-1.csv")
    doubled = load_workload(WORKLOADS / "scale" / "scale_2x" / "workload-1.csv")
    assert len(doubled) == 2 * len(saturn)
    assert sorted(doubled["time"]) == sorted([*saturn["time"], *saturn["time"]])
    single, double = parse_cluster(DEFAULT_MIX), parse_cluster(DOUBLE_MIX)
    assert double.total_gpus == 2 * single.total_gpus
    assert [g.nodes for g in double.groups] == [2 * g.nodes for g in single.groups]
