"""The Sia MILP core (goodput_sim.policies.sia_milp) against brute-force enumeration."""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest

from goodput_sim.policies.sia_milp import SiaMilpResult, solve_sia_milp

LAMBDAS = (1.1, 0.5, 2.0)
RANDOM_CASES = 180


def brute_force(
    value, type_of, gpus, capacity, lambda_n, minimise=True, pinned=None, allowed=None
) -> float | None:
    """The optimal E over every assignment of each job to None or one configuration, or None
    when no assignment is feasible."""
    value = np.asarray(value, dtype=float)
    jobs, configs = value.shape
    pinned = pinned or {}
    best = None
    for choice in itertools.product([None, *range(configs)], repeat=jobs):
        if not _feasible(choice, type_of, gpus, capacity, pinned, allowed):
            continue
        e = _objective(value, choice, lambda_n)
        if best is None or (e < best if minimise else e > best):
            best = e
    return best


def _objective(value, choice, lambda_n) -> float:
    return math.fsum(lambda_n if c is None else value[i, c] for i, c in enumerate(choice))


def _feasible(choice, type_of, gpus, capacity, pinned, allowed) -> bool:
    used = [0] * len(capacity)
    for job, config in enumerate(choice):
        if job in pinned and config != pinned[job]:
            return False
        if config is None:
            continue
        if allowed is not None and not allowed[job][config]:
            return False
        used[type_of[config]] += gpus[config]
    return all(u <= cap for u, cap in zip(used, capacity, strict=True))


def _random_values(rng: np.random.Generator, jobs: int, configs: int, lambda_n: float):
    value = rng.uniform(0.05, 3.0, size=(jobs, configs))
    kind = rng.integers(0, 4, size=(jobs, configs))
    value[kind == 1] = 100.0 * rng.uniform(0.5, 1.5, size=int((kind == 1).sum()))
    value[kind == 2] = 1.0 + rng.uniform(-1e-3, 1e-3, size=int((kind == 2).sum()))
    value[kind == 3] = lambda_n + rng.uniform(-1e-4, 1e-4, size=int((kind == 3).sum()))
    return value


def random_instance(seed: int) -> dict:
    rng = np.random.default_rng(seed)
    jobs, configs, types = (int(rng.integers(1, k + 1)) for k in (4, 5, 3))
    lambda_n = LAMBDAS[seed % 3]
    inst = {
        "value": _random_values(rng, jobs, configs, lambda_n),
        "type_of": [int(t) for t in rng.integers(0, types, size=configs)],
        "gpus": [int(g) for g in rng.choice([1, 2, 4, 8], size=configs)],
        "capacity": [int(c) for c in rng.integers(0, 11, size=types)],
        "lambda_n": lambda_n,
        "minimise": bool(seed % 2 == 0),
        "pinned": None,
        "allowed": None,
    }
    if rng.random() < 0.3:
        picks = rng.choice(jobs, size=int(rng.integers(1, min(jobs, 2) + 1)), replace=False)
        inst["pinned"] = {int(j): int(rng.integers(0, configs)) for j in picks}
    if rng.random() < 0.3:
        mask = rng.random((jobs, configs)) < 0.6
        for job, config in (inst["pinned"] or {}).items():
            mask[job, config] = True
        inst["allowed"] = mask
    return inst


def assert_feasible(result: SiaMilpResult, inst: dict) -> None:
    jobs = np.asarray(inst["value"]).shape[0]
    assert len(result.choice) == jobs
    for config in result.choice:
        assert config is None or (isinstance(config, int) and 0 <= config < len(inst["gpus"]))
    assert _feasible(
        result.choice,
        inst["type_of"],
        inst["gpus"],
        inst["capacity"],
        inst["pinned"] or {},
        inst["allowed"],
    )
    expected = _objective(np.asarray(inst["value"]), result.choice, inst["lambda_n"])
    assert result.objective == pytest.approx(expected, rel=1e-12)


@pytest.mark.parametrize("seed", range(RANDOM_CASES))
def test_matches_brute_force(seed: int) -> None:
    inst = random_instance(seed)
    best = brute_force(**inst)
    if best is None:  # only random pins can make an instance infeasible
        with pytest.raises(ValueError, match="pinned job"):
            solve_sia_milp(**inst)
        return
    result = solve_sia_milp(**inst)
    assert result.optimal, result.status
    assert_feasible(result, inst)
    assert math.isclose(result.objective, best, rel_tol=1e-9, abs_tol=1e-12)


@pytest.mark.parametrize("seed", range(12))
def test_exact_for_close_values(seed: int) -> None:
    """Values within 1e-7 of lambda_n, or beside a huge one, differ by less than HiGHS's default
    tolerances; the optimum must still be found."""
    rng = np.random.default_rng(1000 + seed)
    configs = 5
    value = 1.1 + rng.uniform(-1e-7, 1e-7, size=(4, configs))
    if seed % 2:
        value = 1.1 + rng.uniform(-1e-5, 1e-5, size=(4, configs))
        value[rng.random(value.shape) < 0.3] = 1000.0
    inst = dict(
        value=value,
        type_of=[int(t) for t in rng.integers(0, 2, size=configs)],
        gpus=[int(g) for g in rng.choice([1, 2, 4, 8], size=configs)],
        capacity=[5, 7],
        lambda_n=1.1,
        minimise=seed % 4 < 2,
    )
    result = solve_sia_milp(**inst)
    assert result.objective == pytest.approx(brute_force(**inst), rel=1e-13)


def test_random_cases_cover_the_variants() -> None:
    cases = [random_instance(seed) for seed in range(RANDOM_CASES)]
    feasible = [c for c in cases if brute_force(**c) is not None]
    assert len(feasible) >= 150
    assert sum(c["pinned"] is not None for c in feasible) >= 20
    assert sum(c["allowed"] is not None for c in feasible) >= 20
    assert {c["minimise"] for c in feasible} == {True, False}
    assert {c["lambda_n"] for c in feasible} == set(LAMBDAS)


def test_deterministic() -> None:
    rng = np.random.default_rng(7)
    jobs, configs = 40, 12
    # Many equal values make many optima; the same inputs must still give the same one.
    value = rng.choice([0.5, 0.8, 1.0], size=(jobs, configs))
    args = (value, [c % 3 for c in range(configs)], [1, 2, 4, 8] * 3, [16, 12, 20], 1.1)
    first = solve_sia_milp(*args)
    second = solve_sia_milp(value.copy(), *args[1:])
    assert first == second
    assert first.optimal


def test_zero_jobs() -> None:
    result = solve_sia_milp(np.empty((0, 3)), [0, 0, 1], [1, 2, 4], [4, 4], 1.1)
    assert result == SiaMilpResult((), 0.0, "optimal")


def test_zero_configurations() -> None:
    result = solve_sia_milp(np.empty((3, 0)), [], [], [4], 2.0)
    assert result.choice == (None, None, None)
    assert result.objective == pytest.approx(6.0)


def test_zero_capacity_type_unused() -> None:
    value = np.array([[0.1, 0.9], [0.2, 0.8], [0.3, 0.7]])
    inst = dict(value=value, type_of=[0, 1], gpus=[1, 1], capacity=[0, 2], lambda_n=1.1)
    result = solve_sia_milp(**inst)
    assert all(c != 0 for c in result.choice)
    assert result.choice.count(1) == 2
    assert result.objective == pytest.approx(brute_force(**inst), rel=1e-9)
    assert result.objective == pytest.approx(0.8 + 0.7 + 1.1)


def test_nothing_helps_when_minimising() -> None:
    rng = np.random.default_rng(3)
    jobs = 6
    value = rng.uniform(1.2, 50.0, size=(jobs, 4))
    result = solve_sia_milp(value, [0, 0, 1, 1], [1, 2, 1, 4], [8, 8], 1.1)
    assert result.choice == (None,) * jobs
    assert result.objective == pytest.approx(jobs * 1.1, rel=1e-12)


def test_maximising_prefers_large_values() -> None:
    value = np.array([[5.0, 0.1], [0.2, 3.0]])
    result = solve_sia_milp(value, [0, 0], [2, 2], [2], 1.1, minimise=False)
    assert result.choice == (0, None)
    assert result.objective == pytest.approx(6.1)


def test_pin_forces_worse_choice() -> None:
    value = np.array([[0.1, 0.5], [0.2, 0.3]])
    result = solve_sia_milp(value, [0, 0], [1, 1], [1], 1.1, pinned={1: 1})
    assert result.choice == (None, 1)
    assert result.objective == pytest.approx(1.4)


def test_infeasible_pins_name_the_job() -> None:
    value = np.ones((3, 2))
    with pytest.raises(ValueError, match="pinned job 2"):
        solve_sia_milp(value, [0, 1], [4, 2], [6, 2], 1.1, pinned={0: 0, 2: 0})
    with pytest.raises(ValueError, match="pinned job 1"):
        solve_sia_milp(value, [0, 1], [4, 2], [6, 0], 1.1, pinned={1: 1})


@pytest.mark.parametrize(
    ("change", "match"),
    [
        ({"value": np.ones(3)}, "matrix"),
        ({"value": np.full((2, 3), np.nan)}, "finite"),
        ({"type_of": [0, 1]}, "type_of"),
        ({"type_of": [0, 1, 2]}, "type_of entries"),
        ({"gpus": [1, 0, 2]}, "positive"),
        ({"gpus": [1, 1.5, 2]}, "integers"),
        ({"capacity": [4, -1]}, "non-negative"),
        ({"allowed": np.ones((3, 2), dtype=bool)}, "allowed"),
        ({"pinned": {2: 0}}, "pinned job 2"),
        ({"pinned": {0: 3}}, "pinned job 0"),
        ({"pinned": {0: 1}, "allowed": [[True, False, True], [True, True, True]]}, "not allowed"),
        ({"lambda_n": math.inf}, "lambda_n"),
    ],
)
def test_invalid_inputs(change: dict, match: str) -> None:
    inst = dict(value=np.ones((2, 3)), type_of=[0, 1, 1], gpus=[1, 2, 4], capacity=[4, 4])
    inst["lambda_n"] = 1.1
    inst.update(change)
    with pytest.raises(ValueError, match=match):
        solve_sia_milp(**inst)


def test_large_instance_is_feasible() -> None:
    rng = np.random.default_rng(11)
    jobs, configs, types = 500, 30, 3
    inst = {
        "value": rng.uniform(0.05, 5.0, size=(jobs, configs)),
        "type_of": [c % types for c in range(configs)],
        "gpus": [int(g) for g in rng.choice([1, 2, 4, 8], size=configs)],
        "capacity": [256, 128, 128],
        "lambda_n": 1.1,
        "pinned": {0: 0, 1: 1},
        "allowed": None,
    }
    result = solve_sia_milp(**inst)
    assert_feasible(result, inst)


# --- the staged solve against an independent exact MILP on Sia-sized programs -----------------


def oracle(value, type_of, gpus, capacity, lambda_n, minimise=True, pinned=None) -> float:
    """The optimal E by SciPy's own MILP (HiGHS through scipy.optimize.milp, both gaps 0, the
    costs as given), independent of the staged solve."""
    from scipy.optimize import Bounds, LinearConstraint, milp

    value = np.asarray(value, dtype=float)
    jobs, configs = value.shape
    cost = (value - lambda_n).ravel() * (1.0 if minimise else -1.0)
    rows = [np.kron(np.eye(jobs), np.ones(configs))]
    for t in range(len(capacity)):
        rows.append(np.tile(np.where(np.asarray(type_of) == t, gpus, 0), jobs)[None, :])
    lower = np.zeros(jobs * configs)
    for job, config in (pinned or {}).items():
        lower[job * configs + config] = 1.0
    res = milp(
        cost,
        integrality=np.ones(cost.shape[0]),
        bounds=Bounds(lower, np.ones(cost.shape[0])),
        constraints=LinearConstraint(np.vstack(rows), -np.inf, np.r_[np.ones(jobs), capacity]),
        options={"mip_rel_gap": 0.0, "presolve": True},
    )
    assert res.status == 0, res.message
    choice = tuple(
        int(np.flatnonzero(row)[0]) if row.any() else None
        for row in res.x.reshape(jobs, configs) > 0.5
    )
    return _objective(value, choice, lambda_n)


def sia_like_instance(seed: int, on_grid: bool, decimals: int = 2) -> dict:
    """Three GPU types with Sia's configuration shapes, jobs whose values fall with more GPUs
    (power -0.5 of a concave speed-up), restart-like discounts, and capacities that bind;
    values rounded to ``decimals`` when ``on_grid`` (1 decimal: many ties)."""
    rng = np.random.default_rng(seed)
    sizes = [(0, g) for g in (1, 2, 4, 8, 12, 16)] + [(1, g) for g in (1, 2, 4, 8, 16, 24)]
    sizes += [(2, g) for g in (1, 2, 4, 8, 16)]
    type_of = [t for t, _ in sizes]
    gpus = [g for _, g in sizes]
    jobs = int(rng.integers(15, 45))
    speed = rng.uniform(0.3, 2.0, size=(jobs, 3))[:, type_of]
    scaling = rng.uniform(0.4, 0.95, size=(jobs, 1))
    goodput = speed * np.asarray(gpus, dtype=float)[None, :] ** scaling
    goodput *= np.where(rng.random((jobs, 1)) < 0.5, rng.uniform(0.6, 1.0, size=(jobs, 1)), 1.0)
    value = goodput**-0.5
    if on_grid:
        value = np.round(value, decimals)
    pinned = {0: int(rng.integers(0, len(sizes)))} if seed % 3 == 0 else None
    capacity = [int(c) for c in rng.integers(6, 40, size=3)]
    if pinned:
        capacity[type_of[pinned[0]]] += gpus[pinned[0]]
    return dict(
        value=value,
        type_of=type_of,
        gpus=gpus,
        capacity=capacity,
        lambda_n=1.1,
        minimise=True,
        pinned=pinned,
    )


VARIANTS = [(True, 2), (True, 1), (False, 2)]  # (on the 0.01 grid, decimals)


@pytest.mark.parametrize("variant", VARIANTS)
@pytest.mark.parametrize("seed", range(16))
def test_staged_solve_matches_exact_milp(seed: int, variant: tuple[bool, int]) -> None:
    inst = sia_like_instance(seed, *variant)
    result = solve_sia_milp(**inst)
    assert result.optimal
    assert_feasible(result, {**inst, "allowed": None})
    assert result.objective == pytest.approx(oracle(**inst), rel=1e-9, abs=1e-9)


def test_sia_like_instances_reach_every_stage(monkeypatch) -> None:
    """The instances above are solved by the relaxation alone, by the feasible answer meeting
    its bound, and by branch and bound: each stage is checked against the exact MILP."""
    import goodput_sim.policies.sia_milp as module

    seen = []
    for name in ("_relax", "_feasible_answer", "_branch_and_bound", "_knapsack_on_type"):
        original = getattr(module, name)

        def spy(*args, _name=name, _original=original, **kwargs):
            seen.append(_name)
            return _original(*args, **kwargs)

        monkeypatch.setattr(module, name, spy)
    for seed in range(16):
        for variant in VARIANTS:
            solve_sia_milp(**sia_like_instance(seed, *variant))
    assert {"_relax", "_feasible_answer", "_branch_and_bound", "_knapsack_on_type"} <= set(seen)
    assert seen.count("_feasible_answer") > seen.count("_branch_and_bound") > 0


def test_answers_do_not_depend_on_what_was_solved_before() -> None:
    """HiGHS instances are kept between programs (one per thread): each program gets the same
    answer whichever programs came before it, and in a thread with instances of its own."""
    from concurrent.futures import ThreadPoolExecutor

    instances = [sia_like_instance(seed, *variant) for seed in range(6) for variant in VARIANTS]
    forward = [solve_sia_milp(**inst).choice for inst in instances]
    backward = [solve_sia_milp(**inst).choice for inst in reversed(instances)][::-1]
    with ThreadPoolExecutor(max_workers=1) as pool:
        fresh = [pool.submit(solve_sia_milp, **inst).result().choice for inst in instances[::3]]
    assert forward == backward
    assert fresh == forward[::3]


@pytest.mark.parametrize("gap", [1e-4, 1e-2, 0.1])
def test_relative_gap_bounds_the_loss(gap: float) -> None:
    for seed in range(6):
        inst = sia_like_instance(seed, on_grid=True)
        best = oracle(**inst)
        result = solve_sia_milp(**inst, mip_rel_gap=gap)
        assert_feasible(result, {**inst, "allowed": None})
        shift = inst["lambda_n"] * len(inst["value"])  # the program's objective is E less this
        assert result.objective - shift <= (best - shift) * (1 - gap) + 1e-9


@pytest.mark.parametrize("gap", [-1e-4, 1.0, math.nan, "0"])
def test_invalid_gap(gap) -> None:
    with pytest.raises(ValueError, match="mip_rel_gap"):
        solve_sia_milp(np.ones((2, 1)), [0], [1], [1], 1.1, mip_rel_gap=gap)


def test_useful_cells_keep_what_dominance_allows() -> None:
    """A cell is left out only when a cell of its job and type with no more GPUs is at least as
    good, or when it is no better than leaving the job out (pins aside)."""
    from goodput_sim.policies.sia_milp import _useful_cells, _validate

    rng = np.random.default_rng(5)
    for _ in range(40):
        jobs, configs = 6, 9
        allowed = rng.random((jobs, configs)) < 0.8
        allowed[1, 2] = True
        inst = _validate(
            rng.choice([0.4, 0.6, 0.8, 1.0, 1.2], size=(jobs, configs)),
            rng.integers(0, 2, size=configs),
            rng.choice([1, 2, 4], size=configs),
            [8, 8],
            1.1,
            {1: 2},
            allowed,
        )
        kept = set(_useful_cells(inst, minimise=True).tolist())
        for job in range(jobs):
            for c in range(configs):
                v = inst.value[job, c]
                beaten = any(
                    inst.allowed[job, d]
                    and inst.type_of[d] == inst.type_of[c]
                    and inst.gpus[d] < inst.gpus[c]
                    and inst.value[job, d] <= v
                    for d in range(configs)
                )
                useful = inst.allowed[job, c] and v < 1.1 and not beaten
                assert (job * configs + c in kept) == (useful or inst.pinned.get(job) == c)
