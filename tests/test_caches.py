"""Every cache of the README's cache table, row by row: a change of each input it reads gives a
fresh value (the value a fresh object computes), and runs with a cache equal runs without."""

from __future__ import annotations

import dataclasses
import shutil
from pathlib import Path
from types import MappingProxyType

import numpy as np
import pandas as pd
import pytest
from test_measured_profile import write_measurements

from goodput_sim.agents import get_agent
from goodput_sim.agents.adaptive import _fastest_config
from goodput_sim.agents.tail import _noise_blind_plan
from goodput_sim.inputs.cluster import (
    ClusterSpec,
    NodeGroup,
    packed_placement,
    parse_cluster,
    type_nodes,
)
from goodput_sim.inputs.sources import WorkloadSource
from goodput_sim.models.goodput import fixed_batch_config, without_statistics
from goodput_sim.models.speedup_table import best_goodputs
from goodput_sim.models.throughput import ThroughputModel, ThroughputParams
from goodput_sim.policies import JobView, Snapshot, get_policy
from goodput_sim.policies.elastic import Goodput
from goodput_sim.policies.gavel import Gavel
from goodput_sim.policies.optimus import Optimus, _gpu_type
from goodput_sim.policies.placement import keep_or_fill
from goodput_sim.policies.problem import AllocationProblem
from goodput_sim.policies.sia import Sia
from goodput_sim.profiles import load_profiles
from goodput_sim.profiles.base import FrozenProfile, iteration_seconds
from goodput_sim.profiles.measured import MeasuredProfile
from goodput_sim.profiles.typed import TypedProfile
from goodput_sim.sim.engine import Simulation
from goodput_sim.sim.jobs import BeliefView, FitMemo, JobBelief
from goodput_sim.spec import SimConfig

ROOT = Path(__file__).resolve().parents[1]
COLUMNS = ["name", "time", "application", "num_replicas", "batch_size"]
# Two GPU types of two node sizes: 4-GPU aws nodes and one 8-GPU rtx node.
TYPED = ClusterSpec((NodeGroup(2, 4, "aws"), NodeGroup(1, 8, "rtx")))
PLAIN = parse_cluster("16x4")
# aws nodes of 8 and 2 GPUs: which are up changes a job's best placement.
UNEQUAL = ClusterSpec((NodeGroup(1, 8, "aws"), NodeGroup(1, 2, "aws"), NodeGroup(1, 8, "rtx")))
JOBS = pd.DataFrame(
    [
        ("cifar10-a", 0, "cifar10", 4, 2048),
        ("ncf-a", 30, "ncf", 1, 32768),
        ("cifar10-b", 60, "cifar10", 8, 2048),
        ("yolov3-a", 120, "yolov3", 2, 64),
        ("deepspeech2-a", 200, "deepspeech2", 2, 40),
    ],
    columns=COLUMNS,
)
PARAMS = ThroughputParams(0.1, 0.01, 0.1, 0.01, 0.1, 0.01, 1.5)
OTHER_PARAMS = dataclasses.replace(PARAMS, beta_c=0.02)


@pytest.fixture(scope="module")
def typed():
    return load_profiles(ROOT / "traces" / "profiles-sia")


@pytest.fixture(scope="module")
def plain():
    return load_profiles()


def truths(typed, app: str = "cifar10") -> dict[str, FrozenProfile]:
    """The application's read-only ground truth on each type of ``TYPED``."""
    return {t: FrozenProfile(typed[app].for_type(t)) for t in TYPED.type_order}


def view(truth, batch=2048, replicas=4, belief=None, **fields) -> JobView:
    """A waiting job of ``truth``'s application, as a policy sees it."""
    limits = truth.limits
    values = {
        "name": "job",
        "application": truth.name,
        "arrival": 0.0,
        "age": 0.0,
        "attained_service": 0.0,
        "num_restarts": 0,
        "allocation": np.zeros(TYPED.nodes, dtype=np.int64),
        "requested_replicas": replicas,
        "requested_batch": batch,
        "limits": limits,
        "epoch": 0,
        "belief": belief or JobBelief(limits).view(),
        "truth": truth,
    }
    return JobView(**{**values, **fields})


def seconds(truth, batch: int, placement: tuple[int, ...]) -> float:
    """True seconds per iteration of a fixed batch on ``placement``, read afresh."""
    b, s = fixed_batch_config(batch, sum(placement), truth.limits, accumulate_on_one_gpu=True)
    step, sync = truth.step_sync(placement, b)
    return float(iteration_seconds(step, sync, s))


def belief_view(params=PARAMS, sqr=1.0, var=0.0, limits=None, version=3, fits=1, profiled=2):
    """A frozen belief with fitted parameters (limits: cifar10's on the bundled profile)."""
    limits = limits or load_profiles()["cifar10"].limits
    return BeliefView(params, sqr, var, limits, False, version, fits, profiled)


def table(result) -> str:
    return result.jobs.to_csv(index=False) + result.rounds.to_csv(index=False)


class Forgetful(dict):
    """A cache that never hits: every lookup is computed afresh."""

    def __contains__(self, key) -> bool:
        return False

    def get(self, key, default=None):
        return default


# ------------------------------------------------------------------------------- optimus
def test_optimus_iteration_times_follow_every_input(typed):
    policy = Optimus()
    by_type = truths(typed)
    aws = type_nodes(TYPED, "aws")
    cases = [  # (truth, batch, GPUs, nodes): each differs from the first in one input
        (by_type["aws"], 2048, 6, aws),
        (by_type["rtx"], 2048, 6, aws),  # the GPU type (another true profile)
        (by_type["aws"], 4096, 6, aws),  # the batch
        (by_type["aws"], 2048, 5, aws),  # the GPUs
        (by_type["aws"], 2048, 6, type_nodes(TYPED, "rtx")),  # the nodes: (6,), not (4, 2)
        (by_type["aws"], 2048, 6, type_nodes(UNEQUAL.with_offline({0}), "aws")),  # (2, 2, 2)
    ]
    values = []
    for truth, batch, replicas, nodes in cases:
        got = policy._iteration_time(view(truth, batch), replicas, nodes)
        assert got == seconds(truth, batch, nodes.packed_layout(replicas))
        values.append(got)
    assert len(set(values)) == len(values)


def test_optimus_packs_a_job_onto_the_nodes_up_of_its_own_type(typed):
    assert type_nodes(TYPED, "aws").packed_layout(8) == (4, 4)
    assert type_nodes(TYPED, "rtx").packed_layout(8) == (8,)
    assert type_nodes(TYPED, None).packed_layout(10) == (8, 2)
    assert type_nodes(UNEQUAL, "aws").packed_layout(6) == (6,)
    assert type_nodes(UNEQUAL.with_offline({0}), "aws").packed_layout(6) == (2, 2, 2)
    assert type_nodes(TYPED.with_offline({2}), "rtx") == TYPED.with_offline({2})  # none up
    uniform = ClusterSpec.uniform(16, 4)
    assert type_nodes(uniform, "T4") is uniform
    assert all(uniform.packed_layout(r) == packed_placement(r, 4) for r in range(1, 80))
    by_type = truths(typed)
    running = view(by_type["rtx"], gpu_type="rtx")
    waiting = view(by_type["rtx"], type_truths=MappingProxyType(by_type))
    assert _gpu_type(running) == _gpu_type(waiting) == "rtx"
    assert _gpu_type(view(by_type["rtx"])) is None  # one type: every node counts


def test_optimus_results_do_not_depend_on_its_cache(typed):
    """On two GPU types of two node sizes the cache returned another type's times; now a run
    with it equals a run that recomputes every time. Every job finishes: no job is given more
    GPUs than one type holds (a count no type can place kept a job waiting forever)."""
    runs = []
    for cache in (dict, Forgetful):
        sim = Simulation(JOBS, typed, Optimus(), TYPED, SimConfig(horizon=40000.0))
        sim.policy._time_cache = cache()
        runs.append(sim.run())
    assert table(runs[0]) == table(runs[1])
    assert runs[0].jobs["finished"].all()


def test_a_resized_job_stays_on_the_type_its_estimate_is_for():
    """Optimus places a job whose count changed on the type it is estimated for, if it has
    room; a type-blind fill would take the first type in order."""
    on_rtx = np.array([0, 0, 2], dtype=np.int64)
    base = dataclasses.replace(view(FrozenProfile(load_profiles()["cifar10"])), allocation=on_rtx)
    job = dataclasses.replace(base, name="a")
    blind = keep_or_fill([job], {"a": 3}, TYPED)
    preferred = keep_or_fill([job], {"a": 3}, TYPED, prefer={"a": 1})
    assert blind.allocations["a"].tolist() == [3, 0, 0]
    assert preferred.allocations["a"].tolist() == [0, 0, 3]
    full = keep_or_fill([job], {"a": 9}, TYPED, prefer={"a": 1})  # no room there: none at all
    assert "a" not in full.allocations


# --------------------------------------------------------------------------------- gavel
def test_gavel_speeds_follow_the_true_profile_and_placement(typed):
    by_type = truths(typed)
    other = dict(by_type, aws=FrozenProfile(typed["cifar10"].for_type("quad")))
    eight = ClusterSpec((NodeGroup(1, 8, "aws"), NodeGroup(1, 8, "rtx")))
    cases = [  # (type truths, batch, GPUs, cluster): each differs from the first in one input
        (by_type, 2048, 8, TYPED),
        (other, 2048, 8, TYPED),  # another true profile for the same type name
        (by_type, 4096, 8, TYPED),
        (by_type, 2048, 4, TYPED),
        (by_type, 2048, 8, eight),  # (8,) on one node instead of (4, 4)
    ]
    policy = Gavel()
    values = []
    for mapping, batch, replicas, cluster in cases:
        job = view(by_type["aws"], batch, replicas, type_truths=MappingProxyType(mapping))
        nodes = type_nodes(cluster, "aws")
        got = policy._speed(job, "aws", nodes)
        placement = nodes.packed_layout(replicas)
        truth = mapping["aws"]
        assert got == 1.0 / (seconds(truth, batch, placement) * truth.slowdown)
        values.append(got)
    assert len(set(values)) == len(values)


# ----------------------------------------------------------------------------------- sia
def test_sia_goodputs_follow_the_belief_model():
    """Two beliefs with the same version numbers but other parameters (say, of another run)
    get their own goodputs: the cache is checked against the model, not a counter."""
    nodes, gpus = np.array([1, 1, 2]), np.array([1, 4, 8])
    cases = [
        (belief_view(), nodes, gpus, None),
        (belief_view(OTHER_PARAMS), nodes, gpus, None),  # same version and fits, other params
        (belief_view(sqr=2.0, var=1.0), nodes, gpus, None),  # gradient statistics
        (belief_view(), nodes, np.array([1, 2, 8]), None),  # the shapes
        (belief_view(sqr=1.0, var=1000.0), nodes, gpus, None),  # noisy: large batches pay
        (belief_view(sqr=1.0, var=1000.0), nodes, gpus, "M0"),  # the batch priced up to
    ]
    policy = Sia()
    values = []
    for belief, n, g, cap in cases:
        cap = belief.goodput_model.init_batch_size if cap == "M0" else cap
        got = policy._goodputs(belief, n, g, cap)
        model = dataclasses.replace(  # priced in single precision, as the policy prices
            belief.goodput_model, single_precision=policy.values["pricing_precision"] == "single"
        )
        if cap is not None:
            model = dataclasses.replace(model, max_batch_size=cap)
        assert np.array_equal(got, model.optimize(n, g, True).goodput)
        assert not got.flags.writeable
        values.append(got.tobytes())
    assert len(set(values)) == len(values)


def test_sia_goodputs_are_shared_by_equal_models_only():
    """Jobs whose beliefs price the same model at the same shapes share one computation (the
    memo is keyed by the model and shapes, not by the job); any other model is computed anew."""
    nodes, gpus = np.array([1, 1, 2]), np.array([1, 4, 8])
    policy = Sia()
    first = policy._goodputs(belief_view(), nodes, gpus, None)
    assert policy._goodputs(belief_view(), nodes, gpus, None) is first
    assert policy._goodputs_at.cache_info().misses == 1
    other = policy._goodputs(belief_view(sqr=2.0, var=1.0), nodes, gpus, None)
    assert policy._goodputs_at.cache_info().misses == 2 and other is not first
    assert Sia()._goodputs_at is not policy._goodputs_at  # one memo per policy, per simulation


# ------------------------------------------------------------------------------- elastic
def test_best_goodputs_are_memoised_by_every_argument():
    policy = Goodput()
    model = belief_view().goodput_model
    base = (model, True, 8, 4, 4)
    changes = [
        (belief_view(OTHER_PARAMS).goodput_model, True, 8, 4, 4),
        (model, False, 8, 4, 4),
        (model, True, 6, 4, 4),
        (model, True, 8, 1, 4),
        (model, True, 8, 4, 2),
    ]
    first = policy._best_goodputs(*base)
    for args in changes:
        got = policy._best_goodputs(*args)
        assert np.array_equal(got, best_goodputs(*args))
        assert got.shape != first.shape or not np.array_equal(got, first)


def test_configuration_grids_are_shared_by_models_equal_but_for_statistics():
    """Beneath the best-goodput tables, candidate configurations and step times are memoised by
    the model without its gradient statistics: a change of statistics reuses the grid (and
    gives the values a fresh computation gives), a change of fitted parameters, limits or
    shapes builds another, and a grid is refused by a model it does not belong to."""
    policy = Goodput()
    grids = policy._best_goodputs._grids
    model = belief_view().goodput_model
    noisy = belief_view(sqr=1.0, var=1000.0).goodput_model
    for args in [(model, True, 8, 4, 4), (noisy, True, 8, 4, 4), (noisy, False, 8, 4, 4)]:
        assert np.array_equal(policy._best_goodputs(*args), best_goodputs(*args))
    assert (grids.cache_info().misses, grids.cache_info().hits) == (1, 2)
    changes = [
        (belief_view(OTHER_PARAMS).goodput_model, 8, 4, 4),
        (dataclasses.replace(model, max_batch_size=model.max_batch_size // 2), 8, 4, 4),
        (model, 6, 4, 4),
        (model, 8, 1, 4),
        (model, 8, 4, 2),
    ]
    for k, (other, *shape) in enumerate(changes, start=2):
        assert np.array_equal(
            policy._best_goodputs(other, True, *shape), best_goodputs(other, True, *shape)
        )
        assert grids.cache_info().misses == k
    grid = grids(without_statistics(model), 8, 4, 4)
    with pytest.raises(ValueError, match="another model"):
        changes[0][0].choose(grid)


def test_speedups_follow_belief_cap_and_fair_share(plain):
    """The per-job speedup cache (key: belief version, cap, fair share) against a fresh
    policy, as each input changes between rounds of one policy."""
    cifar = FrozenProfile(plain["cifar10"])
    cluster = ClusterSpec.uniform(3, 4)

    def snapshot(belief, others=0) -> Snapshot:
        jobs = [dataclasses.replace(view(cifar, belief=belief), allocation=np.zeros(3, np.int64))]
        jobs += [dataclasses.replace(jobs[0], name=f"other-{k}") for k in range(others)]
        return Snapshot(0.0, cluster, tuple(jobs), 30.0)

    rounds = [
        snapshot(belief_view(version=1)),
        snapshot(belief_view(OTHER_PARAMS, version=2)),  # a refit
        snapshot(belief_view(OTHER_PARAMS, version=2, profiled=1)),  # the cap: 2 GPUs
        snapshot(belief_view(OTHER_PARAMS, version=2, profiled=1), others=2),  # the fair share
    ]
    policy = Goodput()
    seen = []
    for snap in rounds:
        got = policy.problem(snap).speedup_tables[-1]
        assert np.array_equal(got, Goodput().problem(snap).speedup_tables[-1])
        seen.append(got)
    for before, after in zip(seen, seen[1:], strict=False):
        assert before.shape != after.shape or not np.array_equal(before, after)


def test_padded_speedups_belong_to_one_problem():
    problems = [
        AllocationProblem(
            ["a"],
            np.array([2]),
            np.ones(1),
            np.zeros((1, 1), np.int64),
            2,
            [np.array([[0.0, k, 2 * k]] * 3)],
        )
        for k in (1.0, 3.0)
    ]
    first, second = (p.padded_speedups for p in problems)
    assert first[0, 0, 1] == 1.0 and second[0, 0, 1] == 3.0


# -------------------------------------------------------------------------------- agents
def test_fastest_configurations_are_memoised_by_model_nodes_and_gpus():
    agent = get_agent("throughput")
    model = without_statistics(belief_view().goodput_model)
    base = (model, 1, 4)
    changes = [
        (without_statistics(belief_view(OTHER_PARAMS).goodput_model), 1, 4),
        (model, 2, 4),
        (model, 2, 8),
    ]
    first = agent._fastest(*base)
    assert first == _fastest_config(*base)
    for args in changes:
        assert agent._fastest(*args) == _fastest_config(*args)
    assert agent._fastest.cache_info().misses == 1 + len(changes)


def test_tail_plans_are_memoised_by_every_argument():
    agent = get_agent("tail-weighted")
    base = ("cosine", 16, 30, 20, 512.0, 128.0, 4096.0)
    first = agent._noise_blind(*base)
    assert not first.flags.writeable
    for k, value in enumerate(("step", 8, 40, 10, 1024.0, 256.0, 600.0)):
        args = base[:k] + (value,) + base[k + 1 :]
        got = agent._noise_blind(*args)
        assert np.array_equal(got, _noise_blind_plan(*args))
        assert got.shape != first.shape or not np.array_equal(got, first), args


# ------------------------------------------------------------------------------- beliefs
def test_fits_are_memoised_by_warm_start_and_observations():
    rows = ((1, 1, 128.0, 0.10, 0.10), (1, 2, 128.0, 0.10, 0.12), (2, 4, 128.0, 0.10, 0.16))
    memo = FitMemo()
    cases = [(None, rows), (PARAMS, rows), (None, rows[:2] + ((2, 4, 128.0, 0.1, 0.2),))]
    got = [memo.fitted(warm, data) for warm, data in cases]
    for (warm, data), params in zip(cases, got, strict=True):
        array = np.array(data).T
        assert params == ThroughputModel(warm_start=warm).fit(*array).params_
    assert got[0] != got[2]
    assert memo.fitted.cache_info().misses == len(cases)


def test_a_belief_view_is_rebuilt_whenever_what_it_shows_changes(plain):
    belief = JobBelief(plain["cifar10"].limits)
    first = belief.view()
    assert belief.view() is first
    belief.set_grad_stats(2.0, 1.0)
    second = belief.view()
    assert second is not first and (second.grad_sqr, second.grad_var) == (2.0, 1.0)
    belief.observe(1, 2, 128.0, 0.1, 0.02)  # more GPUs observed: a larger cap
    third = belief.view()
    assert third is not second and third.profiled_replicas == 2 and third.params is None
    belief.refresh()
    fourth = belief.view()
    assert fourth is not third and fourth.params is not None and fourth.fits == 1


def test_a_view_with_other_limits_has_its_own_goodput_model(typed):
    aws, dgx = (typed["cifar10"].for_type(t).limits for t in ("aws", "dgx-ext"))
    view_aws = belief_view(limits=aws)
    view_dgx = dataclasses.replace(view_aws, limits=dgx)
    assert view_aws.goodput_model.max_local_bsz == aws.max_local_bsz
    assert view_dgx.goodput_model.max_local_bsz == dgx.max_local_bsz != aws.max_local_bsz


# -------------------------------------------------------------------------------- engine
def test_a_plan_is_remade_when_what_it_depends_on_changes(typed):
    sim = Simulation(JOBS.iloc[:1], typed, get_policy("sia"), TYPED)
    job = sim.jobs[0]
    job.assign(np.array([2, 0, 0], dtype=np.int64))
    sim._switch_type(job)
    sim.planner.ensure(job, None)
    plan = job.plan
    sim.planner.ensure(job, None)
    assert job.plan is plan  # nothing changed
    changes = [
        lambda: setattr(job, "slowdown", 0.25),  # interference
        lambda: sim.planner.ensure(job, {"batch": 256}),  # a policy hint
        lambda: (
            job.type_beliefs["aws"].observe(1, 2, 256.0, 0.2, 0.05)
            or job.type_beliefs["aws"].refresh()
        ),  # a refit of what the agent reads
    ]
    for change in changes:
        change()
        sim.planner.ensure(job, None)
        assert job.plan is not plan
        plan = job.plan
    job.assign(np.array([0, 0, 2], dtype=np.int64))  # another type (and allocation)
    sim._switch_type(job)
    sim.planner.ensure(job, None)
    assert job.plan is not plan and job.plan.key[3] == "rtx"  # (..., GPU type, ...)


@pytest.mark.parametrize(
    "policy, cluster",
    [("goodput", PLAIN), ("throughput", PLAIN), ("sia", TYPED)],
    ids=["goodput", "throughput", "sia-typed"],
)
def test_shared_plans_change_no_result(policy, cluster, plain, typed):
    """Plans and true rates shared between jobs and rounds with equal inputs give the results
    of plans made afresh every time (each adaptive agent, one GPU type and two)."""
    profiles = typed if cluster is TYPED else plain
    runs = []
    for memo in (dict, Forgetful):
        sim = Simulation(JOBS, profiles, get_policy(policy), cluster, SimConfig(horizon=40000.0))
        sim.planner.memo, sim.planner.rates = memo(), memo()
        runs.append(sim.run())
    assert table(runs[0]) == table(runs[1])


def test_a_view_is_rebuilt_with_the_profile_of_the_type_a_job_moves_to(typed):
    """The view fields a job's profile fixes are kept between rounds and made anew when it
    moves to another GPU type: each view equals one built from nothing."""
    cluster = ClusterSpec((NodeGroup(2, 4, "aws"), NodeGroup(1, 8, "dgx-ext")))
    sim = Simulation(JOBS.iloc[:1], typed, get_policy("sia"), cluster)
    job = sim.jobs[0]  # cifar10: a larger per-GPU batch fits a dgx-ext GPU than an aws one
    limits = []
    for row in ([2, 0, 0], [0, 0, 2], [2, 0, 0]):  # aws, dgx-ext, aws again
        job.assign(np.array(row, dtype=np.int64))
        sim._switch_type(job)
        kept = sim.views.view(job, 10.0)
        job.view_fields = None
        assert kept == sim.views.view(job, 10.0)
        limits.append(kept.limits)
    assert limits[0] == limits[2] != limits[1]


def test_plans_are_shared_only_when_every_input_is_equal(plain):
    """Two jobs of one application on equal allocations with equal fits share one read-only
    plan, true rates included; another epoch, slowdown or allocation makes its own."""
    twins = pd.DataFrame(
        [("a", 0, "cifar10", 2, 256), ("b", 0, "cifar10", 2, 256)], columns=COLUMNS
    )
    sim = Simulation(twins, plain, get_policy("goodput"), PLAIN)
    a, b = sim.book.fresh(0), sim.book.fresh(1)
    for job in (a, b):
        job.assign(np.array([2] + [0] * 15, dtype=np.int64))
        sim.planner.ensure(job, None)
    assert a.plan.rate is b.plan.rate and not a.plan.rate.flags.writeable
    for change in (
        lambda job: setattr(job, "epoch", 1),
        lambda job: setattr(job, "slowdown", 0.25),
        lambda job: job.assign(np.array([1, 1] + [0] * 14, dtype=np.int64)),
    ):
        other = sim.book.fresh(1)
        other.assign(np.array([2] + [0] * 15, dtype=np.int64))
        change(other)
        sim.planner.ensure(other, None)
        assert other.plan.rate is not a.plan.rate


def test_type_speeds_and_truth_views_are_per_application_and_run(typed):
    first = Simulation(JOBS, typed, get_policy("gavel"), TYPED)
    second = Simulation(JOBS, typed, get_policy("gavel"), TYPED)
    cifar, yolo = first.jobs[0], first.jobs[3]
    speeds = first.views._type_speeds(cifar, "measurement")
    assert first.views._type_speeds(cifar, "measurement") is speeds
    assert first.views._type_speeds(yolo, "measurement") != speeds
    assert speeds == {t: typed["cifar10"].single_gpu_throughput(t) for t in TYPED.type_order}
    peak = first.views._type_speeds(cifar, "peak")  # the other reading is kept apart
    assert peak == {t: typed["cifar10"].peak_single_gpu_throughput(t) for t in TYPED.type_order}
    with pytest.raises(TypeError):
        speeds["aws"] = 1.0
    assert second.views._type_speeds(second.jobs[0], "measurement") is not speeds
    assert first.views.frozen(cifar.profile) is first.views.frozen(cifar.profile)
    assert first.views.frozen(yolo.profile)._profile is yolo.profile
    assert second.views.frozen(cifar.profile) is not first.views.frozen(cifar.profile)


# ------------------------------------------------------------------------------ profiles
def test_profile_memos_do_not_depend_on_the_order_of_lookups(plain):
    """Network times memoised by (nodes, GPUs), and per-epoch statistics built once per
    profile, equal a freshly loaded profile's whatever was asked before."""
    points = [(1, 2), (2, 8), (3, 12), (5, 20)]
    profile = plain["cifar10"]
    forward = [profile.network_time(n, r) for n, r in points]
    fresh = load_profiles()["cifar10"]
    backward = [fresh.network_time(n, r) for n, r in reversed(points)][::-1]
    assert forward == backward and len(set(forward)) == len(forward)
    stats = [load_profiles()[app].grad_stats(512.0, np.arange(3)) for app in ("cifar10", "bert")]
    assert np.array_equal(profile.grad_stats(512.0, np.arange(3)), stats[0])
    assert not np.array_equal(stats[0], stats[1])


def test_scattered_step_times_are_memoised_by_nodes_gpus_and_batch(tmp_path):
    folder = write_measurements(tmp_path / "toy")
    queries = [((4,) * 6, 8.0), ((4,) * 6, 16.0), ((2,) * 6, 8.0), ((4,) * 5, 8.0)]
    profile = MeasuredProfile(folder)
    forward = [profile.step_sync(p, [b]) for p, b in queries]
    fresh = MeasuredProfile(folder)
    backward = [fresh.step_sync(p, [b]) for p, b in reversed(queries)][::-1]
    for (step, sync), (step2, sync2) in zip(forward, backward, strict=True):
        assert step[0] == step2[0] and sync[0] == sync2[0]
    assert len({float(step[0]) for step, _ in forward}) == len(queries)


def test_a_typed_profile_loads_each_type_once():
    plain = load_profiles()
    calls: list[str] = []

    def loader(app: str, gpu_type: str):
        def load():
            calls.append(gpu_type)
            return plain[app]

        return load

    typed = TypedProfile("mix", {"a": loader("cifar10", "a"), "b": loader("bert", "b")})
    assert typed.for_type("a") is typed.for_type("a")
    assert typed.for_type("b") is not typed.for_type("a")
    assert typed.for_type("b").name == "bert"
    assert calls == ["a", "b"]


def test_cluster_vectors_belong_to_one_cluster_value():
    live = TYPED.with_offline({0})
    assert TYPED.capacity.tolist() == [4, 4, 8] and live.capacity.tolist() == [0, 4, 8]
    assert live.up.tolist() == [False, True, True] and TYPED.up.all()
    other = ClusterSpec((NodeGroup(1, 8, "rtx"), NodeGroup(2, 4, "aws")))
    assert other.type_order == ("rtx", "aws") and other.node_type_index.tolist() == [0, 1, 1]
    for array in (TYPED.capacity, live.capacity, live.up, other.node_type_index):
        assert not array.flags.writeable


# ------------------------------------------------------------------------------- sources
def test_a_generated_source_reads_its_statistics_file_afresh(tmp_path):
    """An edited statistics file changes the next workload drawn from it (a cache keyed by
    the file name alone kept the old statistics)."""
    stats = tmp_path / "stats.yaml"
    shutil.copy(ROOT / "traces" / "philly_stats.yaml", stats)
    source = WorkloadSource("drawn", None, (("jobs", 40), ("stats", str(stats))))
    before, _ = source.frame(1.0, 0)
    text = stats.read_text()
    text = text.replace("<1h: 0.782859", "<1h: 0.018726")
    text = text.replace("'>=100h': 0.018726", "'>=100h': 0.782859")
    stats.write_text(text)
    after, _ = source.frame(1.0, 0)
    assert not before.equals(after)
    assert after.equals(source.frame(1.0, 0)[0])
