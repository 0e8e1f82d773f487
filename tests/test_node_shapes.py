"""Clusters read node by node: provisioned GPU-hours, packed placements, the elastic policies'
speedup tables, the greedy optimiser's whole-node counts and the nodes plot follow each node's
own GPUs, not the largest node's GPUs taken for every node."""

from __future__ import annotations

import io

import numpy as np
import pandas as pd
import pytest

from goodput_sim import api
from goodput_sim.inputs.cluster import ClusterSpec, NodeGroup, packed_placement, placement_of
from goodput_sim.policies import JobView, Snapshot
from goodput_sim.policies.elastic import Goodput
from goodput_sim.policies.fifo import Fifo
from goodput_sim.policies.greedy import whole_node_costs
from goodput_sim.policies.problem import AllocationProblem, speedup_table
from goodput_sim.policies.sia import Config, configurations, place
from goodput_sim.profiles import load_profiles
from goodput_sim.results.metrics import run_summary
from goodput_sim.results.plots import cluster_size_over_time
from goodput_sim.sim.engine import Simulation
from goodput_sim.sim.jobs import JobBelief
from goodput_sim.spec import SimConfig

HEADER = "name,time,application,num_replicas,batch_size\n"


@pytest.fixture(scope="module")
def profiles():
    return load_profiles()


def _waiting(profiles, nodes: int, app: str = "imagenet") -> JobView:
    """A job waiting for GPUs whose belief is the true throughput (as under ``--oracle``), so
    that its GPU cap is the cluster's."""
    limits = profiles[app].limits
    jobs = pd.read_csv(io.StringIO(HEADER + f"x,0,{app},1,{limits.init_batch_size}\n"))
    oracle = Simulation(jobs, profiles, Fifo(), ClusterSpec.uniform(2, 4), SimConfig(oracle=True))
    belief = JobBelief(limits, oracle.jobs[0].belief.params)
    belief.refresh()
    return JobView(
        name="j",
        application=app,
        arrival=0.0,
        age=0.0,
        attained_service=0.0,
        num_restarts=0,
        allocation=np.zeros(nodes, dtype=np.int64),
        requested_replicas=1,
        requested_batch=limits.init_batch_size,
        limits=limits,
        epoch=0,
        belief=belief.view(),
    )


def test_provisioned_gpu_hours_count_each_node_with_its_own_gpus(profiles):
    """A fixed 1x8 + 2x2 cluster (12 GPUs, 3 nodes): provisioned GPU-hours are 12/3 of the
    node-hours, not the 8 GPUs of the largest node per node-hour (which read 24/3)."""
    rows = ("a,0,cifar10,8,1024", "b,300,cifar10,2,256", "c,600,ncf,1,32768")
    jobs = pd.read_csv(io.StringIO(HEADER + "\n".join(rows) + "\n"))
    cluster = ClusterSpec((NodeGroup(1, 8), NodeGroup(2, 2)))
    result = api.run("fifo", jobs, profiles, cluster)
    summary = run_summary(result)
    assert summary["provisioned_gpu_hours"] == pytest.approx(summary["node_hours"] * 12 / 3)
    busy = result.jobs["gpu_seconds"].sum() / 3600.0
    assert summary["provisioned_gpu_utilization"] == pytest.approx(
        busy / (summary["node_hours"] * 4)
    )


def test_packed_layouts_fill_the_largest_nodes_up_first():
    mixed = ClusterSpec((NodeGroup(1, 8), NodeGroup(2, 4), NodeGroup(3, 2)))
    assert mixed.packed_layout(12) == (8, 4)  # the largest node's rule said (8, 4) too
    assert mixed.packed_layout(16) == (8, 4, 4)  # not (8, 8): there is one 8-GPU node
    assert mixed.packed_layout(17) == (8, 4, 4, 1)
    assert mixed.packed_layout(25) == (8, 4, 4, 2, 2, 2, 3)  # past the cluster: like the largest
    assert mixed.packed_layout(6) == (6,)  # memoised per cluster, not shared with its views:
    assert mixed.with_offline({0}).packed_layout(6) == (4, 2)
    assert (mixed.total_gpus, mixed.with_offline({0}).total_gpus) == (22, 14)
    uniform = ClusterSpec.uniform(4, 4)
    assert all(uniform.packed_layout(r) == packed_placement(r, 4) for r in range(1, 24))


def test_placements_list_the_used_nodes_gpus_in_node_order():
    placement = placement_of(np.array([0, 2, 0, 4, 1]))
    assert placement == (2, 4, 1) and all(type(g) is int for g in placement)
    assert placement_of([0, 0]) == () and placement_of([3.0, 0.0]) == (3,)


def test_speedup_tables_follow_the_nodes_up(profiles):
    """With the one 8-GPU node down, one node holds at most 4 of a job's GPUs; the largest
    group's 8 used to let the table price 5-8 GPUs on one node."""
    cluster = ClusterSpec((NodeGroup(1, 8), NodeGroup(2, 4))).with_offline({0})
    job = _waiting(profiles, 3)
    problem = Goodput().problem(Snapshot(0.0, cluster, (job,), 30.0))
    table = problem.speedup_tables[0]
    assert table.shape == (3, 9)  # the cap: the 8 GPUs up
    assert table[1, 1:5].all() and not table[1, 5:].any()
    assert table[2, 2:].all()
    alone = ClusterSpec((NodeGroup(1, 8), NodeGroup(2, 4))).with_offline({1, 2})
    table = Goodput().problem(Snapshot(0.0, alone, (job,), 30.0)).speedup_tables[0]
    assert table[1, 1:].all() and not table[2].any()  # one node up: no multi-node row


def test_whole_node_counts_are_the_sums_of_node_capacities():
    """On nodes of 8, 4 and 2 GPUs a distributed job may take 12 = 8 + 4 GPUs of whole nodes;
    the largest node's rule (multiples of 8) ruled it out."""
    tables = [speedup_table(lambda n, r: r, 14, 3, 8)]
    current = np.zeros((1, 3), dtype=np.int64)
    problem = AllocationProblem(["j"], np.array([14]), np.ones(1), current, [8, 4, 2], tables)
    whole = problem.whole_node_counts
    assert np.flatnonzero(whole).tolist() == [0, 2, 4, 6, 8, 10, 12, 14]
    costs = whole_node_costs(problem, np.ones((1, 15)))
    assert np.isfinite(costs[0, [1, 7, 8, 10, 12, 14]]).all()
    assert np.isinf(costs[0, [9, 11, 13]]).all()


def test_whole_node_counts_depend_on_the_node_sizes_alone():
    """Memoised per cluster: the same answer whatever the node order, and another cluster's
    answer in between does not leak into it."""
    tables = [speedup_table(lambda n, r: r, 14, 3, 8)]
    current = np.zeros((1, 3), dtype=np.int64)

    def counts(capacity):
        problem = AllocationProblem(["j"], np.array([14]), np.ones(1), current, capacity, tables)
        return problem.whole_node_counts.tolist()

    first = counts([8, 4, 2])
    other = counts([4, 4, 4])
    assert counts([2, 8, 4]) == counts([4, 2, 8]) == first
    assert other != first and counts([4, 4, 4]) == other and counts([8, 4, 2]) == first


def test_the_nodes_plot_divides_by_each_rounds_gpus_up():
    rounds = pd.DataFrame(
        {
            "time": [0.0, 60.0],
            "nodes_up": [2, 3],
            "nodes_starting": [0, 0],
            "nodes_down": [0, 0],
            "gpus_in_use": [6, 10],
            "gpus_up": [12, 14],
        }
    )
    figure = cluster_size_over_time({"p": rounds}, 8)
    used = figure.axes[1].lines[0].get_ydata()
    assert np.allclose(used, [0.5, 10 / 14])


def test_sia_configurations_and_placement_follow_unequal_nodes():
    """On one type with nodes of 8, 4 and 2 GPUs, n whole nodes hold the n largest nodes' GPUs
    (the largest-node scalar claimed 16 on two nodes, which no two nodes hold), and a two-node
    job is placed on the 8- and 4-GPU nodes."""
    cluster = ClusterSpec((NodeGroup(1, 2), NodeGroup(1, 8), NodeGroup(1, 4)))
    shapes = [(c.nodes, c.gpus) for c in configurations(cluster)]
    assert shapes == [(1, 1), (1, 2), (1, 4), (1, 8), (2, 12), (3, 14)]
    job = JobView(
        name="a",
        application="cifar10",
        arrival=0.0,
        age=0.0,
        attained_service=0.0,
        num_restarts=0,
        allocation=np.zeros(3, dtype=np.int64),
        requested_replicas=12,
        requested_batch=512,
        limits=load_profiles(None)["cifar10"].limits,
        epoch=0,
        belief=None,
    )
    rows = place([job], {"a": Config(cluster.gpu_type, 2, 12)}, cluster)
    assert rows["a"].tolist() == [0, 8, 4]


@pytest.mark.parametrize(
    "cluster",
    [
        ClusterSpec((NodeGroup(1, 2), NodeGroup(1, 8), NodeGroup(1, 4))),
        ClusterSpec.uniform(3, 8),
        ClusterSpec((NodeGroup(2, 8), NodeGroup(2, 4))).with_offline({0}),
    ],
)
def test_packed_node_counts_are_the_lengths_of_packed_layouts(cluster):
    replicas = np.arange(1, 3 * cluster.total_gpus)
    expected = [len(cluster.packed_layout(int(r))) for r in replicas]
    assert cluster.packed_node_counts(replicas).tolist() == expected
