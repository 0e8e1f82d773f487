"""Clusters of several GPU types: per-type profiles fitted to the Sia artifact's measurements,
one GPU type per job at a time, Sia's configurations and bootstrap factors, and the policies
running on the reference's heterogeneous cluster."""

from __future__ import annotations

import itertools
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from click.testing import CliRunner

from goodput_sim import api
from goodput_sim.cli import main
from goodput_sim.inputs.cluster import ClusterSpec, NodeGroup, parse_cluster
from goodput_sim.inputs.workload import heterogeneous_variant, load_workload
from goodput_sim.policies import Decision
from goodput_sim.policies.sia import configurations
from goodput_sim.profiles import TypedProfile, load_profiles

ROOT = Path(__file__).resolve().parents[1]
SIA = ROOT.parent / "shared" / "reference" / "sia-sosp23"
DEFAULT_MIX = ROOT / "configs" / "cluster-sia-default.yaml"
SHIPPED = ROOT / "traces" / "profiles-sia"


@pytest.fixture(scope="module")
def sia_traces() -> Path:
    if not (SIA / "traces").is_dir():
        pytest.skip(f"Sia reference data not found at {SIA}; place the Sia SOSP'23 folder there")
    return SIA / "traces"


@pytest.fixture(scope="module")
def typed_profiles():
    return load_profiles(SHIPPED)


@pytest.fixture(scope="module")
def hetero_jobs() -> pd.DataFrame:
    return pd.read_csv(ROOT / "traces" / "workloads" / "heterogeneous.csv").iloc[:40]


def test_per_type_fits_match_the_reference_measurements(sia_traces):
    """Every application on every GPU type of the artifact: the fitted profile's median
    step-time error against all its measurements is under 5% on the types the reference
    clusters use, and under 16% everywhere (azure's imagenet is the worst)."""
    from goodput_sim.profiles.fit import check_profile
    from goodput_sim.profiles.typed import load_typed_measured_profiles

    measured = load_typed_measured_profiles(sia_traces)
    shipped = load_profiles(SHIPPED)
    medians = {}
    for app, truth in measured.items():
        for gpu_type in truth.gpu_types:
            errors = check_profile(shipped[app].for_type(gpu_type), truth.for_type(gpu_type))
            medians[(app, gpu_type)] = errors.step_time_median
    assert len(medians) == 6 * 6
    for (app, gpu_type), median in medians.items():
        bound = 0.05 if gpu_type in ("aws", "dgx-ext", "rtx", "quad") else 0.16
        assert median < bound, (app, gpu_type, median)


def test_the_one_gpu_throughputs_are_the_reference_factors(sia_traces):
    """Sia SPEC 4.1's X1 table (samples/s), where the largest one-GPU batch and the slowest
    step come from the same measurement; the ratios scale beliefs for untried types."""
    measured = load_profiles(sia_traces)
    expected = {"aws": 1458.5, "dgx-ext": 10062.6, "rtx": 3306.3, "quad": 3740.1}
    for gpu_type, value in expected.items():
        assert measured["cifar10"].single_gpu_throughput(gpu_type) == pytest.approx(value, 1e-3)


def test_shipped_typed_profiles_keep_per_type_batch_ranges(typed_profiles):
    cifar = typed_profiles["cifar10"]
    assert isinstance(cifar, TypedProfile) and set(cifar.gpu_types) >= {"aws", "dgx-ext", "rtx"}
    assert cifar.for_type("aws").limits.max_local_bsz == 1024
    assert cifar.for_type("dgx-ext").limits.max_local_bsz == 4096
    assert typed_profiles["deepspeech2"].for_type("rtx").limits.max_local_bsz == 57
    assert cifar.restart_delay == 50 and cifar.slowdown == 1.8  # Sia SPEC 3.4, 3.5


def test_sia_configurations_of_the_reference_clusters():
    """Sia SPEC 4.2: 19 configurations on the default mix, 18 on the homogeneous cluster."""
    mixed = configurations(parse_cluster(DEFAULT_MIX))
    by_type = {t: [c.gpus for c in mixed if c.gpu_type == t] for t in ("aws", "dgx-ext", "rtx")}
    assert by_type == {
        "aws": [1, 2, 4, 8, 12, 16, 20, 24],
        "dgx-ext": [1, 2, 4, 8, 16],
        "rtx": [1, 2, 4, 8, 16, 24],
    }
    homogeneous = configurations(ClusterSpec((NodeGroup(16, 4, "aws"),)))
    assert [c.gpus for c in homogeneous] == [1, 2, 4, *range(8, 65, 4)]


@pytest.mark.parametrize("policy", ["sia", "goodput", "gavel", "tiresias", "fifo", "optimus"])
def test_every_policy_keeps_each_job_on_one_gpu_type(policy, typed_profiles, hetero_jobs):
    """Every round, no job holds GPUs of two types; GPU-hours by type, rebuilt from the rounds
    (GPUs held on each type until the next round or the job's finish), are what the run
    reports."""
    cluster = parse_cluster(DEFAULT_MIX)
    types = np.array(cluster.gpu_types)
    records = []
    result = api.run(policy, hetero_jobs, typed_profiles, cluster, observers=[records.append])
    assert result.jobs["finished"].all()
    finish = dict(zip(result.jobs["name"], result.jobs["finish"], strict=True))
    rebuilt: dict[str, float] = {}
    for record, following in zip(records, records[1:] + [None], strict=True):
        for job in record.running:
            held = set(types[np.array(job.allocation) > 0])
            assert held == {job.gpu_type}, (record.time, job.name, held)
            end = finish[job.name] if following is None else min(following.time, finish[job.name])
            seconds = job.replicas * (end - record.time)
            rebuilt[job.gpu_type] = rebuilt.get(job.gpu_type, 0.0) + seconds
    reported = {
        key.removeprefix("gpu_hours_"): value
        for key, value in result.cluster_summary.items()
        if key.startswith("gpu_hours_") and value > 0
    }
    assert reported.keys() == rebuilt.keys()
    for gpu_type, hours in reported.items():
        assert hours == pytest.approx(rebuilt[gpu_type] / 3600, rel=1e-9), gpu_type


def test_a_decision_spanning_two_types_is_refused():
    cluster = parse_cluster(DEFAULT_MIX)
    row = np.zeros(cluster.nodes, dtype=np.int64)
    row[[0, 6]] = 4  # an aws node and a dgx-ext node
    with pytest.raises(RuntimeError, match="put job 'a' on two GPU types"):
        Decision({"a": row}).validated("p", ["a"], cluster.capacity, cluster.node_type_index)


def test_sia_is_deterministic_and_moves_jobs_to_faster_types(typed_profiles, hetero_jobs):
    """Sia's moves between types go to a type where the job's application is faster on one
    GPU more often than to a slower one, and it puts a larger share of its GPU-hours on the
    fastest type (A100s, dgx-ext, for every application here) than type-blind tiresias."""
    cluster = parse_cluster(DEFAULT_MIX)
    first = api.run("sia", hetero_jobs, typed_profiles, cluster)
    second = api.run("sia", hetero_jobs, typed_profiles, cluster)
    assert first.jobs.equals(second.jobs) and first.rounds.equals(second.rounds)
    faster = slower = 0
    for app, history in zip(first.jobs["application"], first.jobs["gpu_types"], strict=True):
        speed = typed_profiles[app].single_gpu_throughput
        for old, new in itertools.pairwise(history.split(">")):
            faster += speed(new) > speed(old)
            slower += speed(new) < speed(old)
    assert faster > slower

    def fastest_share(result) -> float:
        hours = {k: v for k, v in result.cluster_summary.items() if k.startswith("gpu_hours_")}
        return hours["gpu_hours_dgx-ext"] / sum(hours.values())

    blind = api.run("tiresias", hetero_jobs, typed_profiles, cluster)
    assert fastest_share(first) > fastest_share(blind)


def test_the_heterogeneous_workload_is_the_converted_default():
    converted = heterogeneous_variant(load_workload(api.bundled_workload()), seed=0)
    shipped = ROOT / "traces" / "workloads" / "heterogeneous.csv"
    assert converted.to_csv(index=False) == shipped.read_text()
    assert "ncf" not in set(converted["application"])
    assert converted.loc[converted["application"] == "imagenet", "num_replicas"].max() <= 16


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("groups:\n  - {nodes: 2, gpus_per_node: 8, gpu_type: h100}\n", "GPU type 'h100' has no"),
        ("groups:\n  - {nodes: 2, gpus_per_node: 8, gpu_type: rtx, racks: 1}\n", "racks"),
        ("groups:\n  - {nodes: 0, gpus_per_node: 8, gpu_type: rtx}\n", "positive integer"),
        ("groups:\n  - {nodes: 2, gpus_per_node: 8, gpu_type: ''}\n", "GPU type name"),
    ],
)
def test_bad_pools_and_unknown_types_get_one_line(text, message, tmp_path):
    path = tmp_path / "pools.yaml"
    path.write_text(text)
    result = CliRunner().invoke(
        main,
        [
            "run",
            "--policy",
            "sia",
            "--profiles",
            str(SHIPPED),
            "--cluster",
            str(path),
            "--workload",
            str(ROOT / "traces" / "workloads" / "heterogeneous.csv"),
        ],
    )
    assert result.exit_code == 2, result.output
    lines = result.output.strip().splitlines()
    assert len(lines) == 1 and "pools.yaml" in lines[0] and message in lines[0], lines


def test_a_typed_comparison_prints_and_draws_gpu_hours_by_type(hetero_jobs, tmp_path):
    workload = tmp_path / "jobs.csv"
    hetero_jobs.to_csv(workload, index=False)
    out = tmp_path / "cmp"
    result = CliRunner().invoke(
        main,
        [
            "compare",
            "--policies",
            "tiresias,goodput",
            "--cluster",
            str(DEFAULT_MIX),
            "--profiles",
            str(SHIPPED),
            "--workload",
            str(workload),
            "--out",
            str(out),
            "--quiet",
        ],
    )
    assert result.exit_code == 0, result.output
    assert "GPU-hours by GPU type" in result.output and "dgx-ext" in result.output
    drawn = CliRunner().invoke(
        main, ["plot", str(out), "--kind", "types", "-o", str(tmp_path / "t.svg")]
    )
    assert drawn.exit_code == 0, drawn.output
    report = CliRunner().invoke(main, ["report", str(out), "-o", str(tmp_path / "r.html")])
    assert report.exit_code == 0, report.output
    assert "GPU-hours by GPU type per policy" in (tmp_path / "r.html").read_text()
