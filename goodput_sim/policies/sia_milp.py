"""Sia's (SOSP'23) per-round allocation as a MILP over (job, configuration) pairs with per-GPU-type
capacities, solved by HiGHS (``highspy``): deterministic, no commercial solver.

Variables are binary ``X[i, c]`` (job ``i`` runs in configuration ``c``). The objective is

    E = sum_{i,c} value[i, c] * X[i, c] + lambda_n * (J - sum_{i,c} X[i, c]),

minimised for fairness power p < 0 (smaller transformed values are better) and maximised for
p > 0. Each job takes at most one configuration, and the GPUs taken of each type fit its capacity.

A round's program is solved in stages, each exact (with ``mip_rel_gap`` 0), cheapest first:

1. cells that cannot be in an optimal answer are left out (:func:`_useful_cells`), and when every
   job's own best cell fits at once that is the answer;
2. the linear relaxation: when its optimum is integral, it is the answer;
3. a feasible answer from the relaxation (its integral part, filled greedily, improved by moving
   one job at a time and by an exact knapsack over each type's GPUs): when its objective meets the
   relaxation's bound (rounded up to the next attainable value when the objective moves in steps,
   as with Sia's values rounded to 2 decimals), it is optimal;
4. otherwise branch and bound, on the cells whose reduced cost can still lead to an answer at
   least as good as that feasible one (reduced-cost fixing), started from it.
"""

from __future__ import annotations

import math
import os
import sys
import threading
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass

import highspy
import numpy as np
from numpy.typing import ArrayLike, NDArray

__all__ = ["SiaMilpResult", "assignment_objective", "solve_sia_milp"]

OPTIMAL = "optimal"

# HiGHS's feasibility tolerances are absolute (default 1e-7) and hid differences between values
# close to each other or to lambda_n: tightened to HiGHS's floor of 1e-10.
_TOLERANCES = {
    "primal_feasibility_tolerance": 1e-10,
    "dual_feasibility_tolerance": 1e-10,
    "mip_feasibility_tolerance": 1e-10,
}
# Sia rounds its values to 2 decimals: costs that are whole multiples of STEP are solved in units
# of STEP, where every objective value is an integer.
STEP = 0.01
# The per-type knapsack of stage 3 is skipped beyond this many (job, GPU count) states.
_KNAPSACK_STATES = 2_000_000


@dataclass(frozen=True)
class SiaMilpResult:
    """One round's answer.

    ``choice[i]`` is job ``i``'s configuration index, or None when it gets no GPUs; ``objective``
    is E recomputed from ``choice``; ``status`` is ``"optimal"`` when optimality is proven (or
    there was nothing to solve), else the solver's message."""

    choice: tuple[int | None, ...]
    objective: float
    status: str

    @property
    def optimal(self) -> bool:
        return self.status == OPTIMAL


@dataclass(frozen=True)
class _Instance:
    """Validated inputs as numpy arrays."""

    value: NDArray[np.float64]  # (J, C)
    type_of: NDArray[np.int64]  # (C,)
    gpus: NDArray[np.int64]  # (C,)
    capacity: NDArray[np.float64]  # (T,)
    lambda_n: float
    pinned: dict[int, int]
    allowed: NDArray[np.bool_]  # (J, C)

    @property
    def jobs(self) -> int:
        return self.value.shape[0]

    @property
    def configs(self) -> int:
        return self.value.shape[1]

    @property
    def types(self) -> int:
        return self.capacity.shape[0]


def solve_sia_milp(
    value: ArrayLike,
    type_of: ArrayLike,
    gpus: ArrayLike,
    capacity: ArrayLike,
    lambda_n: float,
    minimise: bool = True,
    pinned: Mapping[int, int] | None = None,
    allowed: ArrayLike | None = None,
    *,
    mip_rel_gap: float = 0.0,
) -> SiaMilpResult:
    """Choose at most one configuration per job, optimising E.

    ``value`` is (J, C); ``type_of`` and ``gpus`` give each configuration's GPU type (index into
    ``capacity``) and GPU count; ``pinned`` maps a job to the configuration it must take;
    ``allowed`` is a (J, C) boolean mask, False forcing ``X[i, c] = 0``.

    The program minimises ``sum (value - lambda_n) * X`` (negated when maximising; E less the
    constant ``lambda_n * J``). With ``mip_rel_gap`` 0 (the default) the answer is the exact
    optimum, as the tests check by brute-force enumeration; a positive ``mip_rel_gap`` accepts an
    answer whose objective is within that fraction of its own magnitude of the best bound proven
    (HiGHS's relative gap, on this objective). Costs that are whole multiples of 0.01 (Sia's
    values rounded to 2 decimals, with such a ``lambda_n``) are solved exactly in units of 0.01;
    others are scaled to a median magnitude of 1, and differences below about 1e-9 of a typical
    ``|value - lambda_n|`` may be lost to HiGHS's tolerances.

    Every stage is deterministic (HiGHS on one thread, no time limit): identical inputs give the
    identical choice, also among tied optima.

    Raises ValueError for malformed inputs or pins that cannot all be honoured at once.
    """
    if not (isinstance(mip_rel_gap, int | float) and 0.0 <= mip_rel_gap < 1.0):
        raise ValueError(f"mip_rel_gap must be in [0, 1), got {mip_rel_gap!r}")
    inst = _validate(value, type_of, gpus, capacity, lambda_n, pinned, allowed)
    _check_pins_fit(inst)
    if inst.jobs == 0 or inst.configs == 0:
        choice: tuple[int | None, ...] = (None,) * inst.jobs
        return SiaMilpResult(
            choice, assignment_objective(inst.value, choice, inst.lambda_n), OPTIMAL
        )

    cells = _useful_cells(inst, minimise)
    if not len(cells):
        choice = (None,) * inst.jobs
        return SiaMilpResult(
            choice, assignment_objective(inst.value, choice, inst.lambda_n), OPTIMAL
        )
    alone = _each_at_its_best(inst, minimise, cells)
    if alone is not None:  # every job's own best fits at once: that is the optimum
        return SiaMilpResult(alone, assignment_objective(inst.value, alone, inst.lambda_n), OPTIMAL)
    program = _program(inst, cells, minimise)
    x, status = _solve(program, float(mip_rel_gap))
    full = np.zeros(inst.jobs * inst.configs)
    full[cells] = x
    choice = _decode(full, inst)
    _check_feasible(choice, inst)
    return SiaMilpResult(choice, assignment_objective(inst.value, choice, inst.lambda_n), status)


def assignment_objective(
    value: ArrayLike, choice: tuple[int | None, ...], lambda_n: float
) -> float:
    """E for a given choice: chosen values plus ``lambda_n`` per unassigned job."""
    table = np.asarray(value, dtype=float)
    terms = [lambda_n if c is None else float(table[i, c]) for i, c in enumerate(choice)]
    return math.fsum(terms)


# --- validation -------------------------------------------------------------------------------


def _validate(
    value: ArrayLike,
    type_of: ArrayLike,
    gpus: ArrayLike,
    capacity: ArrayLike,
    lambda_n: float,
    pinned: Mapping[int, int] | None,
    allowed: ArrayLike | None,
) -> _Instance:
    table = np.asarray(value, dtype=float)
    if table.ndim != 2:
        raise ValueError(f"value must be a (jobs, configurations) matrix, got shape {table.shape}")
    if not np.all(np.isfinite(table)):
        raise ValueError("value must be finite (no NaN or infinity)")
    jobs, configs = table.shape
    caps = np.asarray(capacity, dtype=float)
    if caps.ndim != 1:
        raise ValueError(f"capacity must be one-dimensional (one entry per type), got {caps.shape}")
    if not np.all(np.isfinite(caps)) or np.any(caps < 0):
        raise ValueError(f"capacity must be finite and non-negative, got {caps.tolist()}")
    types = _integer_vector(type_of, "type_of", configs)
    if np.any((types < 0) | (types >= caps.shape[0])):
        raise ValueError(
            f"type_of entries must lie in 0..{caps.shape[0] - 1}, got {types.tolist()}"
        )
    counts = _integer_vector(gpus, "gpus", configs)
    if np.any(counts <= 0):
        raise ValueError(f"gpus entries must be positive, got {counts.tolist()}")
    if not math.isfinite(lambda_n):
        raise ValueError(f"lambda_n must be finite, got {lambda_n}")
    mask = _allowed_mask(allowed, (jobs, configs))
    pins = _pins(pinned, jobs, configs, mask)
    return _Instance(table, types, counts, caps, float(lambda_n), pins, mask)


def _integer_vector(data: ArrayLike, name: str, length: int) -> NDArray[np.int64]:
    arr = np.asarray(data)
    if arr.ndim != 1 or arr.shape[0] != length:
        raise ValueError(
            f"{name} must have one entry per configuration ({length}), got {arr.shape}"
        )
    if arr.dtype.kind == "b" or (arr.size and arr.dtype.kind not in "iuf"):
        raise ValueError(f"{name} must hold integers, got dtype {arr.dtype}")
    if arr.dtype.kind == "f" and not np.all(np.isfinite(arr) & (arr == np.round(arr))):
        raise ValueError(f"{name} must hold integers, got {arr.tolist()}")
    return arr.astype(np.int64)


def _allowed_mask(allowed: ArrayLike | None, shape: tuple[int, int]) -> NDArray[np.bool_]:
    if allowed is None:
        return np.ones(shape, dtype=bool)
    mask = np.asarray(allowed)
    if mask.shape != shape:
        raise ValueError(f"allowed must have the shape of value {shape}, got {mask.shape}")
    return mask.astype(bool)


def _pins(
    pinned: Mapping[int, int] | None, jobs: int, configs: int, mask: NDArray[np.bool_]
) -> dict[int, int]:
    pins: dict[int, int] = {}
    for job, config in (pinned or {}).items():
        if not (_is_int(job) and 0 <= job < jobs):
            raise ValueError(f"pinned job {job!r} is not a job index in 0..{jobs - 1}")
        if not (_is_int(config) and 0 <= config < configs):
            raise ValueError(
                f"pinned job {job}: configuration {config!r} is not an index in 0..{configs - 1}"
            )
        if not mask[job, config]:
            raise ValueError(f"pinned job {job}: configuration {config} is not allowed")
        pins[int(job)] = int(config)
    return pins


def _is_int(x: object) -> bool:
    return isinstance(x, int | np.integer) and not isinstance(x, bool | np.bool_)


def _check_pins_fit(inst: _Instance) -> None:
    """Pins alone must fit each type's capacity (the other jobs can always take nothing)."""
    used = np.zeros(inst.types)
    for job in sorted(inst.pinned):
        config = inst.pinned[job]
        t = inst.type_of[config]
        used[t] += inst.gpus[config]
        if used[t] > inst.capacity[t]:
            raise ValueError(
                f"pinned job {job} (configuration {config}, {inst.gpus[config]} GPUs of type {t}) "
                f"does not fit: pins up to it need {used[t]:g} GPUs of type {t}, "
                f"capacity is {inst.capacity[t]:g}"
            )


# --- model ------------------------------------------------------------------------------------


def _useful_cells(inst: _Instance, minimise: bool) -> NDArray[np.int64]:
    """Flat indices ``i * C + c`` of the cells that can be in an optimal answer: pinned ones,
    and allowed ones that improve E over leaving the job out and beat every cell of the same
    type with no more GPUs (taking the smaller one instead never hurts). Leaving the others
    out keeps the optimum and shrinks the program several-fold."""
    sign = 1.0 if minimise else -1.0
    gain = sign * (inst.lambda_n - inst.value)  # > 0: better than no configuration
    keep = inst.allowed & (gain > 0)
    order = np.lexsort((inst.gpus, inst.type_of))  # by type, then GPUs
    values = np.where(keep, gain, -np.inf)[:, order]
    sizes, types = inst.gpus[order], inst.type_of[order]
    smaller = np.full(values.shape, -np.inf)  # best gain on fewer GPUs of the same type
    for t in np.unique(types):
        first, last = np.searchsorted(types, [t, t + 1])
        running = np.maximum.accumulate(values[:, first:last], axis=1)
        group = np.searchsorted(sizes[first:last], sizes[first:last])  # first of each size
        has = group > 0
        smaller[:, first:last][:, has] = running[:, group[has] - 1]
    keep[:, order] &= values > smaller
    for job, config in inst.pinned.items():
        keep[job, config] = True
    return np.flatnonzero(keep.ravel())


def _each_at_its_best(
    inst: _Instance, minimise: bool, cells: NDArray[np.int64]
) -> tuple[int | None, ...] | None:
    """Each job's best useful cell (its pin, if pinned), if all of them fit the capacities
    together; None otherwise. The objective is a sum over jobs, so such a choice is optimal."""
    sign = 1.0 if minimise else -1.0
    gain = np.full(inst.jobs * inst.configs, -np.inf)
    gain[cells] = (sign * (inst.lambda_n - inst.value)).ravel()[cells]
    gain = gain.reshape(inst.jobs, inst.configs)
    best = np.argmax(gain, axis=1)
    choice = [int(c) if np.isfinite(gain[j, c]) else None for j, c in enumerate(best)]
    for job, config in inst.pinned.items():
        choice[job] = config
    used = np.zeros(inst.types)
    for config in choice:
        if config is not None:
            used[inst.type_of[config]] += inst.gpus[config]
    return tuple(choice) if np.all(used <= inst.capacity) else None


@dataclass(frozen=True)
class _Program:
    """The program over the useful cells, as a minimisation: column ``k`` is ``X[i, c]`` for
    the flat cell ``i * C + c``. Rows 0..J-1: one configuration per job; rows J..J+T-1: GPUs
    per type within capacity. ``step`` is the spacing of attainable objective values (1 when
    the costs are whole numbers), 0 when there is none to rely on."""

    cost: NDArray[np.float64]
    lower: NDArray[np.float64]
    upper: NDArray[np.float64]
    job_of: NDArray[np.int64]
    type_of: NDArray[np.int64]
    gpus: NDArray[np.int64]
    capacity: NDArray[np.float64]
    jobs: int
    step: float

    @property
    def columns(self) -> int:
        return self.cost.shape[0]

    def matrix(self, keep: NDArray[np.int64]) -> tuple[NDArray, NDArray, NDArray]:
        """The constraint matrix's columns ``keep``, compressed by column (starts, row indices,
        values): each column holds a 1 in its job's row and its GPU count in its type's row."""
        count = len(keep)
        index = np.empty(2 * count, dtype=np.int64)
        index[0::2] = self.job_of[keep]
        index[1::2] = self.jobs + self.type_of[keep]
        value = np.empty(2 * count)
        value[0::2] = 1.0
        value[1::2] = self.gpus[keep]
        return np.arange(0, 2 * count + 1, 2), index, value

    def row_upper(self) -> NDArray[np.float64]:
        return np.concatenate([np.ones(self.jobs), self.capacity])


def _program(inst: _Instance, cells: NDArray[np.int64], minimise: bool) -> _Program:
    job_of, config_of = np.divmod(cells, inst.configs)
    raw = (inst.value - inst.lambda_n).ravel()[cells]
    units = raw / STEP
    whole = np.round(units)
    if np.all(np.abs(units - whole) <= 1e-6) and np.abs(whole).max() < 2.0**40:
        cost, step = whole, 1.0  # exact: every objective value is a whole number of steps
    else:
        cost, step = _scaled(raw), 0.0
    lower = np.zeros(len(cells))
    for job, config in inst.pinned.items():
        lower[np.searchsorted(cells, job * inst.configs + config)] = 1.0
    return _Program(
        cost=cost if minimise else -cost,
        lower=lower,
        upper=np.ones(len(cells)),
        job_of=job_of,
        type_of=inst.type_of[config_of],
        gpus=inst.gpus[config_of],
        capacity=inst.capacity,
        jobs=inst.jobs,
        step=step,
    )


def _scaled(cost: NDArray[np.float64]) -> NDArray[np.float64]:
    """``cost`` divided by the median of its non-zero magnitudes (unchanged when all zero).

    The median, not the maximum: one huge cost (a job that should never run) must not shrink
    the others below the solver's tolerances."""
    magnitude = np.abs(cost)
    nonzero = magnitude[magnitude > 0]
    return cost / float(np.median(nonzero)) if nonzero.size else cost


@dataclass(frozen=True)
class _Relaxation:
    objective: float
    x: NDArray[np.float64]
    reduced: NDArray[np.float64]  # reduced costs of the columns


def _solve(program: _Program, gap: float) -> tuple[NDArray[np.float64], str]:
    """Stages 2 to 4 of the module's docstring: the chosen columns (0/1) and the status."""
    relaxation = _relax(program)
    if relaxation is None:  # not solved to optimality (never seen): branch and bound on it all
        return _branch_and_bound(program, np.arange(program.columns), program.lower, None, gap)
    if np.abs(relaxation.x - np.round(relaxation.x)).max() <= 1e-9:
        return np.round(relaxation.x), OPTIMAL
    bound = relaxation.objective
    if program.step:  # the optimum is a whole number of steps: the bound rounds up
        bound = math.ceil(bound - _slack(bound))
    start = _feasible_answer(program, relaxation, bound, gap)
    value = float(program.cost @ start)
    if _within(value, bound, gap, program.step):
        return start, OPTIMAL
    room = value - relaxation.objective + _slack(relaxation.objective)
    keep, lower = _fixed_by_reduced_cost(program, relaxation, room)
    if np.any(start[program.lower == 0] < lower[program.lower == 0]) or np.any(
        np.delete(start, keep) > 0
    ):  # the start must survive the fixing (it always does, barring round-off)
        keep, lower = np.arange(program.columns), program.lower
    return _branch_and_bound(program, keep, lower, start, gap)


def _slack(objective: float) -> float:
    """Room for round-off in the relaxation's objective and reduced costs."""
    return 1e-7 * max(1.0, abs(objective))


def _within(value: float, bound: float, gap: float, step: float) -> bool:
    """Whether an answer of objective ``value`` is accepted against a proven lower ``bound``:
    it meets it (to under one step where the objective moves in steps), or is within the
    relative ``gap`` of it."""
    if value - bound < (step if step else 1e-9 * max(1.0, abs(value))):
        return True
    return value - bound <= gap * abs(value)


def _highs(gap: float | None = None, step: float = 0.0) -> highspy.Highs:
    """A HiGHS instance with no model, silent and single-threaded (deterministic), with tight
    tolerances; for a MIP, the relative ``gap`` and an absolute one just under one ``step``.
    Each thread keeps one for relaxations and one for MIPs, cleared between programs: making
    one costs more than solving a small relaxation."""
    mip = gap is not None
    kind = "mip" if mip else "relaxation"
    h = getattr(_SOLVERS, kind, None)
    if h is None:
        with _native_stdout_silenced():  # the first instance prints a banner
            h = highspy.Highs()
        setattr(_SOLVERS, kind, h)
        for name, setting in (("output_flag", False), ("threads", 1), *_TOLERANCES.items()):
            h.setOptionValue(name, setting)
    else:
        h.clearModel()
    if mip:
        h.setOptionValue("mip_rel_gap", gap)
        h.setOptionValue("mip_abs_gap", 0.999 * step)
    return h


_SOLVERS = threading.local()  # per thread: HiGHS instances are not shared between threads


def _model(
    program: _Program, keep: NDArray[np.int64], lower: NDArray[np.float64], integer: bool
) -> highspy.HighsLp:
    start, index, value = program.matrix(keep)
    rows = program.jobs + program.capacity.shape[0]
    lp = highspy.HighsLp()
    lp.num_col_ = len(keep)
    lp.num_row_ = rows
    lp.col_cost_ = program.cost[keep]
    lp.col_lower_ = lower[keep]
    lp.col_upper_ = program.upper[keep]
    lp.row_lower_ = np.full(rows, -highspy.kHighsInf)
    lp.row_upper_ = program.row_upper()
    lp.a_matrix_.format_ = highspy.MatrixFormat.kColwise
    lp.a_matrix_.start_ = start
    lp.a_matrix_.index_ = index
    lp.a_matrix_.value_ = value
    if integer:
        lp.integrality_ = [highspy.HighsVarType.kInteger] * len(keep)
    return lp


def _relax(program: _Program) -> _Relaxation | None:
    """The linear relaxation's optimum with its reduced costs, or None if not found."""
    h = _highs()
    everything = np.arange(program.columns)
    with _native_stdout_silenced():
        h.passModel(_model(program, everything, program.lower, integer=False))
        h.run()
    if h.getModelStatus() != highspy.HighsModelStatus.kOptimal:
        return None
    solution = h.getSolution()
    return _Relaxation(
        float(h.getInfo().objective_function_value),
        np.array(solution.col_value),
        np.array(solution.col_dual),
    )


def _fixed_by_reduced_cost(
    program: _Program, relaxation: _Relaxation, room: float
) -> tuple[NDArray[np.int64], NDArray[np.float64]]:
    """The columns kept and the lower bounds, once reduced costs have fixed what they prove.

    For any feasible x, cost @ x >= relaxation + sum_k reduced[k] * (x[k] - x_relaxed[k]), every
    term non-negative (a column at its lower bound has a reduced cost >= 0, one at its upper
    bound <= 0, a basic one 0). An answer at least as good as one ``room`` above the relaxation
    therefore leaves out every column whose reduced cost exceeds ``room`` and takes every one
    whose reduced cost is below ``-room``."""
    reduced = relaxation.reduced
    free = program.lower == 0
    keep = np.flatnonzero(~(free & (reduced > room)))
    lower = np.where(free & (reduced < -room), 1.0, program.lower)
    return keep, lower


def _branch_and_bound(
    program: _Program,
    keep: NDArray[np.int64],
    lower: NDArray[np.float64],
    start: NDArray[np.float64] | None,
    gap: float,
) -> tuple[NDArray[np.float64], str]:
    """HiGHS's branch and bound on the ``keep`` columns (the others 0), from ``start``."""
    h = _highs(gap, program.step)
    with _native_stdout_silenced():
        h.passModel(_model(program, keep, lower, integer=True))
        if start is not None:
            given = highspy.HighsSolution()
            given.col_value = start[keep].tolist()
            given.value_valid = True
            h.setSolution(given)
        h.run()
    status = h.getModelStatus()
    found = np.zeros(program.columns)
    if h.getInfo().primal_solution_status == 2:  # feasible
        found[keep] = np.round(np.array(h.getSolution().col_value))
    elif start is None:
        raise RuntimeError(f"HiGHS returned no solution: {h.modelStatusToString(status)}")
    else:
        found = start
    if start is not None and program.cost @ start < program.cost @ found:
        found = start
    if status == highspy.HighsModelStatus.kOptimal:
        return found, OPTIMAL
    return found, h.modelStatusToString(status)


# --- a feasible answer ------------------------------------------------------------------------


def _feasible_answer(
    program: _Program, relaxation: _Relaxation, bound: float, gap: float
) -> NDArray[np.float64]:
    """A good answer near the relaxation's optimum: its integral part (pins included), unassigned
    jobs filled greedily by cost, then improved by moving one job at a time and by an exact
    knapsack over each type's GPUs, twice, until it meets ``bound``. Each step keeps it feasible
    and never worsens it; the knapsacks use only the columns whose reduced cost leaves them a
    chance to improve it (as :func:`_fixed_by_reduced_cost`). The loops are compiled
    (:mod:`goodput_sim.policies.sia_kernels`)."""
    from goodput_sim.policies import sia_kernels as kernels

    choice = np.full(program.jobs, -1)
    taken = np.flatnonzero((relaxation.x > 1 - 1e-9) | (program.lower > 0))
    choice[program.job_of[taken]] = taken
    if np.any(_left(program, choice) < 0):  # round-off in the relaxation: from the pins alone
        choice[:] = -1
        taken = np.flatnonzero(program.lower > 0)
        choice[program.job_of[taken]] = taken
    pinned = np.zeros(program.jobs, dtype=bool)
    pinned[program.job_of[program.lower > 0]] = True
    bounds = np.searchsorted(program.job_of, np.arange(program.jobs + 1))  # each job's columns
    order = np.argsort(program.cost, kind="stable")
    columns = (program.cost, program.job_of, program.type_of, program.gpus)
    kernels.fill_greedily(order, *columns, choice, _left(program, choice))
    moves = (program.cost, program.type_of, program.gpus, bounds, pinned)
    kernels.move_one_at_a_time(*moves, choice, _left(program, choice), _PASSES)
    for _ in range(2):
        value = float(program.cost[choice[choice >= 0]].sum())
        if _within(value, bound, gap, program.step):
            break
        room = value - relaxation.objective + _slack(relaxation.objective)
        usable = relaxation.reduced <= room
        for gpu_type in range(program.capacity.shape[0]):
            _knapsack_on_type(program, choice, bounds, pinned, gpu_type, usable)
        kernels.move_one_at_a_time(*moves, choice, _left(program, choice), _PASSES)
    answer = np.zeros(program.columns)
    answer[choice[choice >= 0]] = 1.0
    return answer


_PASSES = 3  # the one-job moves stop after this many passes over the jobs


def _left(program: _Program, choice: NDArray[np.int64]) -> NDArray[np.float64]:
    """Each type's GPUs not taken by ``choice``."""
    taken = choice[choice >= 0]
    used = np.bincount(
        program.type_of[taken], weights=program.gpus[taken], minlength=program.capacity.shape[0]
    )
    return program.capacity - used


def _knapsack_on_type(
    program: _Program,
    choice: NDArray[np.int64],
    bounds: NDArray[np.int64],
    pinned: NDArray[np.bool_],
    gpu_type: int,
    usable: NDArray[np.bool_],
) -> None:
    """The unpinned jobs on ``gpu_type`` and the unassigned ones re-chosen exactly among their
    ``usable`` columns of that type (or none) within its GPUs not taken by the others: a
    multiple-choice knapsack by dynamic programming over GPU counts
    (:func:`~goodput_sim.policies.sia_kernels.knapsack_on_type`). The current choice is one of
    its answers (its columns are usable), so the objective never worsens."""
    from goodput_sim.policies.sia_kernels import knapsack_on_type

    current_type = np.where(choice >= 0, program.type_of[np.maximum(choice, 0)], -1)
    members = np.flatnonzero(~pinned & ((current_type == gpu_type) | (choice < 0)))
    on_type = current_type[members] == gpu_type
    room = _left(program, choice)[gpu_type] + program.gpus[choice[members][on_type]].sum()
    size = int(math.floor(room + 1e-9))
    if not len(members) or size < 0 or len(members) * (size + 1) > _KNAPSACK_STATES:
        return
    columns = (usable, program.type_of, program.gpus, program.cost)
    knapsack_on_type(members, on_type, bounds, *columns, gpu_type, size, choice)


@contextmanager
def _native_stdout_silenced() -> Iterator[None]:
    """HiGHS's C++ code prints a debugging line on some solves even with output off: send the
    process's standard output to /dev/null for the call (Python's own buffer flushed first)."""
    sys.stdout.flush()
    saved = os.dup(1)
    try:
        with open(os.devnull, "wb") as null:
            os.dup2(null.fileno(), 1)
        yield
    finally:
        os.dup2(saved, 1)
        os.close(saved)


# --- decoding ---------------------------------------------------------------------------------


def _decode(x: NDArray, inst: _Instance) -> tuple[int | None, ...]:
    picked = np.asarray(x).reshape(inst.jobs, inst.configs) > 0.5
    choice: list[int | None] = []
    for job, row in enumerate(picked):
        hits = np.flatnonzero(row)
        if hits.size > 1:
            raise RuntimeError(f"solver gave job {job} several configurations {hits.tolist()}")
        choice.append(int(hits[0]) if hits.size else None)
    return tuple(choice)


def _check_feasible(choice: tuple[int | None, ...], inst: _Instance) -> None:
    """Guard against solver tolerances: the rounded choice must satisfy every constraint."""
    used = np.zeros(inst.types)
    for job, config in enumerate(choice):
        if config is None:
            continue
        if not inst.allowed[job, config]:
            raise RuntimeError(f"solver chose disallowed configuration {config} for job {job}")
        used[inst.type_of[config]] += inst.gpus[config]
    if np.any(used > inst.capacity):
        raise RuntimeError(f"solver exceeded capacity: uses {used.tolist()}")
    for job, config in inst.pinned.items():
        if choice[job] != config:
            raise RuntimeError(f"solver did not honour pin of job {job} to {config}")
