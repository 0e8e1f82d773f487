"""sia's compiled feasible answer (:mod:`goodput_sim.policies.sia_kernels`) against the numpy
and Python code it replaced (kept here as the oracle): the same answer, column for column, on
sia-like and random programs, with every stage run."""

from __future__ import annotations

import math

import numpy as np
import pytest
from numpy.typing import NDArray
from test_sia_milp import VARIANTS, random_instance, sia_like_instance

import goodput_sim.policies.sia_milp as m


def python_feasible_answer(program, relaxation, bound: float, gap: float) -> NDArray[np.float64]:
    """A good answer near the relaxation's optimum: its integral part (pins included), unassigned
    jobs filled greedily by cost, then improved by moving one job at a time and by an exact
    knapsack over each type's GPUs, twice, until it meets ``bound``. Each step keeps it feasible
    and never worsens it; the knapsacks use only the columns whose reduced cost leaves them a
    chance to improve it (as ``_fixed_by_reduced_cost``)."""
    choice = np.full(program.jobs, -1)
    taken = np.flatnonzero((relaxation.x > 1 - 1e-9) | (program.lower > 0))
    choice[program.job_of[taken]] = taken
    if np.any(m._left(program, choice) < 0):  # round-off in the relaxation: from the pins alone
        choice[:] = -1
        taken = np.flatnonzero(program.lower > 0)
        choice[program.job_of[taken]] = taken
    pinned = np.zeros(program.jobs, dtype=bool)
    pinned[program.job_of[program.lower > 0]] = True
    columns = python_columns_by_job(program)
    python_fill_greedily(program, choice)
    python_move_one_at_a_time(program, choice, columns, pinned)
    for _ in range(2):
        value = float(program.cost[choice[choice >= 0]].sum())
        if m._within(value, bound, gap, program.step):
            break
        room = value - relaxation.objective + m._slack(relaxation.objective)
        usable = relaxation.reduced <= room
        for gpu_type in range(program.capacity.shape[0]):
            python_knapsack_on_type(program, choice, columns, pinned, gpu_type, usable)
        python_move_one_at_a_time(program, choice, columns, pinned)
    answer = np.zeros(program.columns)
    answer[choice[choice >= 0]] = 1.0
    return answer


def python_columns_by_job(program) -> list[NDArray[np.int64]]:
    """Each job's columns (the columns are ordered by job)."""
    bounds = np.searchsorted(program.job_of, np.arange(program.jobs + 1))
    return [np.arange(bounds[j], bounds[j + 1]) for j in range(program.jobs)]


def python_fill_greedily(program, choice: NDArray[np.int64]) -> None:
    """Unassigned jobs take their cheapest column that fits, cheapest columns first."""
    left = m._left(program, choice)
    for column in np.argsort(program.cost, kind="stable"):
        job, gpu_type = program.job_of[column], program.type_of[column]
        if program.cost[column] >= 0:
            break
        if choice[job] < 0 and program.gpus[column] <= left[gpu_type]:
            choice[job] = column
            left[gpu_type] -= program.gpus[column]


def python_move_one_at_a_time(
    program,
    choice: NDArray[np.int64],
    columns: list[NDArray[np.int64]],
    pinned: NDArray[np.bool_],
    passes: int = 3,
) -> None:
    """Each unpinned job in turn moves to its cheapest column that fits, while any improves."""
    left = m._left(program, choice)
    cost, gpus, types = program.cost, program.gpus, program.type_of
    for _ in range(passes):
        moved = False
        for job in np.flatnonzero(~pinned):
            mine, current = columns[job], choice[job]
            room = left[types[mine]]
            if current >= 0:
                room = room + np.where(types[mine] == types[current], gpus[current], 0)
            now = cost[current] if current >= 0 else 0.0
            better = np.flatnonzero((gpus[mine] <= room) & (cost[mine] < now))
            if not len(better):
                continue
            best = mine[better[np.argmin(cost[mine][better])]]
            if current >= 0:
                left[types[current]] += gpus[current]
            left[types[best]] -= gpus[best]
            choice[job] = best
            moved = True
        if not moved:
            return


def python_knapsack_on_type(
    program,
    choice: NDArray[np.int64],
    columns: list[NDArray[np.int64]],
    pinned: NDArray[np.bool_],
    gpu_type: int,
    usable: NDArray[np.bool_],
) -> None:
    """The unpinned jobs on ``gpu_type`` and the unassigned ones re-chosen exactly among their
    ``usable`` columns of that type (or none) within its GPUs not taken by the others: a
    multiple-choice knapsack by dynamic programming over GPU counts. The current choice is one
    of its answers (its columns are usable), so the objective never worsens."""
    current_type = np.where(choice >= 0, program.type_of[np.maximum(choice, 0)], -1)
    members = np.flatnonzero(~pinned & ((current_type == gpu_type) | (choice < 0)))
    on_type = choice[members][current_type[members] == gpu_type]
    room = m._left(program, choice)[gpu_type] + program.gpus[on_type].sum()
    size = int(math.floor(room + 1e-9))
    if not len(members) or size < 0 or len(members) * (size + 1) > m._KNAPSACK_STATES:
        return
    best = np.zeros(size + 1)  # best[g]: least cost with at most g GPUs, over the jobs so far
    picks = []
    for job in members:
        mine = columns[job]
        mine = mine[usable[mine] & (program.type_of[mine] == gpu_type)]
        mine = mine[program.gpus[mine] <= size]
        pick = np.full(size + 1, -1)
        after = best.copy()
        for column in mine:
            g = int(program.gpus[column])
            candidate = best[: size + 1 - g] + program.cost[column]
            better = candidate < after[g:]
            after[g:] = np.where(better, candidate, after[g:])
            pick[g:] = np.where(better, column, pick[g:])
        best = after
        picks.append(pick)
    g = int(np.argmin(best))
    for job, pick in zip(members[::-1], picks[::-1], strict=True):
        column = int(pick[g])
        if column >= 0:
            choice[job] = column
            g -= int(program.gpus[column])
        elif current_type[job] == gpu_type:
            choice[job] = -1


def programs():
    """(program, relaxation) of sia-like and random instances that reach the relaxation."""
    instances = [sia_like_instance(seed, *v) for seed in range(12) for v in VARIANTS]
    instances += [random_instance(seed) for seed in range(120)]
    for seed in range(12):  # coarse values: many jobs with equally cheap columns
        inst = sia_like_instance(100 + seed, on_grid=False)
        instances.append({**inst, "value": np.round(inst["value"] * 4) / 4})
    for inst in instances:
        minimise = inst.get("minimise", True)
        checked = m._validate(
            inst["value"],
            inst["type_of"],
            inst["gpus"],
            inst["capacity"],
            inst["lambda_n"],
            inst.get("pinned"),
            inst.get("allowed"),
        )
        cells = m._useful_cells(checked, minimise)
        if not len(cells) or m._each_at_its_best(checked, minimise, cells) is not None:
            continue
        program = m._program(checked, cells, minimise)
        relaxation = m._relax(program)
        if relaxation is not None:
            yield program, relaxation


PROGRAMS = list(programs())


def test_the_programs_are_many_and_some_fractional():
    fractional = [r for _, r in PROGRAMS if np.abs(r.x - np.round(r.x)).max() > 1e-9]
    assert len(PROGRAMS) > 60 and len(fractional) > 20


@pytest.mark.parametrize("case", range(len(PROGRAMS)))
@pytest.mark.parametrize("until", ["bound", "never"])
def test_feasible_answer_matches_python(case, until):
    program, relaxation = PROGRAMS[case]
    bound = relaxation.objective if until == "bound" else -math.inf  # never: every stage runs
    got = m._feasible_answer(program, relaxation, bound, 0.0)
    want = python_feasible_answer(program, relaxation, bound, 0.0)
    assert np.array_equal(got, want)


def tied_program(seed: int) -> m._Program:
    """A random program whose costs take few values (many ties), its columns ordered by job."""
    rng = np.random.default_rng(seed)
    jobs, types = int(rng.integers(1, 9)), int(rng.integers(1, 4))
    per_job = rng.integers(1, 6, size=jobs)
    job_of = np.repeat(np.arange(jobs), per_job)
    columns = len(job_of)
    return m._Program(
        cost=-rng.integers(0, 4, size=columns).astype(float),
        lower=np.zeros(columns),
        upper=np.ones(columns),
        job_of=job_of,
        type_of=rng.integers(0, types, size=columns),
        gpus=rng.choice([1, 2, 4], size=columns),
        capacity=rng.integers(0, 9, size=types).astype(float),
        jobs=jobs,
        step=1.0,
    )


def random_choice(program: m._Program, seed: int) -> NDArray[np.int64]:
    """A feasible choice: each job in turn a random one of its columns, when it fits."""
    rng = np.random.default_rng(seed + 2)
    choice = np.full(program.jobs, -1)
    left = program.capacity.copy()
    for job, mine in enumerate(python_columns_by_job(program)):
        column = int(rng.choice(mine))
        if program.gpus[column] <= left[program.type_of[column]]:
            choice[job] = column
            left[program.type_of[column]] -= program.gpus[column]
    return choice


@pytest.mark.parametrize("seed", range(150))
def test_moves_and_knapsacks_break_ties_as_python(seed):
    from goodput_sim.policies import sia_kernels as kernels

    program = tied_program(seed)
    pinned = np.random.default_rng(seed).random(program.jobs) < 0.2
    bounds = np.searchsorted(program.job_of, np.arange(program.jobs + 1))
    columns = python_columns_by_job(program)
    got, want = np.full(program.jobs, -1), np.full(program.jobs, -1)
    order = np.argsort(program.cost, kind="stable")
    table = (program.cost, program.job_of, program.type_of, program.gpus)
    kernels.fill_greedily(order, *table, got, m._left(program, got))
    python_fill_greedily(program, want)
    assert np.array_equal(got, want)
    moves = (program.cost, program.type_of, program.gpus, bounds, pinned)
    for start in (want.copy(), random_choice(program, seed)):  # greedy, then any feasible
        got, want = start.copy(), start.copy()
        kernels.move_one_at_a_time(*moves, got, m._left(program, got), 3)
        python_move_one_at_a_time(program, want, columns, pinned)
        assert np.array_equal(got, want)
    usable = np.random.default_rng(seed + 1).random(program.columns) < 0.8
    for gpu_type in range(program.capacity.shape[0]):
        m._knapsack_on_type(program, got, bounds, pinned, gpu_type, usable)
        python_knapsack_on_type(program, want, columns, pinned, gpu_type, usable)
        assert np.array_equal(got, want)
