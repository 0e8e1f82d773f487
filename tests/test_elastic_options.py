"""The elastic policies' options for the Sia artifact's type-blind Pollux (Sia SPEC 5): a GPU
cap per job (``max_gpus``), a flat restart delay in the restart penalty (``restart_seconds``)
and decisions on virtual nodes (``virtual_node_gpus``). Each default leaves runs as they were
(the golden matrix holds them); these tests check that each option does what it says."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from goodput_sim import api
from goodput_sim.inputs.cluster import ClusterSpec, NodeGroup, parse_cluster
from goodput_sim.policies import elastic
from goodput_sim.policies.recording import RecordingGoodput
from goodput_sim.policies.virtual_nodes import virtual_nodes
from goodput_sim.profiles import load_profiles
from goodput_sim.sim.engine import Simulation

ROOT = Path(__file__).resolve().parents[1]
MIX = ROOT / "configs" / "cluster-sia-default.yaml"


@pytest.fixture(scope="module")
def typed():
    """30 jobs of the heterogeneous workload on a smaller mix of the three types (48 GPUs), so
    that the policies' choices bind, with the shipped per-type profiles."""
    jobs = pd.read_csv(ROOT / "traces" / "workloads" / "heterogeneous.csv").iloc[:30]
    groups = (NodeGroup(4, 4, "aws"), NodeGroup(2, 8, "dgx-ext"), NodeGroup(2, 8, "rtx"))
    return jobs, load_profiles(ROOT / "traces" / "profiles-sia"), ClusterSpec(groups)


def _most_gpus(policy: str, inputs, params: dict) -> tuple[int, pd.DataFrame]:
    """The most GPUs any job held in any round, and the jobs table."""
    jobs, profiles, cluster = inputs
    held = [0]

    def watch(record) -> None:
        held[0] = max([held[0], *(job.replicas for job in record.running)])

    result = api.run(policy, jobs, profiles, cluster, params=params, observers=[watch])
    return held[0], result.jobs


# ------------------------------------------------------------------ virtual nodes, as data
def test_the_default_mix_is_sixteen_virtual_four_gpu_nodes():
    """Sia SPEC 5.1: aws 0-5, dgx-ext 6-9 (two per DGX), rtx 10-15 (two per rtx node)."""
    cluster = parse_cluster(MIX)
    split = virtual_nodes(cluster, 4)
    assert split.cluster.capacity.tolist() == [4] * 16
    assert split.cluster.gpu_types == ("aws",) * 6 + ("dgx-ext",) * 4 + ("rtx",) * 6
    assert split.owner.tolist() == [0, 1, 2, 3, 4, 5, 6, 6, 7, 7, 8, 8, 9, 9, 10, 10]
    assert split.cluster.total_gpus == cluster.total_gpus


def test_remainders_small_nodes_and_offline_nodes():
    cluster = ClusterSpec((NodeGroup(2, 6, "a"), NodeGroup(1, 2, "b")), offline=frozenset({1}))
    split = virtual_nodes(cluster, 4)
    # the 6-GPU nodes become 4 + 2 (the 4s first, then the remainders); the 2-GPU node stays
    assert split.owner.tolist() == [0, 1, 0, 1, 2]
    assert split.cluster.capacity.tolist() == [4, 0, 2, 0, 2]
    assert split.cluster.gpu_types == ("a", "a", "a", "a", "b")


def test_rows_map_both_ways_and_a_kept_row_keeps_its_virtual_row():
    cluster = parse_cluster(MIX)
    split = virtual_nodes(cluster, 4)
    a = np.zeros(cluster.nodes, dtype=np.int64)
    a[[6, 7]] = [6, 8]  # 6 GPUs on the first DGX, all 8 of the second
    b = np.zeros(cluster.nodes, dtype=np.int64)
    b[6] = 2
    rows = split.to_virtual([("a", a), ("b", b)], {})
    assert rows["a"][6:10].tolist() == [4, 2, 4, 4]
    assert rows["b"][6:10].tolist() == [0, 2, 0, 0]
    assert np.array_equal(split.to_real(np.array([rows["a"], rows["b"]])), np.array([a, b]))
    # a previous virtual row that still adds up is kept, even where a fresh fill would differ
    kept = np.zeros(16, dtype=np.int64)
    kept[[6, 7]] = [2, 4]
    again = split.to_virtual([("a", a), ("b", b)], {"b": kept, "a": rows["a"]})
    assert again["a"][6:10].tolist() == [4, 2, 4, 4]  # b's old row no longer adds up: refilled
    assert again["b"][6:10].tolist() == [0, 2, 0, 0]
    only_b = split.to_virtual([("b", b)], {"b": np.where(np.arange(16) == 7, 2, 0)})
    assert only_b["b"][6:8].tolist() == [0, 2]


# ------------------------------------------------------------------ the options in runs
def test_max_gpus_caps_every_job_in_every_round(typed):
    uncapped, _ = _most_gpus("goodput", typed, {})
    assert uncapped > 4  # the cap binds on these inputs
    capped, jobs = _most_gpus("goodput", typed, {"max_gpus": 4})
    assert capped <= 4
    assert jobs["finished"].all()


def test_restart_seconds_is_the_delay_the_penalty_charges(typed, monkeypatch):
    """Default: each job's own delay (the typed profiles' per-application ones); with
    ``restart_seconds``, that flat delay for every job."""
    seen: list[float] = []
    real = elastic.restart_factor

    def spy(age, restarts, delay, grace=False, loss=0.0):
        seen.append(delay)
        return real(age, restarts, delay, grace, loss)

    monkeypatch.setattr(elastic, "restart_factor", spy)
    _, profiles, cluster = typed
    every = pd.read_csv(ROOT / "traces" / "workloads" / "heterogeneous.csv")
    small = every.groupby("application", sort=False).head(2).reset_index(drop=True)
    api.run("goodput", small, profiles, cluster)
    own = set(seen)
    assert len(own) > 1 and own != {30.0}
    seen.clear()
    api.run("goodput", small, profiles, cluster, params={"restart_seconds": 30})
    assert seen and set(seen) == {30.0}


def test_virtual_nodes_pose_the_problem_on_four_gpu_nodes_and_run_on_the_real_ones(typed):
    jobs, profiles, cluster = typed
    policy = RecordingGoodput(virtual_node_gpus=4)
    types = np.array(cluster.gpu_types)
    one_type = []

    def watch(record) -> None:
        for job in record.running:
            one_type.append(len(set(types[np.array(job.allocation) > 0])) == 1)

    result = Simulation(jobs, profiles, policy, cluster, observers=[watch]).run()
    assert result.jobs["finished"].all()
    assert all(one_type) and one_type
    capacities = {tuple(problem.capacity.tolist()) for problem, _ in policy.problems}
    assert capacities == {(4,) * 12}


def test_virtual_nodes_as_large_as_the_real_ones_change_nothing(typed):
    """Cut into pieces no smaller than the largest node, the view is the cluster itself."""
    jobs, profiles, cluster = typed
    plain = api.run("goodput", jobs, profiles, cluster)
    whole = api.run("goodput", jobs, profiles, cluster, params={"virtual_node_gpus": 8})
    pd.testing.assert_frame_equal(plain.jobs, whole.jobs)
    cut = api.run("goodput", jobs, profiles, cluster, params={"virtual_node_gpus": 4})
    assert not plain.jobs["jct"].equals(cut.jobs["jct"])
