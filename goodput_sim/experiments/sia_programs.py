"""sia's round programs against the Sia reference simulator's, round by round.

Where two runs make the same allocations, the first round whose program differs shows why
they will part: a job's fitted throughput parameters, its gradient statistics, or a value A
of the program. The reference's programs are recorded by ``benchmarks/sia_reference_hook.py``
(run with the reference's own Python); ours by :func:`record_programs`. Rounds are matched in
order (both simulators solve a program in the same rounds while they agree).
"""

from __future__ import annotations

import contextlib
import dataclasses
import json
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from goodput_sim.policies.sia import Sia

Belief = tuple[tuple[float, ...], tuple[float, float]] | None  # (parameters, statistics)


@dataclass(frozen=True)
class ProgramRound:
    """One round's program: its jobs in order, its configurations as ``type:nodes:gpus``, the
    values A (jobs x configurations; NaN where a job may not take a configuration) and each
    job's belief per GPU type."""

    jobs: tuple[str, ...]
    configs: tuple[str, ...]
    values: np.ndarray
    beliefs: dict[str, dict[str, Belief]]


def read_reference_programs(path: str | Path) -> list[ProgramRound]:
    """The rounds ``benchmarks/sia_reference_hook.py`` wrote."""
    out = []
    for entry in json.loads(Path(path).read_text()):
        beliefs = {
            job: {t: None if b is None else (tuple(b[0]), tuple(b[1])) for t, b in types.items()}
            for job, types in entry["beliefs"].items()
        }
        values = np.array(entry.get("values", []), dtype=float)
        out.append(ProgramRound(tuple(entry["jobs"]), tuple(entry["configs"]), values, beliefs))
    return out


class _Enough(Exception):
    pass


class _Recording(Sia):
    """sia that keeps each round's program and stops after ``rounds`` of them."""

    def __init__(self, rounds: int, **values):
        super().__init__(**values)
        self.rounds, self.recorded = rounds, []

    def program(self, snapshot):
        program = super().program(snapshot)
        if program is None:
            return None
        if len(self.recorded) == self.rounds:
            raise _Enough
        beliefs = {}
        for job in program.jobs:
            typed = dict(job.type_beliefs) if job.type_beliefs else {}
            beliefs[job.name] = {
                t: None
                if b.params is None
                else (dataclasses.astuple(b.params), (b.grad_sqr, b.grad_var))
                for t, b in typed.items()
            }
        configs = tuple(f"{c.gpu_type}:{c.nodes}:{c.gpus}" for c in program.configs)
        values = np.where(program.allowed, program.values, np.nan)
        names = tuple(j.name for j in program.jobs)
        self.recorded.append(ProgramRound(names, configs, values, beliefs))
        return program


def record_programs(workload, profiles, cluster, params=None, rounds: int = 60):
    """sia's first ``rounds`` programs on ``workload`` (measurements read as the reference
    read them)."""
    from goodput_sim.experiments.sia_trace import _simulation

    policy = _Recording(rounds, **dict(params or {}))
    with contextlib.suppress(_Enough):
        _simulation(workload, profiles, cluster, policy).run()
    return policy.recorded


def first_difference(
    ours: list[ProgramRound], theirs: list[ProgramRound], tolerance: float = 1e-9
) -> tuple[int, list[str]] | None:
    """The first round (index) whose programs differ, with what differs: jobs, a belief's
    parameters or statistics (relative ``tolerance``), or a value A (by more than 1e-6: the
    reference's values are single-precision) where the job may take the configuration."""
    for k, (mine, other) in enumerate(zip(ours, theirs, strict=False)):
        if mine.jobs != other.jobs:
            return k, [f"jobs: ours {list(mine.jobs)}, reference {list(other.jobs)}"]
        found = [*_belief_differences(mine, other, tolerance), *_value_differences(mine, other)]
        if found:
            return k, found
    return None


def _belief_differences(mine: ProgramRound, other: ProgramRound, tolerance: float) -> list[str]:
    found = []
    for job, types in other.beliefs.items():
        for gpu_type, theirs in types.items():
            ours = mine.beliefs.get(job, {}).get(gpu_type)
            if (ours is None) != (theirs is None):
                found.append(f"{job} on {gpu_type}: a belief on one side only")
            elif ours is not None:
                pairs = (("parameters", ours[0], theirs[0]), ("statistics", ours[1], theirs[1]))
                for what, a, b in pairs:
                    if not np.allclose(a, b, rtol=tolerance, atol=0):
                        mine_, other_ = [float(v) for v in a], [float(v) for v in b]
                        found.append(f"{job} on {gpu_type}: {what} {mine_} against {other_}")
    return found


def _value_differences(mine: ProgramRound, other: ProgramRound) -> list[str]:
    if other.values.size == 0:
        return []
    column = {c: i for i, c in enumerate(mine.configs)}
    found = []
    for j, config in enumerate(other.configs):
        i = column.get(config)
        if i is None:
            found.append(f"configuration {config} in the reference's program only")
            continue
        a, b = mine.values[:, i], other.values[:, j]
        for row in np.flatnonzero(~np.isnan(a) & (np.abs(a - b) > 1e-6)):
            found.append(f"{mine.jobs[row]} at {config}: A {a[row]:.2f} against {b[row]:.2f}")
    return found
