"""Clusters that change: node failures lose exactly the work since the last checkpoint, a
cluster that loses every node finishes all jobs once it returns, a run with no failure equals a
run without the options byte for byte, and the autoscaler stays within its bounds."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from click.testing import CliRunner

from goodput_sim import api
from goodput_sim.autoscale import AutoscaleConfig
from goodput_sim.cli import main
from goodput_sim.errors import InputError
from goodput_sim.inputs.cluster import ClusterSpec
from goodput_sim.inputs.failures import Failure, FailureModel, read_failure_trace
from goodput_sim.policies import get_policy
from goodput_sim.profiles.base import iteration_seconds
from goodput_sim.sim.engine import Simulation
from goodput_sim.spec import SimConfig

HEADER = "name,time,application,num_replicas,batch_size\n"


def _trace(tmp_path: Path, rows: list[tuple]) -> Path:
    path = tmp_path / "failures.csv"
    path.write_text("time,node,duration\n" + "".join(f"{t},{n},{d}\n" for t, n, d in rows))
    return path


def test_one_node_down_for_an_hour_loses_exactly_the_work_since_the_checkpoint(profiles, tmp_path):
    """One cifar10 job on one GPU at its reference batch (gain 1: progress is linear in time).
    Training starts after the 30 s restart delay, checkpoints every 600 s (at 630 s), and the
    node fails at 1000 s for an hour: 370 GPU-seconds are lost, and the job ends exactly
    (4620 - 1000) + 30 + 370 s later than without the failure (it restarts at the first round
    after the repair, 4620 s)."""
    jobs = pd.read_csv(pd.io.common.StringIO(HEADER + "cifar10-0,0,cifar10,1,128\n"))
    cluster = ClusterSpec.uniform(1, 4)
    plain = SimConfig(checkpoint_interval=600.0)
    failing = dataclasses.replace(plain, failures=FailureModel(trace=(Failure(1000.0, 0, 3600.0),)))
    base = api.run("fifo", jobs, profiles, cluster, config=plain).jobs.iloc[0]
    hit = api.run("fifo", jobs, profiles, cluster, config=failing).jobs.iloc[0]
    assert hit.failures == 1 and hit.restores == 1
    assert hit.lost_gpu_seconds == pytest.approx(370.0, abs=1e-9)
    assert hit.finish - base.finish == pytest.approx(3620 + 30 + 370, abs=1e-6)
    profile = profiles["cifar10"]
    step, sync = profile.step_sync((1,), np.array([128.0]))
    rate = 1.0 / float(iteration_seconds(step, sync, 0)[0])  # M0-steps per second
    thresholds = profile.progress_thresholds

    def epochs(progress: float) -> float:
        e = int(np.searchsorted(thresholds, progress, side="right")) - 1
        return e + (progress - thresholds[e]) / (thresholds[e + 1] - thresholds[e])

    expected = epochs(rate * (1000 - 30)) - epochs(rate * (630 - 30))
    assert hit.lost_epochs == pytest.approx(expected, rel=1e-9)
    # One GPU held from its start except while the node was down (1000 s to the 4620 s round),
    # of which two 30 s restart delays (the start and the restore).
    assert hit.gpu_seconds == pytest.approx((hit.finish - hit.start) - (4620 - 1000), abs=1e-6)
    assert hit.restart_gpu_seconds == pytest.approx(2 * 30.0, abs=1e-9)
    assert hit.train_gpu_seconds == pytest.approx(base.train_gpu_seconds + 370.0, abs=1e-6)


@pytest.mark.parametrize("policy", ["tiresias", "goodput"])
def test_every_node_failing_at_once_and_returning_finishes_every_job(policy, profiles, slice40):
    cluster = ClusterSpec.uniform(4, 4)
    trace = tuple(Failure(1800.0, node, 3600.0) for node in range(4))
    config = SimConfig(failures=FailureModel(trace=trace))
    result = api.run(policy, slice40, profiles, cluster, config=config)
    assert result.jobs["finished"].all()
    outage = result.rounds[(result.rounds["time"] > 1800) & (result.rounds["time"] < 5400)]
    assert len(outage) and (outage["nodes_up"] == 0).all() and (outage["nodes_down"] == 4).all()
    assert (outage["gpus_in_use"] == 0).all()
    assert result.cluster_summary["node_hours_failed"] == pytest.approx(4.0)


@pytest.mark.parametrize("policy", ["tiresias", "goodput"])
def test_a_run_where_no_node_fails_is_byte_identical_to_one_without_failures(
    policy, profiles, slice40, tmp_path
):
    plain = api.run(policy, slice40, profiles)
    quiet = [
        SimConfig(failures=FailureModel(mtbf_hours=80_000.0, seed=3)),  # none within the run
        SimConfig(failures=FailureModel(trace=())),
    ]
    expected = {
        name: (api.write_run(plain, tmp_path / "plain", {}, 0, figure=False) / name).read_bytes()
        for name in ("jobs.csv", "rounds.csv")
    }
    for k, config in enumerate(quiet):
        result = api.run(policy, slice40, profiles, config=config)
        assert result.cluster_summary["node_failures"] == 0
        folder = api.write_run(result, tmp_path / f"quiet{k}", {}, 0, figure=False)
        for name, data in expected.items():
            assert (folder / name).read_bytes() == data


def test_work_undone_by_failures_is_exactly_redone(profiles):
    """One-GPU jobs at a fixed batch under fifo run the same configuration after every
    restore, so training minus the work failures undid equals the training of the run
    without failures, job by job (the lost time is measured, not derived from the rest)."""
    jobs = pd.read_csv(
        pd.io.common.StringIO(
            HEADER + "".join(f"cifar10-{k},{300 * k},cifar10,1,128\n" for k in range(6))
        )
    )
    cluster = ClusterSpec.uniform(2, 4)
    plain = api.run("fifo", jobs, profiles, cluster).jobs
    config = SimConfig(failures=FailureModel(mtbf_hours=0.5, repair_hours=0.1, seed=4))
    hit = api.run("fifo", jobs, profiles, cluster, config=config).jobs
    assert hit["failures"].sum() >= 3 and hit["lost_gpu_seconds"].gt(0).sum() >= 2
    np.testing.assert_allclose(
        hit["train_gpu_seconds"] - hit["lost_gpu_seconds"], plain["train_gpu_seconds"], rtol=1e-9
    )
    assert (hit["restart_gpu_seconds"] == 30.0 * (1 + hit["restarts"])).all()


def test_failures_conserve_gpu_seconds_and_follow_their_seed(profiles):
    config = SimConfig(failures=FailureModel(mtbf_hours=24.0, seed=1))
    result = api.run("goodput", None, profiles, config=config)
    jobs = result.jobs
    assert jobs["failures"].sum() > 0 and jobs["finished"].all()
    useful = jobs["train_gpu_seconds"] - jobs["lost_gpu_seconds"]
    assert (useful >= -1e-9).all() and (jobs["restores"] == jobs["failures"]).all()
    again = api.run("goodput", None, profiles, config=config)
    assert again.jobs.equals(jobs)
    other = api.run(
        "goodput", None, profiles, config=SimConfig(failures=FailureModel(mtbf_hours=24.0, seed=2))
    )
    assert not other.jobs.equals(jobs)


@pytest.mark.parametrize("rule", ["utility", "queue"])
@pytest.mark.parametrize("policy", ["goodput", "tiresias"])
def test_autoscaling_stays_within_its_bounds_and_never_oversubscribes(
    rule, policy, profiles, slice40
):
    scale = AutoscaleConfig(2, 12, rule, startup_delay=90.0, node_price=2.0)
    config = SimConfig(autoscale=scale, failures=FailureModel(mtbf_hours=12.0, seed=4))
    cluster = ClusterSpec.uniform(16, 4)
    checked = []

    def check(record) -> None:
        """No node holds more GPUs than it has, and none offline holds any."""
        live = np.array(api.as_cluster(cluster, config).capacity)
        live[list(record.offline_nodes)] = 0
        used = np.sum([job.allocation for job in record.running], axis=0)
        assert np.all(used <= live), (record.time, "over-subscribed or used while offline")
        checked.append(record.time)

    sim = Simulation(slice40, profiles, get_policy(policy), cluster, config, observers=[check])
    result = sim.run()
    assert len(checked) == len(result.rounds)
    assert result.jobs["finished"].all()
    rounds = result.rounds
    provisioned = rounds["nodes_up"] + rounds["nodes_starting"] + rounds["nodes_down"]
    assert provisioned.between(2, 12).all() and provisioned.nunique() > 1
    assert result.cluster["nodes"] == 12  # the pool is --max-nodes nodes of the cluster's shape
    summary = result.cluster_summary
    assert summary["cost"] == pytest.approx(2.0 * summary["node_hours"])


def test_a_failure_and_autoscaling_run_replays_from_its_manifest(tmp_path):
    out = tmp_path / "run"
    args = [
        "run",
        "--policy",
        "goodput",
        "--mtbf",
        "12",
        "--min-nodes",
        "2",
        "--max-nodes",
        "8",
        "--autoscaler",
        "queue",
        "--seed",
        "5",
        "--out",
        str(out),
        "--quiet",
    ]
    assert CliRunner().invoke(main, args).exit_code == 0
    again = tmp_path / "again"
    result = CliRunner().invoke(
        main, ["run", "--manifest", str(out / "manifest.json"), "--out", str(again)]
    )
    assert result.exit_code == 0, result.output
    assert (again / "jobs.csv").read_bytes() == (out / "jobs.csv").read_bytes()
    summary = json.loads((out / "manifest.json").read_text())["summary"]
    assert summary["avg_jct_without_failures"] > 0 and summary["node_hours"] > 0


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--mtbf", "-3"], "--mtbf: must be positive hours"),
        (["--min-nodes", "9", "--max-nodes", "8"], "--min-nodes: 9 exceeds --max-nodes 8"),
        (["--min-nodes", "2"], "--max-nodes: give both or neither"),
        (["--checkpoint-interval", "0"], "--checkpoint-interval"),
        (["--mtbf", "5", "--failure-trace", "x.csv"], "give --mtbf or --failure-trace"),
        (["--min-nodes", "1", "--max-nodes", "4", "--param", "autoscaler.low=2"], "low"),
    ],
)
def test_bad_failure_and_autoscaling_options_get_one_line(args, message):
    result = CliRunner().invoke(main, ["run", "--policy", "fifo", *args])
    assert result.exit_code == 2, result.output
    lines = result.output.strip().splitlines()
    assert len(lines) == 1 and message in lines[0], lines


@pytest.mark.parametrize(
    ("rows", "message"),
    [
        ("10,99,5\n", "line 2: node 99 does not exist; the cluster has nodes 0-15"),
        ("10,1,5\n12,1,5\n", "line 3: node 1 fails again before its repair"),
        ("x,1,5\n", "line 2: time 'x' is not a number of seconds"),
        ("10,0_1,5\n", "line 2: node '0_1' is not a node id"),
        ("10,1,-5\n", "line 2: duration must be positive"),
    ],
)
def test_bad_failure_traces_name_the_file_and_line(rows, message, tmp_path):
    path = tmp_path / "f.csv"
    path.write_text("time,node,duration\n" + rows)
    result = CliRunner().invoke(main, ["run", "--policy", "fifo", "--failure-trace", str(path)])
    assert result.exit_code == 2
    assert f"{path}: {message}" in result.output.strip().splitlines()[0]
    with pytest.raises(InputError):
        read_failure_trace(path, 16)


@pytest.mark.parametrize("policy", ["fifo", "optimus", "throughput", "sia", "gavel"])
def test_every_policy_runs_while_nodes_fail_and_return(policy, profiles, slice40):
    trace = (Failure(900.0, 0, 1800.0), Failure(1500.0, 3, 600.0), Failure(3000.0, 0, 600.0))
    config = SimConfig(failures=FailureModel(trace=trace))
    result = api.run(policy, slice40, profiles, ClusterSpec.uniform(4, 4), config=config)
    assert result.jobs["finished"].all()
    assert result.cluster_summary["node_failures"] == 3
    assert result.rounds["nodes_down"].max() >= 1
