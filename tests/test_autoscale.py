"""Autoscaling that behaves: the autoscaler never preempts a fixed-size job to shrink (it once
resized a one-job cluster 28 times), shrinks an idle cluster to ``--min-nodes``, smooths the
utility rule over a window and holds the queue rule through a cool-down, and scales clusters of
several node shapes, counting each node's own GPUs."""

from __future__ import annotations

import io
from types import SimpleNamespace

import numpy as np
import pandas as pd
import pytest

from goodput_sim import api
from goodput_sim.autoscale import (
    AutoscaleConfig,
    QueueAutoscaler,
    ScaleView,
    SearchAutoscaler,
    UtilityAutoscaler,
    pool_cluster,
    pool_groups,
)
from goodput_sim.inputs.cluster import ClusterSpec, NodeGroup, parse_cluster
from goodput_sim.policies import JobView
from goodput_sim.policies.fifo import Fifo
from goodput_sim.profiles import load_profiles
from goodput_sim.sim.engine import Simulation
from goodput_sim.sim.jobs import JobBelief
from goodput_sim.spec import SimConfig

HEADER = "name,time,application,num_replicas,batch_size\n"
BIG = "cifar10,16,2048"  # one 16-GPU job: 4 nodes of 4 GPUs
GAP = 30000.0  # seconds between the two jobs of the gap workload (8.3 hours)
STARTUP = 120.0
RULES = ("utility", "queue")


@pytest.fixture(scope="module")
def profiles():
    return load_profiles()


def _jobs(*rows: str) -> pd.DataFrame:
    return pd.read_csv(io.StringIO(HEADER + "".join(row + "\n" for row in rows)))


def _scaled(rule: str, low: int = 1, high: int = 8, **params) -> SimConfig:
    scale = AutoscaleConfig(low, high, rule, tuple(sorted(params.items())), STARTUP)
    return SimConfig(autoscale=scale)


def _sizes(result, start: int) -> list[int]:
    """Provisioned nodes at the start and at every recorded round."""
    rounds = result.rounds
    provisioned = rounds["nodes_up"] + rounds["nodes_starting"] + rounds["nodes_down"]
    return [start, *provisioned.astype(int).tolist()]


def _changes(sizes: list[int]) -> int:
    return sum(a != b for a, b in zip(sizes, sizes[1:], strict=False))


# ------------------------------------------------------------------------- fixed jobs, idle
@pytest.mark.parametrize("rule", RULES)
def test_one_fixed_job_is_never_preempted_to_shrink_the_cluster(rule, profiles):
    """Tiresias holds a 16-GPU job on exactly 16 GPUs. The utility rule once judged that job's
    utility too low, shrank the cluster under it (a preemption), the strand guard grew it back,
    and so on every 4 rounds: 28 size changes, 14 restarts and a JCT of 3680 s. Now the cluster
    grows once to the request and the job finishes as on a fixed 4x4 cluster, plus the nodes'
    start-up delay."""
    jobs = _jobs(f"big,0,{BIG}")
    alone = api.run("tiresias", jobs, profiles, ClusterSpec.uniform(4, 4)).jobs.iloc[0]
    result = api.run("tiresias", jobs, profiles, ClusterSpec.uniform(8, 4), config=_scaled(rule))
    job = result.jobs.iloc[0]
    assert job.restarts == 0
    assert job.jct == pytest.approx(alone.jct + STARTUP, abs=1e-6)
    assert _changes(_sizes(result, 1)) <= 2


@pytest.mark.parametrize("rule", RULES)
@pytest.mark.parametrize("policy", ["tiresias", "goodput"])
def test_an_idle_cluster_shrinks_to_min_nodes_between_jobs(rule, policy, profiles):
    """Two jobs 8.3 hours apart. With no active job the rules used not to run, so the cluster
    stayed at the first job's size through the gap (36 node-hours, 33 of them idle). Now the
    idle rounds go on until the cluster is at --min-nodes (1): the gap costs one node, plus the
    rule's smoothing (a 15-round window, or a 5-round cool-down) at the old size, and the second
    job is served as the first."""
    cluster = ClusterSpec.uniform(8, 4)
    one = api.run(policy, _jobs(f"a,0,{BIG}"), profiles, cluster, config=_scaled(rule))
    two = api.run(
        policy, _jobs(f"a,0,{BIG}", f"b,{GAP:.0f},{BIG}"), profiles, cluster, config=_scaled(rule)
    )
    assert two.jobs["finished"].all()
    assert two.jobs["jct"].iloc[1] == pytest.approx(two.jobs["jct"].iloc[0], abs=1e-6)
    smoothing = 8 * 16 * 60.0  # at most 8 nodes for 16 rounds before the shrink
    bound = 2 * one.cluster_summary["node_hours"] + (GAP + smoothing) / 3600.0
    assert two.cluster_summary["node_hours"] <= bound
    assert two.cluster_summary["node_hours"] >= GAP / 3600.0 - 1  # one node through the gap


# ---------------------------------------------------------------- smoothing and cool-down
def _view(profiles, name: str, replicas: int, nodes: int, params=None, app: str = "cifar10"):
    """A job as a rule sees it: ``replicas`` GPUs on node 0 (0: waiting), profiled if
    ``params`` are given."""
    limits = profiles[app].limits
    belief = JobBelief(limits, params)
    belief.refresh()
    allocation = np.zeros(nodes, dtype=np.int64)
    allocation[0] = replicas
    return JobView(
        name=name,
        application=app,
        arrival=0.0,
        age=0.0,
        attained_service=0.0,
        num_restarts=0,
        allocation=allocation,
        requested_replicas=max(replicas, 1),
        requested_batch=limits.init_batch_size,
        limits=limits,
        epoch=0,
        belief=belief.view(),
    )


def test_the_utility_rule_acts_on_a_full_window_and_clears_it_after_a_resize(profiles):
    rule = UtilityAutoscaler(window=4)
    idle = ScaleView(6, (4,) * 8, ())  # utility 0: below low
    assert [rule.target(idle) for _ in range(3)] == [6, 6, 6]  # the window is filling
    assert rule.target(idle) == 1  # full window, average 0: shrink to the fewest nodes
    assert rule.target(idle) == 6  # not applied (the engine kept 6): the window refills
    # Resized to 2 nodes; 12 new jobs wait, each gaining 1 from its first GPU: utility 1.
    waiting = tuple(_view(profiles, f"j{k}", 0, 8) for k in range(12))
    busy = ScaleView(2, (4,) * 8, waiting)
    assert [rule.target(busy) for _ in range(3)] == [2, 2, 2]
    assert rule.target(busy) == 3  # above high: grow to the 12 GPUs worth their cost


def test_the_queue_rule_shrinks_only_after_its_cooldown(profiles):
    rule = QueueAutoscaler(cooldown=3)
    running = ScaleView(6, (4,) * 8, (_view(profiles, "j", 4, 8),))  # needs one node
    assert [rule.target(running) for _ in range(3)] == [6, 6, 6]
    assert rule.target(running) == 1
    waiting = ScaleView(1, (4,) * 8, (_view(profiles, "j", 4, 8), _view(profiles, "k", 0, 8)))
    assert rule.target(waiting) == 2  # grows at once while a job waits
    now_calm = ScaleView(2, (4,) * 8, (_view(profiles, "j", 4, 8),))
    assert [rule.target(now_calm) for _ in range(4)] == [2, 2, 2, 1]


@pytest.mark.parametrize(("rule", "param"), [("utility", "window"), ("queue", "cooldown")])
def test_smoothing_parameters_are_declared_and_checked(rule, param):
    with pytest.raises(Exception, match=param):
        AutoscaleConfig(1, 4, rule, ((param, 0 if rule == "utility" else -1),))
    assert AutoscaleConfig(1, 4, rule, ((param, 3),)).params == ((param, 3),)


def test_each_utility_rule_keys_its_goodput_cache_by_the_node_shapes(profiles):
    """The module-level cache keyed by (belief, cap, GPUs per node) is gone: each rule holds
    its own, and a pool of 4-GPU nodes gives a job other speedups than one of 8-GPU nodes."""
    jobs = _jobs("i,0,imagenet,1,256")
    sim = Simulation(jobs, profiles, Fifo(), ClusterSpec.uniform(2, 4), SimConfig(oracle=True))
    params = sim.jobs[0].belief.params
    job = _view(profiles, "i", 2, 4, params, "imagenet")
    rule = UtilityAutoscaler()
    small = rule._speedups(job, 8, ScaleView(2, (4, 4, 4, 4), (job,)))
    large = rule._speedups(job, 8, ScaleView(1, (8, 8), (job,)))
    assert small[4] == pytest.approx(large[4])  # one node either way
    assert not np.allclose(small[5:], large[5:])  # two nodes of 4 against one of 8
    assert UtilityAutoscaler()._best_goodputs is not rule._best_goodputs


# ---------------------------------------------------------------------- several node shapes
def test_the_pool_repeats_the_cluster_groups_in_order():
    a, b, c = NodeGroup(2, 8), NodeGroup(3, 4), NodeGroup(2, 2, "rtx")
    assert pool_groups((a, b, c), 4) == (a, NodeGroup(2, 4))
    assert pool_groups((a, b, c), 9) == (a, b, c, NodeGroup(2, 8))
    assert pool_groups((a, b, c), 10) == (a, b, c, a, NodeGroup(1, 4))
    assert pool_groups((NodeGroup(3, 4),), 16) == (NodeGroup(16, 4),)  # as ever for one shape
    scale = AutoscaleConfig(1, 16)
    assert pool_cluster(ClusterSpec.uniform(3, 4), scale) == ClusterSpec.uniform(16, 4)


def test_nodes_for_counts_each_node_with_its_own_gpus():
    view = ScaleView(2, (8, 2, 4, 4, 2), ())
    assert view.provisioned_gpus == 10 and view.max_gpus == 20
    gpus = (0, 1, 8, 9, 10, 11, 18, 19, 40)
    assert [view.nodes_for(g) for g in gpus] == [0, 1, 1, 2, 2, 3, 4, 5, 5]


@pytest.mark.parametrize("rule", RULES)
@pytest.mark.parametrize("policy", ["tiresias", "goodput"])
def test_autoscaling_a_cluster_of_several_node_shapes(rule, policy, profiles):
    """Refused before; now the pool is 2x8 + 2x4 + 2x2 + 2x8 nodes (--max-nodes 8 from a
    2x8 + 2x4 + 2x2 cluster), started in that order, and every round's GPUs up are recorded."""
    jobs = pd.read_csv(api.bundled_workload()).iloc[:20]
    groups = (NodeGroup(2, 8), NodeGroup(2, 4), NodeGroup(2, 2))
    result = api.run(policy, jobs, profiles, ClusterSpec(groups), config=_scaled(rule, 1, 8))
    assert result.jobs["finished"].all()
    assert [g["gpus_per_node"] for g in result.cluster["groups"]] == [8, 4, 2, 8]
    rounds = result.rounds
    sizes = _sizes(result, 1)
    assert min(sizes) >= 1 and max(sizes) <= 8 and len(set(sizes)) > 1
    assert (rounds["gpus_in_use"] <= rounds["gpus_up"]).all()
    capacity = np.array([8, 8, 4, 4, 2, 2, 8, 8])
    up = rounds["nodes_up"].to_numpy()
    # Nodes start in pool order and the first ones are never all removed: GPUs up lie between
    # those of the smallest and of the largest nodes that many.
    assert (rounds["gpus_up"] <= [np.sort(capacity)[::-1][:n].sum() for n in up]).all()
    assert (rounds["gpus_up"] >= [np.sort(capacity)[:n].sum() for n in up]).all()


# ------------------------------------------------------------- per-group bounds and prices
def _bounded_cluster(tmp_path) -> ClusterSpec:
    """Three groups of unlike shapes and prices, each with its own bounds."""
    path = tmp_path / "cluster.yaml"
    path.write_text(
        "groups:\n"
        "  - {nodes: 2, gpus_per_node: 4, price: 1.0, min_nodes: 1, max_nodes: 4}\n"
        "  - {nodes: 2, gpus_per_node: 8, price: 4.0, min_nodes: 0, max_nodes: 3}\n"
        "  - {nodes: 1, gpus_per_node: 2, price: 0.2, min_nodes: 1, max_nodes: 2}\n"
    )
    return parse_cluster(path)


@pytest.mark.parametrize("rule", RULES)
@pytest.mark.parametrize("policy", ["tiresias", "goodput"])
def test_heterogeneous_autoscaling_never_exceeds_any_groups_bounds(
    rule, policy, profiles, tmp_path
):
    """The pool is each group at its max_nodes (4 + 3 + 2 nodes); every round each group has
    between its min_nodes and max_nodes provisioned, the whole within --min-nodes/--max-nodes,
    and cost is each group's node-hours at its own price."""
    cluster = _bounded_cluster(tmp_path)
    jobs = pd.read_csv(api.bundled_workload()).iloc[:30]
    jobs = jobs[jobs["num_replicas"] <= 8]
    scale = AutoscaleConfig(2, 7, rule, (), startup_delay=0.0)
    counts: list[list[int]] = []
    spans = [(0, 4), (4, 7), (7, 9)]

    def observe(record):
        offline = record.offline_nodes  # no failures, no boot time: offline = not provisioned
        counts.append([sum(n not in offline for n in range(a, b)) for a, b in spans])

    result = api.run(
        policy, jobs, profiles, cluster, config=SimConfig(autoscale=scale), observers=[observe]
    )
    assert result.jobs["finished"].all()
    assert [g["nodes"] for g in result.cluster["groups"]] == [4, 3, 2]
    per_group = np.array(counts)
    assert (per_group >= [1, 0, 1]).all() and (per_group <= [4, 3, 2]).all()
    assert (per_group.sum(axis=1) >= 2).all() and (per_group.sum(axis=1) <= 7).all()
    assert len({tuple(c) for c in counts}) > 1  # it did scale
    summary = result.cluster_summary
    assert summary["node_hours_spot"] == 0
    assert summary["node_hours_on_demand"] == pytest.approx(summary["node_hours"])
    assert 0.2 * summary["node_hours"] < summary["cost"] < 4.0 * summary["node_hours"]


def test_the_cheapest_group_grows_first(tmp_path):
    """Nodes start cheapest per GPU first: the 2-GPU group (0.1 per GPU-hour), then the
    4-GPU one (0.25), then the 8-GPU one (0.5)."""
    from goodput_sim.sim.dynamics.autoscaling import Autoscaling
    from goodput_sim.sim.nodes import NodePool

    scale = AutoscaleConfig(2, 7, "queue")
    pool = pool_cluster(_bounded_cluster(tmp_path), scale)
    nodes = NodePool(pool, None, scale)
    world = SimpleNamespace(cluster=pool, config=SimConfig(autoscale=scale), pool=nodes)
    scaler = Autoscaling(world)
    assert sorted(set(range(9)) - nodes.off) == [0, 7]  # each group's floor: 2 nodes already
    assert scaler._start_order() == [8, 1, 2, 3, 4, 5, 6]
    # Cost is each group's node-hours at its own price: an hour of nodes 0 and 7, then half
    # an hour with node 8 (the cheapest) and node 4 (an 8-GPU one) started too.
    nodes.account(3600.0)
    nodes.off -= {8, 4}
    nodes.account(5400.0)
    summary = nodes.summary(5400.0)
    assert summary["node_hours"] == pytest.approx(2 * 1.0 + 4 * 0.5)
    assert summary["cost"] == pytest.approx(1.0 * 1.5 + 4.0 * 0.5 + 0.2 * 2.0)
    # Removal keeps every group at its floor: node 0 and node 7 are never offered.
    assert 0 not in scaler._removable((), set()) and 7 not in scaler._removable((), set())
    assert set(scaler._removable((), set())) == {8, 4}


def test_a_request_the_bounded_groups_never_provision_is_refused(profiles, tmp_path):
    """Within --max-nodes 7, cheapest first, the groups provision at most 4+2+2+4+4+4+8 = 28
    GPUs: a 32-GPU job under a policy that keeps its request would wait for ever."""
    from goodput_sim.errors import InputError

    jobs = _jobs("big,0,cifar10,32,4096")
    config = SimConfig(autoscale=AutoscaleConfig(2, 7, "queue", (), startup_delay=0.0))
    with pytest.raises(InputError, match="provision at most 28"):
        api.run("tiresias", jobs, profiles, _bounded_cluster(tmp_path), config=config)


@pytest.mark.parametrize("rule", RULES)
def test_bounds_that_bind_nothing_change_nothing(rule, profiles):
    """One group with min_nodes 0 and max_nodes its size autoscales byte for byte as the plain
    group (the same pool, the same first nodes, the same removals)."""
    jobs = pd.read_csv(api.bundled_workload()).iloc[:20]
    config = _scaled(rule, 2, 8)
    plain = api.run("goodput", jobs, profiles, ClusterSpec((NodeGroup(8, 4),)), config=config)
    bounded = ClusterSpec((NodeGroup(8, 4, min_nodes=0, max_nodes=8),))
    run = api.run("goodput", jobs, profiles, bounded, config=config)
    assert run.jobs.equals(plain.jobs) and run.rounds.equals(plain.rounds)


# ---------------------------------------------------------------- sizing by the policy itself
def test_the_search_rule_binary_searches_the_policys_own_allocation(profiles):
    """12 waiting jobs; the probe stands for a policy that gives each one GPU while GPUs last.
    Utility at n nodes of 4 GPUs is min(12, 4n) / 4n: 1 at 3 nodes, 0.75 at 4, 0.6 at 5, so
    the largest size at the 0.65 target is 4 (the greedy estimate stops at the 12 GPUs the
    jobs can use: 3 nodes). The search probes O(log n) sizes."""
    asked: list[int] = []

    def probe(nodes: int) -> list[int]:
        asked.append(nodes)
        return [1 if k < 4 * nodes else 0 for k in range(12)]

    waiting = tuple(_view(profiles, f"j{k}", 0, 8) for k in range(12))
    search = SearchAutoscaler(window=1)
    assert search.probed_utility(ScaleView(2, (4,) * 8, waiting, probe), 4) == 0.75
    asked.clear()
    assert search.target(ScaleView(2, (4,) * 8, waiting, probe)) == 4
    assert len(asked) <= 3 and set(asked) <= set(range(2, 9))
    assert UtilityAutoscaler(window=1).target(ScaleView(2, (4,) * 8, waiting)) == 3
    # An idle cluster (utility 0) shrinks to the fewest nodes whatever the probe says.
    assert search.target(ScaleView(6, (4,) * 8, (), lambda n: [])) == 1


def test_the_search_rule_runs_goodput_within_bounds_and_leaves_the_policy_as_it_was(profiles):
    jobs = pd.read_csv(api.bundled_workload()).iloc[:30]
    config = _scaled("search", 2, 8)
    run = api.run("goodput", jobs, profiles, ClusterSpec.uniform(4, 4), config=config)
    again = api.run("goodput", jobs, profiles, ClusterSpec.uniform(4, 4), config=config)
    assert run.jobs["finished"].all() and run.jobs.equals(again.jobs)
    sizes = _sizes(run, 2)
    assert min(sizes) >= 2 and max(sizes) <= 8 and len(set(sizes)) > 1


def test_the_search_rules_utility_stays_within_zero_and_one(profiles, monkeypatch):
    """Issue 48: the utility is the jobs' believed speedups per GPU, at most 1. A probe once
    counted GPUs a job kept on nodes outside the probed ones (the policy starts from current
    allocations), and the rule believed 1.14 on these inputs. Every probed and every averaged
    utility of two elastic policies' runs now lies in [0, 1]."""
    probed, averaged = [], []
    probe, target = SearchAutoscaler.probed_utility, SearchAutoscaler.target

    def probed_utility(self, view, nodes):
        probed.append(probe(self, view, nodes))
        return probed[-1]

    def recorded_target(self, view):
        wanted = target(self, view)
        averaged.extend(self._history)
        return wanted

    monkeypatch.setattr(SearchAutoscaler, "probed_utility", probed_utility)
    monkeypatch.setattr(SearchAutoscaler, "target", recorded_target)
    jobs = pd.read_csv(api.bundled_workload()).groupby("application", sort=False).head(2)
    for policy in ("goodput", "sia"):
        api.run(policy, jobs, profiles, ClusterSpec.uniform(8, 4), config=_scaled("search", 2))
    assert len(probed) > 100 and averaged
    assert min(probed) >= 0.0 and max(probed) <= 1.0
    assert min(averaged) >= 0.0 and max(averaged) <= 1.0


def test_a_probe_restores_the_policys_state(profiles):
    """Sia keeps last round's choices; a probe at another size must not leave its own."""
    from goodput_sim.policies import get_policy

    jobs = pd.read_csv(api.bundled_workload()).iloc[:10]
    sim = Simulation(
        jobs, profiles, get_policy("sia"), ClusterSpec.uniform(4, 4), _scaled("search")
    )
    sim.policy._previous = {"marker": object()}
    before = dict(vars(sim.policy))
    views = ()
    assert sim.dynamic("autoscaling")._prober(views)([0, 1]) == []
    assert vars(sim.policy) == before


def test_the_search_rule_refuses_a_policy_that_keeps_requests(profiles):
    from goodput_sim.errors import InputError

    jobs = pd.read_csv(api.bundled_workload()).iloc[:5]
    with pytest.raises(InputError, match="search re-runs the policy"):
        api.run("tiresias", jobs, profiles, ClusterSpec.uniform(4, 4), config=_scaled("search"))
