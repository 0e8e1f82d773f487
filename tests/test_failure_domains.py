"""Failures as operators see them: failure domains (racks, power domains) take down exactly
their nodes, node groups carry their own failure and repair rates, and preemptible (spot) groups
are reclaimed with a warning in which a job may save a checkpoint; spot and on-demand node-hours
and cost are reported apart."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from goodput_sim import api
from goodput_sim.errors import InputError
from goodput_sim.inputs.cluster import ClusterSpec, parse_cluster
from goodput_sim.inputs.failures import Failure, FailureModel, read_failure_trace
from goodput_sim.spec import SimConfig

HEADER = "name,time,application,num_replicas,batch_size\n"
ONE_GPU = pd.read_csv(pd.io.common.StringIO(HEADER + "cifar10-0,0,cifar10,1,128\n"))


def _cluster(tmp_path: Path, text: str) -> ClusterSpec:
    path = tmp_path / "cluster.yaml"
    path.write_text(text)
    return parse_cluster(path)


RACKS = """
cluster:
  groups:
    - {nodes: 2, gpus_per_node: 4, domain: rack-a}
    - {nodes: 3, gpus_per_node: 4, domain: rack-b}
    - {nodes: 1, gpus_per_node: 4}
  domains:
    rack-a: {mtbf_hours: 50, repair_hours: 2}
    rack-b: {mtbf_hours: 80}
"""


# ---------------------------------------------------------------------------- the YAML
def test_domains_and_group_rates_are_read_and_described(tmp_path):
    cluster = _cluster(tmp_path, RACKS)
    assert cluster.domain_nodes("rack-a") == (0, 1)
    assert cluster.domain_nodes("rack-b") == (2, 3, 4)
    assert [d.name for d in cluster.domains] == ["rack-a", "rack-b"]
    assert cluster.domains[1].repair_hours == 1.0
    described = cluster.describe()
    assert described["groups"][0] == {
        "nodes": 2,
        "gpus_per_node": 4,
        "gpu_type": "T4",
        "domain": "rack-a",
    }
    assert described["domains"] == {
        "rack-a": {"mtbf_hours": 50.0, "repair_hours": 2.0},
        "rack-b": {"mtbf_hours": 80.0, "repair_hours": 1.0},
    }
    # A cluster without the new fields describes itself as before (manifests unchanged).
    assert "domains" not in ClusterSpec.uniform(2, 4).describe()
    assert ClusterSpec.uniform(2, 4).describe()["groups"] == [
        {"nodes": 2, "gpus_per_node": 4, "gpu_type": "T4"}
    ]


@pytest.mark.parametrize(
    "text, message",
    [
        ("groups: [{nodes: 2, gpus_per_node: 4, domain: rack-z}]", "domain 'rack-z'"),
        (
            "groups: [{nodes: 2, gpus_per_node: 4}]\ndomains: {rack-a: {mtbf_hours: 5}}",
            "no group",
        ),
        (
            "groups: [{nodes: 2, gpus_per_node: 4, domain: r}]\ndomains: {r: {mtbf: 5}}",
            "unknown field",
        ),
        (
            "groups: [{nodes: 2, gpus_per_node: 4, domain: r}]\ndomains: {r: {mtbf_hours: -5}}",
            "positive",
        ),
        ("groups: [{nodes: 2, gpus_per_node: 4, mtbf_hours: 0}]", "positive"),
        ("groups: [{nodes: 2, gpus_per_node: 4, preemptible: yes-please}]", "true or false"),
        ("groups: [{nodes: 2, gpus_per_node: 4, preemption_hours: 5}]", "preemptible"),
        ("groups: [{nodes: 2, gpus_per_node: 4, price: -1}]", "price"),
        (
            "groups: [{nodes: 2, gpus_per_node: 4, preemptible: true, warning_seconds: -3}]",
            "warning_seconds",
        ),
        ("groups: [{nodes: 2, gpus_per_node: 4, rack: a}]", "unknown field"),
        ("groups: [{nodes: 2, gpus_per_node: 4, min_nodes: 3}]", "exceeds"),
        ("groups: [{nodes: 2, gpus_per_node: 4, max_nodes: 1.5}]", "whole number"),
        ("groups: [{nodes: 2, gpus_per_node: 4, min_nodes: -1}]", "whole number"),
        ("groups: [{nodes: 2, gpus_per_node: 4}]\ndomains: [a, b]", "mapping"),
    ],
)
def test_bad_domains_and_group_rates_get_one_line(tmp_path, text, message):
    with pytest.raises(InputError, match=message) as caught:
        _cluster(tmp_path, text)
    assert "\n" not in str(caught.value) and "cluster.yaml" in str(caught.value)


# ----------------------------------------------------------------------------- domains
def test_a_rack_failure_takes_down_exactly_its_nodes(tmp_path, profiles, slice40):
    """A failure trace naming rack-b at 3,000 s for an hour: exactly nodes 2-4 are offline
    from then until the repair, no other node ever is, and only jobs with GPUs there fail."""
    cluster = _cluster(
        tmp_path,
        RACKS.replace("{mtbf_hours: 50, repair_hours: 2}", "{}").replace("{mtbf_hours: 80}", "{}"),
    )
    trace = tmp_path / "failures.csv"
    trace.write_text("time,node,duration\n3000,rack-b,3600\n")
    failures = FailureModel(trace=read_failure_trace(trace, cluster.nodes, cluster))
    seen: dict[float, frozenset[int]] = {}
    jobs_on: dict[float, dict[str, tuple[int, ...]]] = {}

    def observe(record):
        seen[record.time] = record.offline_nodes
        jobs_on[record.time] = {
            job.name: tuple(np.flatnonzero(job.allocation)) for job in record.running
        }

    small = slice40[slice40["num_replicas"] <= 8]
    result = api.run(
        "goodput",
        small,
        profiles,
        cluster,
        config=SimConfig(failures=failures),
        observers=[observe],
    )
    for time, offline in seen.items():
        expected = {2, 3, 4} if 3000 <= time < 6600 else set()
        assert offline == expected, time
    summary = result.cluster_summary
    assert summary["node_failures"] == 3
    assert summary["node_hours_failed"] == pytest.approx(3.0)
    before = jobs_on[max(t for t in seen if t < 3000)]
    finish = result.jobs.set_index("name")["finish"]
    hit = {n for n, nodes in before.items() if set(nodes) & {2, 3, 4} and finish[n] > 3000}
    failed = set(result.jobs.loc[result.jobs["failures"] > 0, "name"])
    assert hit and failed == hit


def test_a_domain_fails_all_its_nodes_together(tmp_path, profiles, slice40):
    """Drawn domain failures: every failure of a rack's node is one of its rack's failures,
    at the same instant for all of its nodes (nodes have no MTBF of their own here)."""
    cluster = _cluster(
        tmp_path, RACKS.replace("mtbf_hours: 50", "mtbf_hours: 2").replace("80", "3")
    )
    log: list[tuple[float, int]] = []

    def observe(record):
        log.append((record.time, len(record.offline_nodes)))

    result = api.run(
        "tiresias",
        slice40,
        profiles,
        cluster,
        config=SimConfig(failures=FailureModel(seed=5)),
        observers=[observe],
    )
    assert result.jobs["finished"].all()
    counts = {n for _, n in log}
    assert counts <= {0, 2, 3, 5}  # rack-a (2 nodes), rack-b (3), or both, never a part
    assert 2 in counts and 3 in counts
    # Each domain failure counts one failure per node of the domain.
    assert result.cluster_summary["node_failures"] >= 5


def test_group_rates_equal_the_run_rates_when_every_group_has_them(tmp_path, profiles, slice40):
    """Metamorphic: a cluster whose every group declares MTBF 4 h and repair 0.5 h runs byte
    for byte as the same cluster with ``--mtbf 4 --repair-hours 0.5`` (same per-node streams)."""
    plain = ClusterSpec.uniform(16, 4)
    own = _cluster(
        tmp_path,
        "groups:\n"
        "  - {nodes: 10, gpus_per_node: 4, mtbf_hours: 4, repair_hours: 0.5}\n"
        "  - {nodes: 6, gpus_per_node: 4, mtbf_hours: 4, repair_hours: 0.5}\n",
    )
    run_rates = SimConfig(failures=FailureModel(mtbf_hours=4.0, repair_hours=0.5, seed=2))
    a = api.run("goodput", slice40, profiles, plain, seed=2, config=run_rates)
    b = api.run("goodput", slice40, profiles, own, seed=2)
    assert a.jobs["failures"].sum() > 0
    assert a.jobs.equals(b.jobs) and a.rounds.equals(b.rounds)


def test_a_group_rate_overrides_the_run_rate_only_on_its_nodes(tmp_path, profiles, slice40):
    """Nodes of a group with a very long MTBF never fail; the others fail as the run says."""
    cluster = _cluster(
        tmp_path,
        "groups:\n"
        "  - {nodes: 8, gpus_per_node: 4, mtbf_hours: 80000}\n"
        "  - {nodes: 8, gpus_per_node: 4}\n",
    )
    offline: set[int] = set()
    config = SimConfig(failures=FailureModel(mtbf_hours=2.0, seed=1))
    result = api.run(
        "goodput",
        slice40,
        profiles,
        cluster,
        seed=1,
        config=config,
        observers=[lambda r: offline.update(r.offline_nodes)],
    )
    assert result.cluster_summary["node_failures"] > 0
    assert offline and min(offline) >= 8


def test_cluster_rates_follow_the_run_seed(tmp_path, profiles, slice40):
    cluster = _cluster(tmp_path, "groups: [{nodes: 16, gpus_per_node: 4, mtbf_hours: 3}]")
    runs = [api.run("fifo", slice40, profiles, cluster, seed=s).jobs for s in (0, 1, 0)]
    assert runs[0]["failures"].sum() > 0
    assert runs[0].equals(runs[2]) and not runs[0].equals(runs[1])


# -------------------------------------------------------------------------- preemption
SPOT = """
groups:
  - {{nodes: 1, gpus_per_node: 4, price: 3.0}}
  - {{nodes: 1, gpus_per_node: 4, preemptible: true, price: 1.0, preemption_hours: {hours},
     warning_seconds: {warning}, preempted_hours: 0.5}}
"""
TWO_SPOT_JOBS = pd.read_csv(
    pd.io.common.StringIO(HEADER + "cifar10-0,0,cifar10,4,512\ncifar10-1,0,cifar10,4,512\n")
)


def _spot_seed(cluster: ClusterSpec, start: int = 0) -> int:
    """The first seed from ``start`` whose first reclaim of the spot node comes while both
    jobs train (300-1,000 s; each trains about 1,200 s from time 0)."""
    for seed in range(start, start + 200):
        at, _ = next(FailureModel(seed=seed).reclaims(1, cluster.groups[1]))
        if 300 < at < 1000:
            return seed
    raise AssertionError("no seed reclaims the spot node mid-training")


def _spot(tmp_path, profiles, warning: float, save: float, start: int = 0):
    cluster = _cluster(tmp_path, SPOT.format(hours=1.0, warning=warning))
    config = SimConfig(checkpoint_seconds=save)
    seed = _spot_seed(cluster, start)
    return api.run("fifo", TWO_SPOT_JOBS, profiles, cluster, seed=seed, config=config)


def test_a_preemption_with_a_warning_longer_than_the_save_loses_no_work(tmp_path, profiles):
    result = _spot(tmp_path, profiles, warning=120.0, save=20.0)
    jobs = result.jobs
    assert jobs["preemptions"].sum() >= 1 and jobs["finished"].all()
    assert jobs["lost_gpu_seconds"].sum() == 0
    assert (jobs["failures"] == 0).all()
    # Each preemption's save is paid at the job's next start, beside its restore.
    hit = jobs[jobs["preemptions"] > 0].iloc[0]
    assert hit.restores == hit.preemptions


def test_a_preemption_with_a_warning_shorter_than_the_save_loses_work(tmp_path, profiles):
    """The save cannot finish before the node goes: the job falls back to its last finished
    checkpoint, exactly as a node failure would make it."""
    result = _spot(tmp_path, profiles, warning=10.0, save=20.0)
    jobs = result.jobs
    assert jobs["preemptions"].sum() >= 1
    assert jobs["lost_gpu_seconds"].sum() > 0
    assert jobs["finished"].all()


def test_spot_and_on_demand_node_hours_and_cost_are_reported_apart(tmp_path, profiles):
    result = _spot(tmp_path, profiles, warning=120.0, save=20.0)
    summary = result.cluster_summary
    hours = summary["node_hours"]
    assert summary["node_hours_spot"] + summary["node_hours_on_demand"] == pytest.approx(hours)
    # The spot node is away for half an hour after each preemption: not paid for then.
    assert summary["node_preemptions"] >= 1
    assert summary["cost"] == pytest.approx(
        3.0 * summary["node_hours_on_demand"] + 1.0 * summary["node_hours_spot"]
    )
    assert summary["node_hours_spot"] < summary["node_hours_on_demand"]


def test_preemptions_follow_their_seed(tmp_path, profiles):
    a = _spot(tmp_path, profiles, warning=120.0, save=20.0)
    b = _spot(tmp_path, profiles, warning=120.0, save=20.0)
    c = _spot(
        tmp_path,
        profiles,
        warning=120.0,
        save=20.0,
        start=_spot_seed(_cluster(tmp_path, SPOT.format(hours=1.0, warning=120.0))) + 1,
    )
    assert a.jobs.equals(b.jobs) and not a.jobs.equals(c.jobs)


def test_a_cluster_without_the_new_fields_runs_as_before(profiles, slice40):
    """No domains, no group rates, no spot: the same bytes as a plain cluster (the golden
    digests and matrix hold this for every policy)."""
    a = api.run("goodput", slice40, profiles, ClusterSpec.uniform(16, 4))
    b = api.run("goodput", slice40, profiles, "16x4")
    assert a.jobs.equals(b.jobs)
    assert "node_hours_spot" not in a.cluster_summary


def test_a_trace_may_name_a_domain_and_is_checked_against_the_cluster(tmp_path):
    cluster = _cluster(tmp_path, RACKS)
    trace = tmp_path / "failures.csv"
    trace.write_text("time,node,duration\n100,rack-a,60\n200,4,60\n")
    failures = read_failure_trace(trace, cluster.nodes, cluster)
    assert failures == (Failure(100.0, -1, 60.0, "rack-a"), Failure(200.0, 4, 60.0))
    trace.write_text("time,node,duration\n100,rack-q,60\n")
    with pytest.raises(InputError, match="rack-q"):
        read_failure_trace(trace, cluster.nodes, cluster)
    trace.write_text("time,node,duration\n100,rack-a,600\n200,rack-a,60\n")
    with pytest.raises(InputError, match="again before its repair"):
        read_failure_trace(trace, cluster.nodes, cluster)


def test_the_failure_free_twin_drops_the_clusters_own_rates(tmp_path, profiles, slice40):
    """``compare`` sets a failing run against the same cluster with no failure or reclaim rate
    of its own (prices and spot groups kept), not against itself."""
    from goodput_sim.results.metrics import run_summary

    cluster = _cluster(tmp_path, "groups: [{nodes: 16, gpus_per_node: 4, mtbf_hours: 2}]")
    plain = cluster.without_failures()
    assert not plain.declares_failures and plain.nodes == cluster.nodes
    summary = api.compare(["fifo"], slice40, None, cluster).summary.loc["fifo"]
    twin = run_summary(api.run("fifo", slice40, profiles, plain))
    assert summary["node_failures"] > 0
    assert summary["avg_jct_without_failures"] == twin["avg_jct"] != summary["avg_jct"]


# ------------------------------------------------------------------ metamorphic relations
def test_declarations_that_make_nothing_fail_change_nothing(tmp_path, profiles, slice40):
    """Domains without an MTBF, and a preemptible group that is never reclaimed, run byte
    for byte as the plain cluster (only the cost accounting differs)."""
    plain = api.run("goodput", slice40, profiles, "16x4")
    quiet = _cluster(
        tmp_path,
        "groups:\n"
        "  - {nodes: 8, gpus_per_node: 4, domain: rack-a}\n"
        "  - {nodes: 8, gpus_per_node: 4, preemptible: true, price: 1.0}\n"
        "domains: {rack-a: {}}\n",
    )
    assert not quiet.declares_failures
    run = api.run("goodput", slice40, profiles, quiet)
    assert run.jobs.drop(columns="preemptions").equals(plain.jobs)
    assert run.rounds.equals(plain.rounds)
    assert run.cluster_summary["node_hours_spot"] == pytest.approx(
        run.cluster_summary["node_hours_on_demand"]
    )


def test_a_charged_reallocation_of_a_free_save_is_a_free_one(profiles, slice40):
    free = api.run("goodput", slice40, profiles)
    charged = api.run(
        "goodput", slice40, profiles, config=SimConfig(reallocation_checkpoint="charged")
    )
    assert free.jobs.equals(charged.jobs) and free.rounds.equals(charged.rounds)


def test_a_trace_may_reclaim_a_spot_node_at_a_known_time(tmp_path, profiles):
    """A reclaim of spot node 1 at 600 s with 120 s of notice: both jobs train from time 0,
    the one on node 1 stops at 480 s having saved (20 s fit in the notice), loses nothing,
    and the node is gone until 600 + 1,800 s."""
    cluster = _cluster(
        tmp_path,
        "groups:\n"
        "  - {nodes: 1, gpus_per_node: 4, price: 3.0}\n"
        "  - {nodes: 1, gpus_per_node: 4, preemptible: true, price: 1.0, warning_seconds: 120}\n",
    )
    trace = tmp_path / "reclaims.csv"
    trace.write_text("time,node,duration,kind\n600,1,1800,reclaim\n")
    failures = FailureModel(trace=read_failure_trace(trace, cluster.nodes, cluster))
    offline: dict[float, frozenset[int]] = {}
    config = SimConfig(checkpoint_seconds=20.0, failures=failures)
    result = api.run(
        "fifo",
        TWO_SPOT_JOBS,
        profiles,
        cluster,
        config=config,
        observers=[lambda r: offline.__setitem__(r.time, r.offline_nodes)],
    )
    jobs = result.jobs
    assert jobs["preemptions"].sum() == 1 and jobs["lost_gpu_seconds"].sum() == 0
    assert result.cluster_summary["node_preemptions"] == 1
    assert result.cluster_summary["node_failures"] == 0
    for time, nodes in offline.items():
        assert (1 in nodes) == (480 <= time < 2400), time
    # A reclaim of an on-demand node is refused when the run starts.
    trace.write_text("time,node,duration,kind\n600,0,1800,reclaim\n")
    bad = FailureModel(trace=read_failure_trace(trace, cluster.nodes, cluster))
    with pytest.raises(InputError, match="not in a preemptible group"):
        api.run("fifo", TWO_SPOT_JOBS, profiles, cluster, config=SimConfig(failures=bad))
    trace.write_text("time,node,duration,kind\n600,1,1800,vanish\n")
    with pytest.raises(InputError, match="failure or reclaim"):
        read_failure_trace(trace, cluster.nodes, cluster)


def test_a_racks_and_spot_run_replays_from_its_manifest(tmp_path):
    """The manifest records every new group field and the domains; the replay is the same
    bytes (the cluster's draws follow the recorded seed)."""
    import json

    from click.testing import CliRunner

    from goodput_sim.cli import main

    out, again = tmp_path / "run", tmp_path / "again"
    cluster = Path(__file__).resolve().parents[1] / "configs" / "cluster-racks-spot.yaml"
    first = CliRunner().invoke(
        main,
        [
            "run",
            "--policy",
            "tiresias",
            "--cluster",
            str(cluster),
            "--checkpoint-seconds",
            "30",
            "--seed",
            "4",
            "--out",
            str(out),
            "--quiet",
            "--no-plot",
        ],
    )
    assert first.exit_code == 0, first.output
    manifest = json.loads((out / "manifest.json").read_text())
    assert manifest["cluster"]["domains"]["rack-a"] == {"mtbf_hours": 500.0, "repair_hours": 4.0}
    assert manifest["cluster"]["groups"][2]["preemptible"] is True
    replay = CliRunner().invoke(
        main, ["run", "--manifest", str(out / "manifest.json"), "--out", str(again), "--no-plot"]
    )
    assert replay.exit_code == 0, replay.output
    assert (again / "jobs.csv").read_bytes() == (out / "jobs.csv").read_bytes()
    assert (again / "rounds.csv").read_bytes() == (out / "rounds.csv").read_bytes()
