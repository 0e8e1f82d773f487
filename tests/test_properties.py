"""Property tests: every reader answers arbitrary input with a value or a one-line InputError
(never another exception, never a multi-line message), and random small runs keep the
simulator's invariants."""

from __future__ import annotations

import copy
import math

import numpy as np
import pandas as pd
import pytest
import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from goodput_sim import api
from goodput_sim.errors import InputError
from goodput_sim.inputs.cluster import ClusterSpec, parse_cluster
from goodput_sim.inputs.workload import load_workload
from goodput_sim.params import parse_assignments
from goodput_sim.policies import get_policy
from goodput_sim.profiles import load_profiles
from goodput_sim.profiles.parametric import ParametricProfile
from goodput_sim.sim.engine import Simulation
from goodput_sim.spec import SimConfig

READER = settings(
    max_examples=200,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
PROFILES = load_profiles()
HEADER = "name,time,application,num_replicas,batch_size"


def _one_line_or_value(read, *args):
    """``read(*args)``: a value, or an InputError whose message is one line."""
    try:
        return read(*args)
    except InputError as err:
        assert "\n" not in str(err), str(err)
        return None


cells = st.one_of(
    st.sampled_from(["0", "1", "-1", "1e20", "nan", "inf", "", "2.5", "ncf", "cifar10", "x;y"]),
    st.text(alphabet=st.characters(blacklist_categories=("Cs",)), max_size=12),
    st.integers(-(10**25), 10**25).map(str),
    st.floats(allow_nan=True, allow_infinity=True).map(repr),
)


@READER
@given(rows=st.lists(st.lists(cells, min_size=0, max_size=7), min_size=0, max_size=5))
def test_workload_reader(rows, tmp_path):
    path = tmp_path / "w.csv"
    text = HEADER + "\n" + "\n".join(",".join(r) for r in rows)
    path.write_bytes(text.encode("utf-8", errors="surrogatepass"))
    frame = _one_line_or_value(load_workload, path, PROFILES, 64)
    if frame is not None:
        assert len(frame) >= 1
        assert frame["time"].between(0, 10 * 365 * 86400).all()
        assert (frame["num_replicas"] >= 1).all() and (frame["batch_size"] >= 1).all()


yaml_values = st.recursive(
    st.one_of(
        st.none(), st.booleans(), st.integers(-(10**20), 10**20), st.floats(), st.text(max_size=8)
    ),
    lambda children: st.one_of(
        st.lists(children, max_size=3), st.dictionaries(st.text(max_size=12), children, max_size=3)
    ),
    max_leaves=12,
)
cluster_docs = st.one_of(
    yaml_values,
    st.fixed_dictionaries(
        {"nodes": yaml_values, "gpus_per_node": yaml_values}, optional={"gpu_type": yaml_values}
    ),
    st.fixed_dictionaries(
        {
            "groups": st.lists(
                st.fixed_dictionaries(
                    {"nodes": st.integers(-2, 6), "gpus_per_node": st.integers(-2, 9)},
                    optional={"gpu_type": st.sampled_from(["T4", "A100", ""])},
                ),
                max_size=3,
            )
        }
    ),
)


@READER
@given(document=cluster_docs, wrap=st.booleans())
def test_cluster_reader(document, wrap, tmp_path):
    path = tmp_path / "cluster.yaml"
    path.write_text(yaml.safe_dump({"cluster": document} if wrap else document))
    cluster = _one_line_or_value(parse_cluster, path)
    if cluster is not None:
        assert isinstance(cluster, ClusterSpec) and cluster.total_gpus >= 1
        assert (cluster.capacity >= 1).all() and len(cluster.capacity) == cluster.nodes


@READER
@given(text=st.text(max_size=40))
def test_cluster_shorthand(text):
    cluster = _one_line_or_value(parse_cluster, text) if "/" not in text else None
    if cluster is not None:
        assert cluster.total_gpus >= 1


BERT = yaml.safe_load((api.bundled_profiles_path() / "bert.yaml").read_text())


def _leaf_paths(data, path=()):
    if isinstance(data, dict):
        for key, value in data.items():
            yield from _leaf_paths(value, (*path, key))
    elif isinstance(data, list) and data and isinstance(data[0], list):
        for index, value in enumerate(data):
            yield from _leaf_paths(value, (*path, index))
    else:
        yield path


LEAVES = [p for p in _leaf_paths(BERT) if p and p[0] != "provenance"]


@READER
@given(
    edits=st.lists(
        st.tuples(st.sampled_from(LEAVES), yaml_values | st.just("__delete__")),
        min_size=1,
        max_size=3,
    )
)
def test_profile_reader(edits, tmp_path):
    data = copy.deepcopy(BERT)
    for leaf, value in edits:
        target = data
        for key in leaf[:-1]:
            target = target[key]
        if value == "__delete__":
            target.pop(leaf[-1], None) if isinstance(target, dict) else None
        else:
            target[leaf[-1]] = value
    path = tmp_path / "p.yaml"
    path.write_text(yaml.safe_dump(data))
    profile = _one_line_or_value(ParametricProfile.from_yaml, path)
    if profile is not None:  # a profile that loads answers every question finitely
        step, sync = profile.step_sync((2, 2), np.array([4.0, 12.0]))
        assert np.isfinite(step).all() and (step > 0).all() and (sync >= 0).all()
        sqr, var = profile.grad_stats(12, np.arange(profile.limits.max_epochs))
        assert np.isfinite(sqr).all() and np.isfinite(var).all()


@READER
@given(
    file=st.sampled_from(["placements.csv", "scalability.csv", "validation-8.csv"]),
    row=st.integers(1, 40),
    column=st.integers(0, 4),
    value=cells,
)
def test_measurement_reader(file, row, column, value, tmp_path_factory):
    from test_measured_profile import write_measurements

    from goodput_sim.profiles import MeasuredProfile

    folder = write_measurements(tmp_path_factory.mktemp("m") / "toy")
    path = folder / file
    lines = path.read_text().splitlines()
    index = min(row, len(lines) - 1)
    fields = lines[index].split(",")
    fields[min(column, len(fields) - 1)] = value
    lines[index] = ",".join(fields)
    path.write_bytes(("\n".join(lines) + "\n").encode("utf-8", errors="surrogatepass"))
    profile = _one_line_or_value(MeasuredProfile, folder)
    if profile is not None:
        step, sync = profile.step_sync((2, 1), np.array([8.0, 16.0]))
        assert np.isfinite(step).all() and (step > 0).all()
        assert (np.diff(profile.progress_thresholds) > 0).all()


@READER
@given(
    interval=st.floats(allow_nan=True, allow_infinity=True),
    delay=st.floats(allow_nan=True, allow_infinity=True),
    interference=st.floats(allow_nan=True, allow_infinity=True),
    horizon=st.none() | st.floats(allow_nan=True, allow_infinity=True),
)
def test_engine_options(interval, delay, interference, horizon):
    config = _one_line_or_value(SimConfig, interval, delay, interference, horizon)
    if config is not None:
        assert 1 <= config.interval <= 86400 and 0 <= config.restart_delay <= 86400
        assert config.horizon is None or math.isfinite(config.horizon)


@READER
@given(items=st.lists(st.text(max_size=10), max_size=3), value=st.text(max_size=8))
def test_parameters(items, value):
    parsed = _one_line_or_value(parse_assignments, items)
    if parsed is not None:
        _one_line_or_value(get_policy, "goodput", parsed)
    _one_line_or_value(get_policy, "tiresias", {"queue_threshold": value})


# --------------------------------------------------------------------------- invariants
APPS = sorted(PROFILES)
jobs_strategy = st.lists(
    st.tuples(
        st.floats(0, 3600),
        st.sampled_from(APPS),
        st.integers(1, 8),
    ),
    min_size=1,
    max_size=6,
)


def _workload(jobs) -> pd.DataFrame:
    rows = []
    for k, (time, app, replicas) in enumerate(jobs):
        lim = PROFILES[app].limits
        batch = int(
            np.clip(lim.init_batch_size * replicas, lim.init_batch_size, lim.max_batch_size)
        )
        rows.append((f"j{k}", time, app, replicas, batch))
    return pd.DataFrame(rows, columns=HEADER.split(","))


@settings(max_examples=60, deadline=None)
@given(
    jobs=jobs_strategy,
    policy=st.sampled_from(["fifo", "tiresias", "optimus", "throughput", "goodput"]),
    agent=st.sampled_from([None, "fixed", "goodput", "critical-batch", "tail-weighted"]),
    nodes=st.integers(1, 3),
    interval=st.sampled_from([30.0, 60.0, 300.0]),
)
def test_random_runs_keep_the_invariants(jobs, policy, agent, nodes, interval):
    from test_contract import Watched

    workload = _workload(jobs)
    cluster = ClusterSpec.uniform(nodes, 4)
    workload = workload[workload["num_replicas"] <= cluster.total_gpus]
    if workload.empty:
        return
    scheduler, batch_agent = api.make_policy_and_agent(policy, agent)
    config = SimConfig(interval=interval, horizon=6 * 3600.0)
    sim = Simulation(workload, PROFILES, scheduler, cluster, config, batch_agent)
    watched = Watched(sim)
    result = sim.run()
    jobs_out, rounds = result.jobs, result.rounds
    for matrix in watched.allocations:  # no node over capacity
        assert (matrix.sum(axis=0) <= cluster.capacity).all()
    assert sorted(jobs_out["name"]) == sorted(workload["name"])  # every job accounted for
    if len(rounds):
        assert (np.diff(rounds["time"].to_numpy()) > 0).all()  # time never goes back
    done = jobs_out[jobs_out["finished"].astype(bool)]
    # A job pays at least one restart delay, and GPU-seconds split into training and delays.
    assert (done["finish"] - done["start"] >= config.restart_delay - 1e-6).all()
    assert (jobs_out["gpu_seconds"] >= jobs_out["train_gpu_seconds"] - 1e-6).all()
    assert (jobs_out["train_gpu_seconds"] >= 0).all()
    assert np.isfinite(done["jct"].to_numpy(dtype=float)).all()
    end = float(config.horizon)
    held = _held_gpu_seconds(rounds, jobs_out, end)
    for row in jobs_out.itertuples():
        assert row.gpu_seconds == pytest.approx(held[row.name], rel=1e-9, abs=1e-6)


def _held_gpu_seconds(rounds: pd.DataFrame, jobs: pd.DataFrame, end: float) -> dict[str, float]:
    from round_records import allocation_entries

    finish = {r.name: (r.finish if pd.notna(r.finish) else math.inf) for r in jobs.itertuples()}
    held = dict.fromkeys(jobs["name"], 0.0)
    times = rounds["time"].astype(float).tolist() if len(rounds) else []
    for i, text in enumerate(rounds["allocations"] if len(rounds) else []):
        until = times[i + 1] if i + 1 < len(times) else end
        for name, gpus, _ in allocation_entries(text):
            held[name] += gpus * max(min(until, finish[name]) - times[i], 0.0)
    return held
