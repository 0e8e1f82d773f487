"""Sia's per-round program solved as the Sia artifact solves it: stated in CVXPY, in the
artifact's shapes and constraint order, and handed to COIN-OR CBC (through CyLP) with its
relative gap of 0.01%.

Sia's values are rounded to 2 decimals, so many allocations tie, and which of the tied optima a
solver returns decides where a job runs. HiGHS (:mod:`goodput_sim.policies.sia_milp`, the
default) returns other tied optima than CBC does, so a run drifts from the artifact's job by
job while agreeing on average. This solver is for job-by-job comparison with the artifact; it
needs the optional packages ``cvxpy`` and ``cylp`` (``pip install goodput-sim[cbc]``) and is
much slower. The statement follows the Sia paper's program (Sia, SOSP'23, section 4) in the
artifact's form: one binary per (job, configuration), the objective's sum of values of the
chosen cells plus ``lambda_n`` for every job left out, GPUs per type within the type's total,
at most one configuration per job, and the pinned jobs' configurations forced."""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np
from numpy.typing import ArrayLike

THREADS = 8  # the artifact's CBC thread count


def cbc_available() -> bool:
    """Whether CVXPY with its CBC interface is installed."""
    try:
        import cvxpy
    except ImportError:
        return False
    return "CBC" in cvxpy.installed_solvers()


def solve_with_cbc(
    value: ArrayLike,
    type_of: ArrayLike,
    gpus: ArrayLike,
    capacity: ArrayLike,
    lambda_n: float,
    minimise: bool = True,
    pinned: Mapping[int, int] | None = None,
    mip_rel_gap: float = 1e-4,
) -> tuple[int | None, ...]:
    """Each job's configuration index (None: no GPUs), as CBC answers the artifact's program.

    ``value`` is the (jobs, configurations) matrix A, held as the artifact holds it (single
    precision); ``type_of`` and ``gpus`` give each configuration's GPU type and count,
    ``capacity`` each type's GPUs. Raises RuntimeError when CBC does not report an optimum."""
    import cvxpy as cp

    table = np.asarray(value, dtype=np.float32)
    jobs, configs = table.shape
    types = len(np.asarray(capacity))
    if jobs == 0:
        return ()
    per_type = np.zeros((configs, types), dtype=np.uint32)  # a configuration's GPUs by type
    per_type[np.arange(configs), np.asarray(type_of)] = np.asarray(gpus, dtype=np.uint32)
    weights = np.ones((1, jobs), dtype=np.float32)
    x = cp.Variable(shape=table.shape, integer=True)
    # The artifact's expressions, term by term (its rigid-job terms are absent: a zero).
    objective = cp.sum(weights @ cp.multiply(x, table))
    objective += 0
    chosen = cp.sum(x)
    chosen += 0
    objective += lambda_n * (jobs - chosen)
    used = 0
    used += cp.sum(x @ per_type, axis=0)
    totals = np.asarray(capacity).astype(np.uint32)
    constraints = [x >= 0, x <= 1, used <= totals, used >= 0]
    constraints.append(
        x @ np.ones((configs, 1), dtype=np.uint32) <= np.ones((jobs, 1), dtype=np.uint32)
    )
    for job, config in (pinned or {}).items():
        constraints.append(x[job, config] == 1)
    goal = cp.Minimize(objective) if minimise else cp.Maximize(objective)
    problem = cp.Problem(goal, constraints=constraints)
    problem.solve(
        solver=cp.CBC,
        verbose=False,
        numberThreads=THREADS,
        allowablePercentageGap=mip_rel_gap * 100,
    )
    if problem.status != "optimal":
        raise RuntimeError(f"CBC did not solve the round's program: {problem.status}")
    answer = np.round(x.value, decimals=0).astype(np.uint32)
    picked = np.argmax(answer, axis=1)
    return tuple(int(picked[i]) if answer[i].sum() else None for i in range(jobs))
