"""Regressions of the engine's hardening, one test (or relation) per defect class: job
categories against an application's own rule, runs that can never finish, the failure-free
twin, results that depended on row order, and node-time accounting."""

from __future__ import annotations

import dataclasses
import sys
from pathlib import Path

import pandas as pd
import pytest
import yaml

sys.path.insert(0, str(Path(__file__).parent))
from golden_matrix import PARAMS, inputs  # noqa: E402

from goodput_sim import api  # noqa: E402
from goodput_sim.autoscale import AutoscaleConfig  # noqa: E402
from goodput_sim.errors import InputError  # noqa: E402
from goodput_sim.inputs.cluster import ClusterSpec, NodeGroup  # noqa: E402
from goodput_sim.inputs.failures import Failure, FailureModel  # noqa: E402
from goodput_sim.models.restart import restart_factor  # noqa: E402
from goodput_sim.profiles import bundled_profiles_path, load_profiles  # noqa: E402
from goodput_sim.profiles.typed import TypedProfile  # noqa: E402
from goodput_sim.spec import SimConfig, has_failures  # noqa: E402

ALL_POLICIES = ("fifo", "tiresias", "optimus", "throughput", "goodput", "sia", "gavel")


def _ncf(category: str, gpus: int, batch: int) -> pd.DataFrame:
    return pd.DataFrame(
        {
            "name": ["n"],
            "time": [0.0],
            "application": ["ncf"],
            "num_replicas": [gpus],
            "batch_size": [batch],
            "category": [category],
        }
    )


@pytest.mark.parametrize("policy", ALL_POLICIES)
@pytest.mark.parametrize("category", ["rigid", "scale-gpus"])
def test_a_category_request_against_the_profile_rule_is_refused_alike(policy, category):
    """ncf's profile fixes 1 GPU and batch 32768: a rigid or scale-gpus job asking otherwise
    is refused in one line under every policy; one within the rule runs at what it asked."""
    for gpus, batch in ((1, 4096), (2, 32768)):
        with pytest.raises(InputError, match=rf"job 'n'.*{category} and asks for {gpus} GPUs"):
            api.run(policy, _ncf(category, gpus, batch), cluster="2x4")
    ran = api.run(policy, _ncf(category, 1, 32768), cluster="2x4").jobs
    assert ran.loc[0, "finished"] and ran.loc[0, "final_batch_size"] == 32768


SMALL = pd.read_csv(api.bundled_workload()).iloc[:12]


@pytest.mark.parametrize(
    ("policy", "settings"),
    [
        ("sia", {"reallocation_checkpoint": "none"}),
        ("fifo", {"mtbf": 0.01, "repair_hours": 0.001}),
        ("fifo", {"job_crash_hours": 0.05}),
    ],
)
def test_a_run_that_loses_its_work_as_fast_as_it_does_it_stops_with_a_reason(policy, settings):
    """Moves that save nothing, nodes failing every half minute, crashes every 3 minutes: jobs
    hold GPUs but never get further than they were, so the run stops after --stall-hours
    simulated hours of no net work (it used to run to the 20-million-event budget)."""
    result = api.run(policy, SMALL, cluster="4x4", stall_hours=2.0, **settings)
    assert result.stopped is not None and "no net work for 2 simulated hours" in result.stopped
    assert not result.jobs["finished"].all()


def test_a_move_that_saves_nothing_costs_the_work_it_throws_away():
    """The restart penalty counts the seconds a move would lose beside its delay."""
    assert restart_factor(3600.0, 1, 30.0) == restart_factor(3600.0, 1, 30.0, loss=0.0)
    assert restart_factor(3600.0, 1, 30.0, loss=600.0) == pytest.approx(3570.0 / 4230.0)


@pytest.fixture(scope="module")
def crashing_profiles(tmp_path_factory) -> Path:
    """The bundled profiles, each application crashing every half hour of running."""
    folder = tmp_path_factory.mktemp("crashing")
    for path in bundled_profiles_path().glob("*.yaml"):
        data = yaml.safe_load(path.read_text())
        data["crash_hours"] = 0.5
        (folder / path.name).write_text(yaml.safe_dump(data))
    return folder


def test_the_failure_free_twin_fails_nowhere(crashing_profiles):
    """Profiles' own crashes count as failures: compare reports the cost of failures, and the
    twin it sets the run against has no crash of any kind."""
    profiles = load_profiles(crashing_profiles)
    jobs = SMALL.iloc[:8]
    assert has_failures(SimConfig(), ClusterSpec.uniform(4, 4), profiles.values())
    assert not has_failures(SimConfig(crashes=False), ClusterSpec.uniform(4, 4), profiles.values())
    compared = api.compare(["fifo"], jobs, crashing_profiles, cluster="4x4").summary
    plain, cluster = api.failure_free(SimConfig(), ClusterSpec.uniform(4, 4))
    twin = api.run("fifo", jobs, profiles, cluster, config=plain)
    assert "crashes" not in twin.jobs and twin.jobs["lost_gpu_seconds"].sum() == 0
    assert compared.loc["fifo", "avg_jct_without_failures"] == pytest.approx(
        twin.jobs["jct"].mean()
    )
    crashed = api.run("fifo", jobs, profiles, "4x4")
    assert crashed.jobs["crashes"].sum() > 0
    assert compared.loc["fifo", "avg_jct"] > compared.loc["fifo", "avg_jct_without_failures"]


@pytest.mark.parametrize("policy", ["fifo", "goodput"])
def test_crashes_do_not_depend_on_row_order(policy):
    """A job crashes alike wherever its row stands: each job's stream is keyed by its name."""
    config = SimConfig(failures=FailureModel(job_crash_hours=1.0, seed=5))
    forward = api.run(policy, SMALL, config=config, cluster="4x4").jobs
    backward = api.run(policy, SMALL.iloc[::-1], config=config, cluster="4x4").jobs
    by_name = backward.set_index("name").loc[forward["name"]].reset_index()
    pd.testing.assert_frame_equal(by_name, forward)
    assert forward["crashes"].sum() > 0


@pytest.mark.parametrize("policy", ["fifo", "goodput", "sia", "gavel"])
def test_renaming_gpu_types_in_their_order_changes_nothing(policy):
    """Types named in their cluster order a < b < c or z > y > x: the same run, job for job
    (no tie is broken by a type's name)."""
    workload, profiles, cluster = inputs("sia-busy")
    order = cluster.type_order

    def renamed(names: tuple[str, ...]):
        new = dict(zip(order, names, strict=True))
        typed = {
            app: TypedProfile(
                p.name,
                {new[t]: (lambda t=t, p=p: p.for_type(t)) for t in order},
                p.restart_delay,
                p.slowdown,
            )
            for app, p in profiles.items()
        }
        groups = tuple(dataclasses.replace(g, gpu_type=new[g.gpu_type]) for g in cluster.groups)
        jobs = api.run(
            policy,
            workload,
            typed,
            dataclasses.replace(cluster, groups=groups),
            params=PARAMS.get(policy),
        ).jobs
        back = {name: old for old, name in new.items()}
        jobs["gpu_types"] = [
            ">".join(back[t] for t in s.split(">")) if s else s for s in jobs["gpu_types"]
        ]
        return jobs.drop(columns="gpu_hours_by_type")

    pd.testing.assert_frame_equal(renamed(("a", "b", "c")), renamed(("z", "y", "x")))


def test_a_reclaimed_node_is_not_provisioned_while_away():
    """Node-hours and GPU-hours count the same nodes: a spot node away after a reclaim is
    neither (4 GPUs per node: GPU-hours are 4 x node-hours)."""
    groups = (NodeGroup(2, 4, price=3.0), NodeGroup(2, 4, price=1.0, preemptible=True))
    trace = (Failure(600.0, 2, 7200.0, reclaim=True), Failure(900.0, 3, 7200.0, reclaim=True))
    config = SimConfig(failures=FailureModel(trace=trace))
    summary = api.run("fifo", SMALL, cluster=ClusterSpec(groups), config=config).cluster_summary
    assert summary["node_preemptions"] == 2
    assert summary["provisioned_gpu_hours"] == pytest.approx(4 * summary["node_hours"])


def test_nodes_the_autoscaler_removes_follow_the_reallocation_checkpoint_mode():
    """A job on a node the autoscaler removes is moved as by the policy: under ``none`` it
    loses the work since its last checkpoint, under ``free`` nothing."""
    scale = AutoscaleConfig(1, 8, "utility", (("window", 1),), startup_delay=0.0)
    lost = {}
    for mode in ("free", "none"):
        config = SimConfig(autoscale=scale, reallocation_checkpoint=mode)
        jobs = api.run("goodput", SMALL, cluster="8x4", config=config).jobs
        lost[mode] = jobs["lost_gpu_seconds"].sum()
    assert lost["free"] == 0 and lost["none"] > 0


def test_days_with_no_job_are_no_stall():
    """The no-net-work clock restarts when a job arrives at an empty cluster: a second job
    arriving two days after the first finished runs to the end."""
    jobs = SMALL.iloc[:2].assign(time=[0.0, 2 * 86400.0])
    result = api.run("goodput", jobs, cluster="2x4")
    assert result.stopped is None and result.jobs["finished"].all()


SPOT = ClusterSpec(
    (
        NodeGroup(2, 4, price=3.0, mtbf_hours=0.2, repair_hours=0.05),
        NodeGroup(2, 4, price=1.0, preemptible=True, preemption_hours=0.1, warning_seconds=60.0),
    )
)
HOSTILE_DYNAMICS = {  # each harsh enough that work can be lost faster than it is done
    "node failures": ("4x4", {"mtbf": 0.02, "repair_hours": 0.01}),
    "job crashes": ("4x4", {"job_crash_hours": 0.1, "checkpoint_seconds": 5.0}),
    "unsaved moves": ("4x4", {"reallocation_checkpoint": "none"}),
    "spot and group failures": (SPOT, {"checkpoint_seconds": 20.0}),
    "autoscaled and failing": ("4x4", {"min_nodes": 1, "max_nodes": 4, "mtbf": 0.05}),
}


def _finished_or_stopped_saying_why(result) -> None:
    if result.stopped is None:
        assert result.jobs["finished"].all()
    else:
        assert result.stopped.split(":")[0] in ("stalled", "work budget exceeded")


@pytest.mark.parametrize("policy", ["fifo", "goodput", "sia"])
@pytest.mark.parametrize("dynamics", list(HOSTILE_DYNAMICS))
def test_every_run_finishes_or_stops_with_a_reason_and_its_twin_fails_nowhere(policy, dynamics):
    """Under harsh dynamics a run either finishes every job or a guard stops it, saying why,
    within a short simulated stall (2 h here); its failure-free twin has no failure of any
    kind: no node failure or reclaim, no crash, and no lost work but what unsaved moves lose."""
    cluster, settings = HOSTILE_DYNAMICS[dynamics]
    jobs = SMALL.iloc[:6]
    result = api.run(policy, jobs, cluster=cluster, stall_hours=2.0, max_wall=120.0, **settings)
    _finished_or_stopped_saying_why(result)
    config = api.build_config({**settings, "stall_hours": 2.0}, 0, api.as_cluster(cluster).nodes)
    plain, calm = api.failure_free(config, api.as_cluster(cluster, config))
    twin = api.run(policy, jobs, cluster=calm, config=plain)
    _finished_or_stopped_saying_why(twin)  # unsaved moves alone may still stall
    assert twin.jobs["failures"].sum() == 0
    if settings.get("reallocation_checkpoint") != "none":  # unsaved moves are no failure
        assert twin.jobs["lost_gpu_seconds"].sum() == 0
    assert twin.jobs.get("crashes", pd.Series([0])).sum() == 0
    assert twin.jobs.get("preemptions", pd.Series([0])).sum() == 0
    assert twin.cluster_summary["node_failures"] == 0


@pytest.mark.parametrize("policy", ["tiresias", "goodput"])
def test_crashes_off_is_the_run_with_no_crash_rate(policy):
    """``--no-crashes`` with a crash rate set runs as if no rate were set, job for job."""
    off = SimConfig(crashes=False, failures=FailureModel(job_crash_hours=0.2, seed=2))
    quiet = api.run(policy, SMALL, cluster="4x4", config=off).jobs
    plain = api.run(policy, SMALL, cluster="4x4").jobs
    pd.testing.assert_frame_equal(quiet, plain)
