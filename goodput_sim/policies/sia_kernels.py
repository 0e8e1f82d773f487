"""Compiled loops of sia's feasible answer (stage 3 of :mod:`goodput_sim.policies.sia_milp`):
the greedy fill, the one-job moves and the per-type knapsack.

Each visits the program's columns one at a time with a few numpy calls per column or job in
Python, so their time was the fixed cost of those calls. Compiled with numba, they make the same
choices in the same order: only comparisons, integer arithmetic and the same IEEE additions on
the same operands (no fast-math), and the first of equal costs wins as with ``np.argmin``, so
answers are identical (the tests compare them with the numpy code they replaced).

A program's columns are ordered by job: job ``j`` owns columns ``bounds[j]`` to
``bounds[j + 1] - 1``. ``choice[j]`` is job ``j``'s column, or -1; ``left`` is each GPU type's
GPUs not taken. The kernels update both in place."""

from __future__ import annotations

import numba
import numpy as np

from goodput_sim.numba_cache import use_writable_cache

use_writable_cache()  # a read-only installation caches elsewhere
_jit = numba.njit(cache=True, nogil=True)


@_jit
def fill_greedily(order, cost, job_of, type_of, gpus, choice, left):
    """Unassigned jobs take their cheapest column that fits: the columns in ``order`` (by cost,
    stable), up to the first that does not lower the objective."""
    for column in order:
        if cost[column] >= 0:
            break
        job, gpu_type = job_of[column], type_of[column]
        if choice[job] < 0 and gpus[column] <= left[gpu_type]:
            choice[job] = column
            left[gpu_type] -= gpus[column]


@_jit
def move_one_at_a_time(cost, type_of, gpus, bounds, pinned, choice, left, passes):
    """Each unpinned job in turn moves to its cheapest column that fits and costs less than its
    own, for up to ``passes`` passes, while any moves."""
    for _ in range(passes):
        moved = False
        for job in range(len(choice)):
            if pinned[job]:
                continue
            current = choice[job]
            now = cost[current] if current >= 0 else 0.0
            best = -1
            for column in range(bounds[job], bounds[job + 1]):
                room = left[type_of[column]]
                if current >= 0:
                    room = room + (gpus[current] if type_of[column] == type_of[current] else 0)
                better = cost[column] < now and (best < 0 or cost[column] < cost[best])
                if better and gpus[column] <= room:
                    best = column
            if best < 0:
                continue
            if current >= 0:
                left[type_of[current]] += gpus[current]
            left[type_of[best]] -= gpus[best]
            choice[job] = best
            moved = True
        if not moved:
            return


@_jit
def knapsack_on_type(members, on_type, bounds, usable, type_of, gpus, cost, gpu_type, size, choice):
    """The ``members`` re-chosen exactly among their ``usable`` columns of ``gpu_type`` (or
    none) within ``size`` GPUs: a multiple-choice knapsack by dynamic programming over GPU
    counts, then read back from the last member. A member ``on_type`` that gets none leaves the
    type; the others keep their choice."""
    best = np.zeros(size + 1)  # best[g]: least cost with at most g GPUs, over the members so far
    after = np.empty(size + 1)
    picks = np.full((len(members), size + 1), -1, dtype=np.int64)
    for m in range(len(members)):
        after[:] = best
        job = members[m]
        for column in range(bounds[job], bounds[job + 1]):
            if not usable[column] or type_of[column] != gpu_type or gpus[column] > size:
                continue
            g = gpus[column]
            for k in range(size + 1 - g):
                candidate = best[k] + cost[column]
                if candidate < after[g + k]:
                    after[g + k] = candidate
                    picks[m, g + k] = column
        best[:] = after
    g = np.argmin(best)
    for m in range(len(members) - 1, -1, -1):
        column = picks[m, g]
        if column >= 0:
            choice[members[m]] = column
            g -= gpus[column]
        elif on_type[m]:
            choice[members[m]] = -1
