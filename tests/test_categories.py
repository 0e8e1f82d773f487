"""Job categories (Sia SPEC 4.8): rigid jobs run on exactly the GPUs and batch they asked for
or wait, strong-scaling (``scale-gpus``) jobs keep their batch on at most their GPUs, under
every policy; the optional workload column and its converter."""

from __future__ import annotations

import functools
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from click.testing import CliRunner

from goodput_sim import api
from goodput_sim.cli import main
from goodput_sim.errors import InputError
from goodput_sim.inputs.workload import categorize, load_workload, write_workload
from goodput_sim.models.goodput import GoodputModel, fixed_batch_config
from goodput_sim.models.limits import Limits, for_category
from goodput_sim.models.throughput import ThroughputParams
from goodput_sim.policies import Decision
from goodput_sim.profiles import load_profiles

ROOT = Path(__file__).resolve().parents[1]
DEFAULT = ROOT / "traces" / "workloads" / "default.csv"
HETERO = ROOT / "traces" / "workloads" / "heterogeneous.csv"
TYPED = ROOT / "traces" / "profiles-sia"
TYPED_CLUSTER = "configs/cluster-sia-default.yaml"

HOMOGENEOUS_POLICIES = ("fifo", "tiresias", "goodput", "goodput-ga", "throughput", "optimus+oracle")
SMALL = {"goodput-ga": {"population": 10, "generations": 5}}  # seconds, not minutes
TYPED_POLICIES = ("sia", "gavel", "goodput")


def _mixed(path: Path, jobs: int, seed: int = 0) -> pd.DataFrame:
    frame = load_workload(path).iloc[:jobs].reset_index(drop=True)
    return categorize(frame, {"rigid": 0.4, "scale-gpus": 0.3}, seed)


class Watch:
    """Every running job's GPUs and total batch at every round."""

    def __init__(self):
        self.seen: dict[str, list[tuple[int, int]]] = {}

    def __call__(self, record) -> None:
        for job in record.running:
            self.seen.setdefault(job.name, []).append((job.replicas, job.total_batch))


def _check_honoured(frame: pd.DataFrame, watch: Watch, result) -> None:
    assert result.jobs["finished"].all()
    asked = frame.set_index("name")
    checked = set()
    for name, rounds in watch.seen.items():
        row = asked.loc[name]
        counts = {r for r, _ in rounds}
        if row.category == "rigid":
            assert counts == {row.num_replicas}, (name, counts)
        elif row.category == "scale-gpus":
            assert max(counts) <= row.num_replicas, (name, counts)
        if row.category != "adaptive":
            for replicas, total in rounds:  # the requested batch, split over the GPUs held
                b, s = fixed_batch_config(row.batch_size, replicas, _limits(row.application))
                assert total == b * replicas * (s + 1), (name, replicas, total)
            checked.add(row.category)
    assert checked == {"rigid", "scale-gpus"}


@functools.cache
def _limits(app: str) -> Limits:
    return load_profiles(None)[app].limits


@pytest.mark.parametrize("policy", HOMOGENEOUS_POLICIES)
def test_every_policy_honours_categories(policy):
    frame = _mixed(DEFAULT, 24)
    watch = Watch()
    result = api.run(policy, frame, cluster="4x4", observers=[watch], params=SMALL.get(policy))
    _check_honoured(frame, watch, result)


@pytest.mark.parametrize("policy", TYPED_POLICIES)
def test_typed_policies_honour_categories(policy):
    frame = _mixed(HETERO, 24)
    watch = Watch()
    result = api.run(policy, frame, TYPED, TYPED_CLUSTER, observers=[watch])
    assert result.jobs["finished"].all()
    asked = frame.set_index("name")
    for name, rounds in watch.seen.items():
        row = asked.loc[name]
        counts = {r for r, _ in rounds}
        if row.category == "rigid":
            assert counts == {row.num_replicas}, (policy, name, counts)
        elif row.category == "scale-gpus":
            assert max(counts) <= row.num_replicas, (policy, name, counts)


@pytest.mark.parametrize("policy", ("goodput", "sia"))
def test_all_adaptive_column_changes_nothing(policy):
    """Metamorphic: a category column saying ``adaptive`` for every job gives the results of
    the file without the column, to the byte."""
    frame = load_workload(HETERO).iloc[:20].reset_index(drop=True)
    labelled = categorize(frame, {}, seed=3)
    assert set(labelled["category"]) == {"adaptive"}
    plain = api.run(policy, frame, TYPED, TYPED_CLUSTER)
    same = api.run(policy, labelled, TYPED, TYPED_CLUSTER)
    columns = [c for c in plain.jobs.columns if c != "wall_seconds"]
    pd.testing.assert_frame_equal(plain.jobs[columns], same.jobs[columns])


def test_rigid_everywhere_under_an_elastic_policy_is_a_fixed_policy():
    """Metamorphic: when every job is rigid, the elastic goodput policy can only choose which
    jobs run; each runs at its requested GPUs and batch, so no job finishes faster than it
    would under its request alone, and no job exceeds its GPUs."""
    frame = categorize(load_workload(DEFAULT).iloc[:16], {"rigid": 1.0}, seed=0)
    watch = Watch()
    result = api.run("goodput", frame, cluster="4x4", observers=[watch])
    asked = frame.set_index("name")["num_replicas"]
    for name, rounds in watch.seen.items():
        assert {r for r, _ in rounds} == {asked[name]}
    adaptive = api.run("goodput", frame.drop(columns="category"), cluster="4x4")
    assert result.jobs["jct"].mean() >= adaptive.jobs["jct"].mean() * 0.9


def test_decisions_breaking_a_category_are_refused():
    limits = for_category(_limits("cifar10"), "rigid", 4, 512)
    decision = Decision({"a": np.array([2, 0])})
    with pytest.raises(RuntimeError, match="rigid job 'a' 2 GPUs"):
        decision.validated("p", ["a"], np.array([4, 4]), None, {"a": limits})
    assert Decision({"a": np.array([4, 0])}).validated(
        "p", ["a"], np.array([4, 4]), None, {"a": limits}
    )
    scaling = for_category(_limits("cifar10"), "scale-gpus", 4, 512)
    with pytest.raises(RuntimeError, match="scale-gpus job 'a' 6 GPUs"):
        Decision({"a": np.array([4, 2])}).validated(
            "p", ["a"], np.array([4, 4]), None, {"a": scaling}
        )


def test_category_limits():
    base = _limits("cifar10")
    assert for_category(base, "adaptive", 4, 512) is base
    rigid = for_category(base, "rigid", 4, 512)
    assert (rigid.min_replicas, rigid.max_replicas, rigid.fixed_batch_size) == (4, 4, 512)
    assert rigid.valued_batch == 512 and base.valued_batch is None
    assert for_category(base, "rigid", 4, 512) is rigid  # one object per rule
    assert [rigid.runs_on(k) for k in (0, 1, 4, 5)] == [True, False, True, False]
    scaling = for_category(base, "scale-gpus", 4, 512)
    assert scaling.min_replicas is None and [scaling.runs_on(k) for k in (1, 4, 5)] == [
        True,
        True,
        False,
    ]
    ncf = _limits("ncf")  # the application's own rules come first
    assert for_category(ncf, "rigid", 4, 256).max_replicas == ncf.max_replicas


def test_a_fixed_batch_is_valued_at_that_batch():
    params = ThroughputParams(0.1, 0.01, 0.5, 0.05, 0.5, 0.05, 1.5)
    adaptive = GoodputModel(params, 128, 4096, 32, 256, 1.0, 100.0)
    fixed = GoodputModel(params, 128, 4096, 32, 256, 1.0, 100.0, fixed_batch=512)
    replicas = np.array([1, 2, 4, 8])
    choice = fixed.optimize(np.ones(4), replicas)
    totals = choice.local_bsz * replicas * (choice.accum_steps + 1)
    assert (totals >= 512).all() and (totals < 512 + replicas * 2).all()
    expected = fixed.goodput(1, replicas, choice.local_bsz, choice.accum_steps)
    np.testing.assert_allclose(choice.goodput, expected)
    # the adaptive optimum is at least as good, up to its 50-point candidate grid
    assert (adaptive.optimize(np.ones(4), replicas).goodput >= choice.goodput * 0.99).all()


def test_workload_column(tmp_path):
    frame = load_workload(DEFAULT)
    assert "category" not in frame.columns
    plain = tmp_path / "plain.csv"
    write_workload(frame, plain)
    header = plain.read_text().splitlines()[0]
    assert header == "name,time,application,num_replicas,batch_size"  # no column: as before
    labelled = categorize(frame, {"rigid": 0.25, "scale-gpus": 0.25}, seed=1)
    path = tmp_path / "labelled.csv"
    write_workload(labelled, path)
    again = load_workload(path)
    assert list(again["category"]) == list(labelled["category"])
    text = path.read_text().splitlines()
    text[3] = text[3].rsplit(",", 1)[0] + ",elastic"
    path.write_text("\n".join(text) + "\n")
    with pytest.raises(InputError, match=r"line 4.*category 'elastic' must be one of"):
        load_workload(path)
    with pytest.raises(InputError, match="category 'bogus'"):
        api.run("fifo", labelled.assign(category="bogus").iloc[:2], cluster="4x4")


def test_categorize_is_seeded_and_nested():
    frame = load_workload(DEFAULT)
    quarter = categorize(frame, {"rigid": 0.25}, seed=7)
    half = categorize(frame, {"rigid": 0.5}, seed=7)
    assert quarter.equals(categorize(frame, {"rigid": 0.25}, seed=7))
    rigid_quarter = set(quarter.loc[quarter.category == "rigid", "name"])
    rigid_half = set(half.loc[half.category == "rigid", "name"])
    assert rigid_quarter < rigid_half
    assert abs(len(rigid_half) / len(frame) - 0.5) < 0.1
    assert set(categorize(frame, {"rigid": 1.0}).category) == {"rigid"}
    with pytest.raises(InputError, match="sum to at most 1"):
        categorize(frame, {"rigid": 0.7, "scale-gpus": 0.7})
    with pytest.raises(InputError, match="unknown category"):
        categorize(frame, {"elastic": 0.5})


def test_categorize_command(tmp_path):
    out = tmp_path / "w.csv"
    result = CliRunner().invoke(
        main, ["workload", "categorize", str(DEFAULT), "--rigid", "0.5", "-o", str(out)]
    )
    assert result.exit_code == 0, result.output
    assert "rigid=" in result.output and "adaptive=" in result.output
    assert set(load_workload(out)["category"]) == {"adaptive", "rigid"}
