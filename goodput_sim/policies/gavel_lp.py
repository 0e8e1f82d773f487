"""Numerical core of a heterogeneity-aware Gavel policy (Narayanan et al., OSDI'20).

Two of Gavel's objectives, each a linear programme solved with SciPy's HiGHS, give the fraction
of time ``x[j, t]`` each job should spend on each GPU type:

* :func:`max_sum_throughput_allocation`, the one the Sia artifact runs (Gavel's
  ``max_sum_throughput_perf``, Sia SPEC 6.3): the total raw throughput ``sum T[j, t] x[j, t]``.
* :func:`max_min_fair_allocation`: max-min fairness over normalised effective throughput.

:class:`RoundScheduler` realises such fractions round by round with Gavel's priority mechanism
(time share wanted over time share received, Sia SPEC 6.4).

Max-min definitions, for job ``j`` and GPU type ``t`` (``C = sum_t capacity[t]``, ``J`` jobs):

* ``usable[j, t]``: ``throughput[j, t] > 1e-9 * max_t throughput[j, t]`` and
  ``replicas[j] <= capacity[t]``; ``x[j, t]`` is fixed at 0 elsewhere.
* effective throughput ``eff[j, t] = throughput[j, t]`` where usable, else 0.
* reference ``ref[j] = sum_t eff[j, t] * capacity[t] / C * min(1, C / (J * replicas[j]))``: what
  the job would get from an equal share of every type's GPUs, capped at running all the time.
  Jobs with ``ref[j] == 0`` cannot run anywhere: they get ``x = 0`` and are left out of the min.
* normalised throughput ``n[j] = sum_t eff[j, t] * x[j, t] / ref[j]``.

Pass 1 maximises ``z = min_j n[j]``. Pass 2 (tie-breaking and utilisation, in the spirit of
Gavel's water-filling) keeps every ``n[j] >= (1 - 1e-9) * z`` and maximises ``sum_j n[j]``, so
capacity that max-min fairness leaves idle goes to jobs that can use it.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

import numpy as np
from numpy.typing import ArrayLike, NDArray

if TYPE_CHECKING:  # scipy.sparse is imported by the functions that build programmes
    from scipy.sparse import coo_array, csr_array

_TINY = 1e-9  # throughput at or below this fraction of the job's best counts as "cannot run"
_KEEP = 1.0 - 1e-9  # pass 2 keeps the max-min value at this fraction of its optimum
_NEW_PRIORITY = 1e9  # priority multiplier for a pair that has received no time at all


def _validated(
    throughput: ArrayLike, replicas: ArrayLike, capacity: ArrayLike
) -> tuple[NDArray[np.float64], NDArray[np.float64], NDArray[np.float64]]:
    thr = np.asarray(throughput, dtype=float)
    if thr.ndim != 2 or thr.shape[1] == 0:
        raise ValueError(
            f"throughput must be a (jobs, types) array with types >= 1, got shape {thr.shape}"
        )
    num_jobs, num_types = thr.shape
    if not np.all(np.isfinite(thr)) or np.any(thr < 0):
        raise ValueError("throughput must be finite and non-negative")
    reps = np.asarray(replicas, dtype=float)
    if reps.shape != (num_jobs,):
        raise ValueError(f"replicas must have shape ({num_jobs},), got {reps.shape}")
    if not np.all(np.isfinite(reps)) or np.any(reps < 1) or np.any(reps != np.round(reps)):
        raise ValueError("replicas must be positive integers")
    cap = np.asarray(capacity, dtype=float)
    if cap.shape != (num_types,):
        raise ValueError(f"capacity must have shape ({num_types},), got {cap.shape}")
    if not np.all(np.isfinite(cap)) or np.any(cap < 0):
        raise ValueError("capacity must be finite and non-negative")
    return thr, reps, cap


def effective_throughput(
    throughput: ArrayLike, replicas: ArrayLike, capacity: ArrayLike
) -> NDArray[np.float64]:
    """``throughput`` with the pairs a job cannot use (tiny throughput, or more GPUs than the
    type has) set to 0."""
    thr, reps, cap = _validated(throughput, replicas, capacity)
    return _effective(thr, reps, cap)


def _effective(
    thr: NDArray[np.float64], reps: NDArray[np.float64], cap: NDArray[np.float64]
) -> NDArray[np.float64]:
    best = thr.max(axis=1, keepdims=True)
    usable = (thr > _TINY * best) & (reps[:, None] <= cap[None, :])
    return np.where(usable, thr, 0.0)


def reference_throughput(
    throughput: ArrayLike, replicas: ArrayLike, capacity: ArrayLike
) -> NDArray[np.float64]:
    """Each job's throughput under an equal share of every GPU type (see the module notes)."""
    thr, reps, cap = _validated(throughput, replicas, capacity)
    return _reference(_effective(thr, reps, cap), reps, cap)


def _reference(
    eff: NDArray[np.float64], reps: NDArray[np.float64], cap: NDArray[np.float64]
) -> NDArray[np.float64]:
    total = cap.sum()
    if total <= 0 or eff.shape[0] == 0:
        return np.zeros(eff.shape[0])
    share = np.minimum(1.0, total / (eff.shape[0] * reps))
    return np.sum(eff * (cap / total), axis=1) * share


def _share_rows(reps: NDArray[np.float64], num_types: int) -> tuple[coo_array, coo_array]:
    """The two constraint blocks both programmes share, over ``x`` flattened row-major
    (``j * num_types + t``): each job's total fraction, and each type's GPUs in use."""
    from scipy.sparse import coo_array

    num_jobs = reps.size
    n_vars = num_jobs * num_types
    jobs_idx = np.repeat(np.arange(num_jobs), num_types)
    types_idx = np.tile(np.arange(num_types), num_jobs)
    cols = np.arange(n_vars)
    per_job = coo_array((np.ones(n_vars), (jobs_idx, cols)), shape=(num_jobs, n_vars))
    per_type = coo_array((reps[jobs_idx], (types_idx, cols)), shape=(num_types, n_vars))
    return per_job, per_type


def max_min_fair_allocation(
    throughput: ArrayLike, replicas: ArrayLike, capacity: ArrayLike
) -> NDArray[np.float64]:
    """Fraction of time ``x[j, t]`` that job ``j`` should run on GPU type ``t``.

    ``throughput`` is (jobs, types), iterations/s at each job's fixed GPU count; ``replicas``
    (jobs,) the GPUs each job needs; ``capacity`` (types,) the GPUs of each type. The result
    satisfies ``sum_t x[j, t] <= 1`` and ``sum_j replicas[j] * x[j, t] <= capacity[t]``, and
    maximises the minimum normalised throughput, then the total (module notes). Rounded to
    1e-9, clipped to [0, 1], deterministic. Raises ``ValueError`` on bad input.
    """
    from scipy.optimize import linprog  # slow import, needed only by these allocations
    from scipy.sparse import coo_array, hstack, vstack

    thr, reps, cap = _validated(throughput, replicas, capacity)
    num_jobs, num_types = thr.shape
    eff = _effective(thr, reps, cap)
    ref = _reference(eff, reps, cap)
    active = np.flatnonzero(ref > 0)
    x = np.zeros((num_jobs, num_types))
    if active.size == 0:
        return x

    # Normalised throughput per unit of x; variables are x flattened row-major (j * T + t).
    gain = np.zeros_like(eff)
    gain[active] = eff[active] / ref[active, None]
    n_vars = num_jobs * num_types
    per_job, per_type = _share_rows(reps, num_types)
    fair = _fair_rows(gain, active)
    limits = np.concatenate([np.ones(num_jobs), cap])
    bounds = [(0.0, 1.0 if usable else 0.0) for usable in eff.ravel() > 0]

    # Pass 1: maximise z subject to z <= n[j] for every active job (z is the last variable).
    z_col = coo_array(
        np.concatenate([np.zeros(num_jobs + num_types), np.ones(active.size)]).reshape(-1, 1)
    )
    a1 = vstack([per_job, per_type, fair]).tocsr()
    first = linprog(
        c=np.concatenate([np.zeros(n_vars), [-1.0]]),
        A_ub=hstack([a1, z_col]).tocsr(),
        b_ub=np.concatenate([limits, np.zeros(active.size)]),
        bounds=[*bounds, (0.0, None)],
        method="highs",
    )
    if first.status != 0:
        raise RuntimeError(f"max-min fairness LP failed: {first.message}")
    best = first.x[:n_vars]
    z = float(first.x[-1])

    # Pass 2: keep n[j] >= (1 - 1e-9) z and maximise sum_j n[j].
    second = linprog(
        c=-gain.ravel(),
        A_ub=a1,
        b_ub=np.concatenate([limits, np.full(active.size, -_KEEP * z)]),
        bounds=bounds,
        method="highs",
    )
    if second.status == 0:
        best = second.x
    x = np.clip(np.round(best.reshape(num_jobs, num_types), 9), 0.0, 1.0)
    return x + 0.0  # turn any -0.0 into 0.0


def _fair_rows(gain: NDArray[np.float64], active: NDArray[np.int64]) -> csr_array:
    """Rows ``-sum_t gain[j, t] x[j, t]`` for the active jobs."""
    from scipy.sparse import csr_array

    num_types = gain.shape[1]
    rows = np.repeat(np.arange(active.size), num_types)
    cols = (active[:, None] * num_types + np.arange(num_types)).ravel()
    return csr_array((-gain[active].ravel(), (rows, cols)), shape=(active.size, gain.size))


def max_sum_throughput_allocation(
    throughput: ArrayLike, replicas: ArrayLike, capacity: ArrayLike, decimals: int = 5
) -> NDArray[np.float64]:
    """Fraction of time ``x[j, t]`` that job ``j`` should run on GPU type ``t`` to maximise the
    total throughput ``sum_j sum_t throughput[j, t] * x[j, t]`` (raw iterations per second, not
    normalised per job: Gavel's ``max_sum_throughput_perf``, Sia SPEC 6.3), subject to
    ``sum_t x[j, t] <= 1`` and ``sum_j replicas[j] * x[j, t] <= capacity[t]``.

    Where several optima exist, identical jobs (equal throughput rows and replicas) share
    equally, the split the artifact's interior-point solver (ECOS) converges to; a vertex
    solver would give one of them everything. Rounded to ``decimals`` (the artifact's 5) and
    clipped to [0, 1]; deterministic. Raises ``ValueError`` on bad input.
    """
    from scipy.optimize import linprog  # slow import, needed only by these allocations
    from scipy.sparse import vstack

    thr, reps, cap = _validated(throughput, replicas, capacity)
    num_jobs, num_types = thr.shape
    x = np.zeros((num_jobs, num_types))
    if num_jobs == 0 or not np.any(thr > 0):
        return x
    per_job, per_type = _share_rows(reps, num_types)
    result = linprog(
        c=-thr.ravel(),
        A_ub=vstack([per_job, per_type]).tocsr(),
        b_ub=np.concatenate([np.ones(num_jobs), cap]),
        bounds=(0.0, 1.0),
        method="highs",
    )
    if result.status != 0:
        raise RuntimeError(f"max-sum-throughput LP failed: {result.message}")
    x = _shared_by_identical_jobs(result.x.reshape(num_jobs, num_types), thr, reps)
    return np.clip(np.round(x, decimals), 0.0, 1.0) + 0.0  # turn any -0.0 into 0.0


def _shared_by_identical_jobs(
    x: NDArray[np.float64], thr: NDArray[np.float64], reps: NDArray[np.float64]
) -> NDArray[np.float64]:
    """``x`` averaged over each group of identical jobs: still feasible and optimal (the
    programme is symmetric in them), and the same whatever order the jobs come in."""
    keys = np.column_stack([thr, reps])
    _, group = np.unique(keys, axis=0, return_inverse=True)
    group = group.ravel()
    sums = np.zeros((group.max() + 1, x.shape[1]))
    np.add.at(sums, group, x)
    return (sums / np.bincount(group)[:, None])[group]


class RoundScheduler:
    """Realises time fractions ``x`` round by round with Gavel's priorities, as the Sia
    artifact keeps them (Sia SPEC 6.4; deterministic).

    State: seconds received per (job, type) and a clock per type. A job seen for the first
    time has received half a round on every type, and each type's clock grows by that half
    round; afterwards a job placed on a type for a round adds the round to its received time
    there and to that type's clock (so the clock is the service handed out on the type). Each
    round, ``priority[j, t] = x[j, t] / (received[j, t] / clock[t])`` (0 where ``x`` is 0).
    All (job, type) pairs are taken in order of priority, then ``x``, highest first, ties in
    type order then job order; a job gets the type if it has no type yet this round and the
    type still has ``replicas[j]`` free GPUs. Pairs with ``x == 0`` come last, so GPUs the
    programme leaves idle go to jobs with no share, in type order then job order (pass
    ``leftover=False`` to leave them idle). Jobs no longer listed are forgotten.
    """

    def __init__(self, leftover: bool = True) -> None:
        self.leftover = leftover
        self._received: dict[str, NDArray[np.float64]] = {}
        self._clock: NDArray[np.float64] | None = None

    def received(self, name: str) -> NDArray[np.float64]:
        """Seconds job ``name`` has received on each type (including the initial half round)."""
        return self._received[name].copy()

    def schedule(
        self,
        names: Sequence[str],
        x: ArrayLike,
        replicas: Sequence[int],
        capacity: Sequence[int],
        round_seconds: float,
    ) -> dict[str, int | None]:
        """Type index for every job this round (``None``: not scheduled); the scheduled jobs
        come first, in the order they were placed."""
        frac = np.asarray(x, dtype=float)
        cap = np.asarray(capacity, dtype=np.int64)
        reps = np.asarray(replicas, dtype=np.int64)
        names = list(names)
        if len(set(names)) != len(names):
            raise ValueError("job names must be unique")
        if cap.ndim != 1 or frac.shape != (len(names), cap.size) or reps.shape != (len(names),):
            raise ValueError(
                f"x must be (jobs, types) = ({len(names)}, {cap.size}) and replicas (jobs,); got "
                f"x {frac.shape}, replicas {reps.shape}"
            )
        if not np.all(np.isfinite(frac)) or np.any(frac < 0):
            raise ValueError("x must be finite and non-negative")
        if np.any(reps < 1) or np.any(cap < 0):
            raise ValueError("replicas must be positive and capacity non-negative")
        if not round_seconds > 0:
            raise ValueError(f"round_seconds must be positive, got {round_seconds}")
        if self._clock is None:
            self._clock = np.zeros(cap.size)
        elif self._clock.size != cap.size:
            raise ValueError(f"number of GPU types changed from {self._clock.size} to {cap.size}")
        half = 0.5 * round_seconds
        received = {}
        for name in names:
            if name not in self._received:
                self._clock += half
            received[name] = self._received.get(name, np.full(cap.size, half))
        self._received = received

        entries: list[tuple[float, float, int, int]] = []
        for t in range(cap.size):
            for j, name in enumerate(names):
                want = float(frac[j, t])
                if want <= 0:
                    priority = 0.0
                else:
                    share = float(received[name][t]) / float(self._clock[t])
                    priority = want / share if share > 0 else want * _NEW_PRIORITY
                entries.append((priority, want, t, j))
        entries.sort(key=lambda e: (e[0], e[1]), reverse=True)  # stable: ties keep (t, j) order

        free = cap.copy()
        placed: dict[str, int] = {}
        for priority, _, t, j in entries:
            if priority <= 0 and not self.leftover:
                break
            if names[j] not in placed and reps[j] <= free[t]:
                placed[names[j]] = t
                free[t] -= reps[j]
        for name, t in placed.items():
            received[name][t] += round_seconds
            self._clock[t] += round_seconds
        return {**placed, **{name: None for name in names if name not in placed}}
