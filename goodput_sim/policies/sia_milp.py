"""Sia's (SOSP'23) per-round allocation as an exact MILP over (job, configuration) pairs with
per-GPU-type capacities, solved by HiGHS through SciPy: deterministic, no commercial solver.

Variables are binary ``X[i, c]`` (job ``i`` runs in configuration ``c``). The objective is

    E = sum_{i,c} value[i, c] * X[i, c] + lambda_n * (J - sum_{i,c} X[i, c]),

minimised for fairness power p < 0 (smaller transformed values are better) and maximised for
p > 0. Each job takes at most one configuration, and the GPUs taken of each type fit its capacity.
"""

from __future__ import annotations

import math
import os
import sys
import warnings
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass

import numpy as np
from numpy.typing import ArrayLike, NDArray
from scipy import sparse
from scipy.optimize import Bounds, LinearConstraint, OptimizeResult, linprog, milp

__all__ = ["SiaMilpResult", "assignment_objective", "solve_sia_milp"]

OPTIMAL = "optimal"

# HiGHS options that scipy.optimize.milp does not list but passes through (HiGHS checks them).
_HIGHS_EXTRA_OPTIONS = {
    "mip_abs_gap": 0.0,
    "primal_feasibility_tolerance": 1e-10,
    "dual_feasibility_tolerance": 1e-10,
    "mip_feasibility_tolerance": 1e-10,
}


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
    time_limit: float | None = None,
) -> SiaMilpResult:
    """Choose at most one configuration per job, optimising E exactly.

    ``value`` is (J, C); ``type_of`` and ``gpus`` give each configuration's GPU type (index into
    ``capacity``) and GPU count; ``pinned`` maps a job to the configuration it must take;
    ``allowed`` is a (J, C) boolean mask, False forcing ``X[i, c] = 0``.

    The solver minimises ``sum (value - lambda_n) * X`` (negated when maximising; E less the
    constant ``lambda_n * J``) with both MIP gaps at zero (``mip_rel_gap`` and ``mip_abs_gap``,
    whose default 1e-6 would accept slightly worse answers), so that the answer is the exact
    optimum, as the tests check by brute-force enumeration. HiGHS's feasibility tolerances are
    absolute (default 1e-7) and hid differences between values close to each other or to
    ``lambda_n``; so the costs are scaled to a median magnitude of 1 and the tolerances tightened
    to HiGHS's floor of 1e-10. Differences below about 1e-9 of a typical ``|value - lambda_n|``
    may still be lost.

    For identical inputs HiGHS is deterministic, so the choice among tied optima is repeatable.
    A ``time_limit`` (seconds) gives up both guarantees when it is hit; ``status`` then is the
    solver's message rather than ``"optimal"``.

    Raises ValueError for malformed inputs or pins that cannot all be honoured at once.
    """
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
    cost = _scaled((inst.value - inst.lambda_n).ravel()[cells])
    bounds = _bounds(inst)
    bounds = Bounds(bounds.lb[cells], bounds.ub[cells])
    signed = cost if minimise else -cost
    constraints = _constraints(inst, cells)
    res = _integral_relaxation(signed, constraints, bounds)
    if res is None:  # the relaxation is fractional: branch and bound
        res = _run_highs(signed, constraints, bounds, time_limit)
    if res.x is None:
        raise RuntimeError(f"HiGHS returned no solution: {res.message}")
    full = np.zeros(inst.jobs * inst.configs)
    full[cells] = res.x
    choice = _decode(full, inst)
    _check_feasible(choice, inst)
    status = OPTIMAL if res.status == 0 else str(res.message)
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
    for t in range(inst.types):
        mine = np.flatnonzero(inst.type_of == t)
        mine = mine[np.argsort(inst.gpus[mine], kind="stable")]
        best = np.full(inst.jobs, -np.inf)
        for size in np.unique(inst.gpus[mine]):
            same = mine[inst.gpus[mine] == size]
            values = np.where(keep[:, same], gain[:, same], -np.inf)
            keep[:, same] &= values > best[:, None]
            best = np.maximum(best, values.max(axis=1))
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


def _constraints(inst: _Instance, cells: NDArray[np.int64]) -> LinearConstraint:
    """Rows 0..J-1: one configuration per job; rows J..J+T-1: GPUs per type within capacity.

    Variable ``k`` is ``X[i, c]`` for the flat cell ``cells[k] = i * C + c``."""
    jobs, configs = inst.jobs, inst.configs
    job_of, config_of = np.divmod(cells, configs)
    columns = np.arange(len(cells))
    rows = np.concatenate([job_of, jobs + inst.type_of[config_of]])
    cols = np.concatenate([columns, columns])
    data = np.concatenate([np.ones(len(cells)), inst.gpus[config_of].astype(float)])
    shape = (jobs + inst.types, len(cells))
    matrix = sparse.coo_array((data, (rows, cols)), shape=shape).tocsr()
    upper = np.concatenate([np.ones(jobs), inst.capacity])
    return LinearConstraint(matrix, -np.inf, upper)


def _scaled(cost: NDArray[np.float64]) -> NDArray[np.float64]:
    """``cost`` divided by the median of its non-zero magnitudes (unchanged when all zero).

    The median, not the maximum: one huge cost (a job that should never run) must not shrink
    the others below the solver's tolerances."""
    magnitude = np.abs(cost)
    nonzero = magnitude[magnitude > 0]
    return cost / float(np.median(nonzero)) if nonzero.size else cost


def _bounds(inst: _Instance) -> Bounds:
    lower = np.zeros((inst.jobs, inst.configs))
    for job, config in inst.pinned.items():
        lower[job, config] = 1.0
    upper = inst.allowed.astype(float)
    return Bounds(lower.ravel(), upper.ravel())


def _integral_relaxation(
    cost: NDArray, constraints: LinearConstraint, bounds: Bounds
) -> OptimizeResult | None:
    """The linear relaxation's optimum when it is integral (then it is the integer optimum
    too, found without branching; most rounds' programs are such), else None."""
    with _native_stdout_silenced():
        res = linprog(
            cost,
            A_ub=constraints.A,
            b_ub=constraints.ub,
            bounds=np.stack([bounds.lb, bounds.ub], axis=1),
            method="highs",
            options={"primal_feasibility_tolerance": 1e-10, "dual_feasibility_tolerance": 1e-10},
        )
    if res.status != 0 or res.x is None:
        return None
    if np.abs(res.x - np.round(res.x)).max() > 1e-9:
        return None
    res.x = np.round(res.x)
    return res


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


def _run_highs(
    cost: NDArray, constraints: LinearConstraint, bounds: Bounds, time_limit: float | None
) -> OptimizeResult:
    options: dict[str, object] = {"presolve": True, "mip_rel_gap": 0.0, **_HIGHS_EXTRA_OPTIONS}
    if time_limit is not None:
        options["time_limit"] = float(time_limit)
    with warnings.catch_warnings(), _native_stdout_silenced():
        # SciPy forwards options it does not list to HiGHS verbatim, with a RuntimeWarning.
        warnings.filterwarnings("ignore", "Unrecognized options", RuntimeWarning)
        return milp(
            cost,
            integrality=np.ones(cost.shape[0]),
            bounds=bounds,
            constraints=constraints,
            options=options,
        )


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
