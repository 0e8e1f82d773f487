"""Round-by-round tracing of the sia policy against another simulator's allocations.

An *allocation trace* is a table with one row per job holding GPUs per scheduling round:

    time,job,gpu_type,gpus

``time`` is the round (seconds since the start) at which the allocation was decided and from
which it holds; a job that has no row at a round holds no GPUs then. The CSV form of a trace is
exactly these four columns with that header. :func:`trace_from_reference_log` builds one from
the Sia reference simulator's run log (one JSON object per round: ``timestamp``, and under
``submitted_jobs`` each job's ``name`` and ``allocation`` as ``[gpu_type, [node ids]]``).

Two uses:

* :func:`trace_sia` runs sia freely and records its trace; :func:`compare_traces` finds the
  first round at which two traces part, and counts how often they agree, on which GPU type
  each job starts, and each job's restarts and moves between types.
* :func:`replay_sia` runs sia but makes it *follow* a given trace: every round it builds and
  solves its own program, records what it would have chosen and its goodput rows, and then
  applies the trace's allocation instead. Both simulators then see the same history, so any
  round where sia's own choice differs from the trace's points at a difference in the
  program (a goodput entry, a restart factor, the candidate set, a tie) rather than at an
  earlier divergence.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pandas as pd

from goodput_sim.inputs.cluster import ClusterSpec
from goodput_sim.policies.base import Decision, Snapshot
from goodput_sim.policies.sia import Config, Sia, place

COLUMNS = ("time", "job", "gpu_type", "gpus")


def read_trace(path: str | Path) -> pd.DataFrame:
    """An allocation trace from its CSV form (columns ``time,job,gpu_type,gpus``)."""
    frame = pd.read_csv(path)
    missing = [c for c in COLUMNS if c not in frame.columns]
    if missing:
        raise ValueError(f"{path}: allocation trace lacks columns {missing}")
    return _normal(frame)


def _normal(frame: pd.DataFrame) -> pd.DataFrame:
    frame = frame.loc[:, list(COLUMNS)].copy()
    frame["time"] = frame["time"].astype(float)
    frame["gpus"] = frame["gpus"].astype(int)
    frame["job"] = frame["job"].astype(str)
    frame["gpu_type"] = frame["gpu_type"].astype(str)
    frame = frame[frame["gpus"] > 0]
    return frame.sort_values(["time", "job"], kind="stable").reset_index(drop=True)


def trace_from_reference_log(lines: Iterable[str]) -> pd.DataFrame:
    """The allocation trace in the Sia reference simulator's run log (JSON lines)."""
    rows = []
    for line in lines:
        if not line.strip():
            continue
        record = json.loads(line)
        for job in record["submitted_jobs"]:
            allocation = job.get("allocation") or []
            if len(allocation) == 2 and allocation[0] is not None and len(allocation[1]):
                rows.append((record["timestamp"], job["name"], allocation[0], len(allocation[1])))
    return _normal(pd.DataFrame(rows, columns=list(COLUMNS)))


def jobs_from_reference_log(lines: Iterable[str]) -> pd.DataFrame:
    """Per-job results in the Sia reference simulator's run log: name, submission and
    completion times, JCT, restarts (from its last record) and the GPU types it ran on in
    order (``a>b>a``, from each record's ``cluster``), for the jobs that completed."""
    types: dict[str, list[str]] = {}
    last = None
    for line in lines:
        if not line.strip():
            continue
        last = json.loads(line)
        for job in last["submitted_jobs"]:
            seen = types.setdefault(job["name"], [])
            gpu_type = job.get("cluster")
            if gpu_type is not None and (not seen or seen[-1] != gpu_type):
                seen.append(gpu_type)
    if last is None:
        raise ValueError("empty reference log")
    rows = [
        {
            "name": job["name"],
            "submission_time": job["submission_time"],
            "completion_time": job["completion_time"],
            "jct": job["completion_time"] - job["submission_time"],
            "restarts": job["num_restarts"] or 0,
            "gpu_types": ">".join(types.get(job["name"], [])),
        }
        for job in last["submitted_jobs"]
        if job["completion_time"] is not None
    ]
    return pd.DataFrame(rows)


class TraceRecorder:
    """A round observer that records the allocation trace of a run."""

    def __init__(self):
        self.rows: list[tuple[float, str, str, int]] = []

    def __call__(self, record) -> None:
        for job in record.running:
            self.rows.append((float(record.time), job.name, str(job.gpu_type), job.replicas))

    def frame(self) -> pd.DataFrame:
        return _normal(pd.DataFrame(self.rows, columns=list(COLUMNS)))


# ----------------------------------------------------------------------------------- compare
@dataclass(frozen=True)
class Divergence:
    """The first round two traces part: the jobs whose allocations differ there, each as
    (job, ours, theirs) with an allocation as ``"type:gpus"`` or ``"-"`` for none."""

    time: float
    jobs: tuple[tuple[str, str, str], ...]


@dataclass(frozen=True)
class TraceComparison:
    """How two allocation traces agree.

    ``rounds_agreeing``: the share of (round, job) pairs, over jobs active in either trace,
    with the same type and GPU count. ``first_type_agreeing``: the share of jobs (started in
    both) that start on the same GPU type. ``restarts`` and ``type_moves``: totals over jobs
    in each trace (a restart is any change of allocation to another non-empty one, or a start
    after a stop; a type move a restart onto another type) as (ours, theirs)."""

    divergence: Divergence | None
    rounds_agreeing: float
    first_type_agreeing: float
    restarts: tuple[int, int]
    type_moves: tuple[int, int]
    per_job: pd.DataFrame = field(repr=False)


def _label(cell) -> str:
    return "-" if cell is None else f"{cell[0]}:{cell[1]}"


def _by_round(trace: pd.DataFrame) -> dict[float, dict[str, tuple[str, int]]]:
    rounds: dict[float, dict[str, tuple[str, int]]] = {}
    for time, job, gpu_type, gpus in trace.itertuples(index=False):
        rounds.setdefault(float(time), {})[job] = (gpu_type, int(gpus))
    return rounds


def job_histories(trace: pd.DataFrame, interval: float | None = None) -> pd.DataFrame:
    """Per job: the first GPU type, restarts and moves between types, from a trace. A job
    that holds GPUs and then holds different ones, or holds some again after a round without
    (a gap longer than ``interval``, by default the shortest time between rounds of the
    trace), restarts; a restart on another GPU type is also a type move."""
    trace = _normal(trace)
    times = np.unique(trace["time"].to_numpy())
    if interval is None:
        interval = float(np.diff(times).min()) if len(times) > 1 else np.inf
    out = []
    for job, rows in trace.groupby("job", sort=True):
        restarts = moves = 0
        last = None
        for time, _, gpu_type, gpus in rows.itertuples(index=False):
            if last is not None:
                then, held = last
                if (gpu_type, gpus) != held or time - then > interval * (1 + 1e-9):
                    restarts += 1
                    moves += gpu_type != held[0]
            last = (time, (gpu_type, gpus))
        out.append((job, rows["gpu_type"].iloc[0], restarts, moves))
    return pd.DataFrame(out, columns=["job", "first_type", "restarts", "type_moves"])


def compare_traces(ours: pd.DataFrame, theirs: pd.DataFrame) -> TraceComparison:
    """Compare two allocation traces round by round (rounds present in either)."""
    a, b = _by_round(_normal(ours)), _by_round(_normal(theirs))
    times = sorted(set(a) | set(b))
    divergence = None
    agree = total = 0
    for time in times:
        mine, other = a.get(time, {}), b.get(time, {})
        jobs = sorted(set(mine) | set(other))
        differ = [
            (j, _label(mine.get(j)), _label(other.get(j)))
            for j in jobs
            if mine.get(j) != other.get(j)
        ]
        total += len(jobs)
        agree += len(jobs) - len(differ)
        if differ and divergence is None:
            divergence = Divergence(time, tuple(differ))
    ha, hb = job_histories(ours), job_histories(theirs)
    both = ha.merge(hb, on="job", how="outer", suffixes=("_ours", "_theirs"))
    started = both.dropna(subset=["first_type_ours", "first_type_theirs"])
    same_first = float((started["first_type_ours"] == started["first_type_theirs"]).mean())
    return TraceComparison(
        divergence,
        agree / total if total else 1.0,
        same_first if len(started) else 1.0,
        (int(ha["restarts"].sum()), int(hb["restarts"].sum())),
        (int(ha["type_moves"].sum()), int(hb["type_moves"].sum())),
        both,
    )


# ------------------------------------------------------------------------------------- runs
def _simulation(workload, profiles, cluster, policy, observers=()):
    from goodput_sim.api import _workload, as_cluster, make_policy_and_agent
    from goodput_sim.profiles import load_profiles
    from goodput_sim.sim.engine import Simulation

    # Read as the reference read them (job by job, a last bit can change an allocation).
    profile_map = (
        profiles if isinstance(profiles, dict) else load_profiles(profiles, legacy_floats=True)
    )
    spec = as_cluster(cluster)
    frame = _workload(workload, profile_map, spec)
    _, agent = make_policy_and_agent("sia")
    return Simulation(frame, profile_map, policy, spec, None, agent, None, observers)


def trace_sia(
    workload, profiles, cluster, params: Mapping | None = None
) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Run sia; return its jobs table and its allocation trace."""
    recorder = TraceRecorder()
    result = _simulation(workload, profiles, cluster, Sia(**dict(params or {})), [recorder]).run()
    return result.jobs, recorder.frame()


@dataclass(frozen=True)
class ReplayRound:
    """One round of a replay: what sia chose on its own and what the trace made it do, per
    job, with its goodput row (before restart factors) and values, over ``configs``."""

    time: float
    configs: tuple[Config, ...]
    jobs: tuple[str, ...]
    own: tuple[Config | None, ...]
    imposed: tuple[Config | None, ...]
    goodput: np.ndarray
    values: np.ndarray
    allowed: np.ndarray
    views: tuple = field(repr=False, default=())  # the jobs as sia saw them (JobView)


class ReplaySia(Sia):
    """sia that solves its own program every round but applies the trace's allocations
    (each job's type and GPU count; its nodes placed as sia places them). After the trace's
    last round it runs on its own choices."""

    def __init__(self, trace: pd.DataFrame, seed: int = 0, **values):
        super().__init__(seed, **values)
        self._imposed = _by_round(_normal(trace))
        self._end = max(self._imposed, default=-1.0)
        self.rounds: list[ReplayRound] = []

    def allocate(self, snapshot: Snapshot) -> Decision:
        program = self.program(snapshot)
        if program is None:
            return Decision({})
        own = self.solve(program)
        if snapshot.time > self._end:  # past the trace: sia on its own
            self._previous = dict(own)
            return Decision(place(program.jobs, own, snapshot.cluster, self.free_same_shape_moves))
        imposed = {}
        wanted = self._imposed.get(float(snapshot.time), {})
        for job in program.jobs:
            if job.name in wanted:
                imposed[job.name] = _config(snapshot.cluster, *wanted[job.name])
        self.rounds.append(
            ReplayRound(
                float(snapshot.time),
                tuple(program.configs),
                tuple(j.name for j in program.jobs),
                tuple(own.get(j.name) for j in program.jobs),
                tuple(imposed.get(j.name) for j in program.jobs),
                program.goodput,
                program.values,
                program.allowed,
                tuple(program.jobs),
            )
        )
        self._previous = dict(imposed)
        return Decision(place(program.jobs, imposed, snapshot.cluster, self.free_same_shape_moves))


def _config(cluster: ClusterSpec, gpu_type: str, gpus: int) -> Config:
    """The configuration of ``gpus`` GPUs of ``gpu_type``: one node up to a node's size, else
    whole nodes."""
    size = int(
        cluster.capacity[cluster.node_type_index == cluster.type_order.index(gpu_type)].max()
    )
    return Config(gpu_type, max(1, -(-gpus // size)), gpus)


def replay_sia(
    trace: pd.DataFrame, workload, profiles, cluster, params: Mapping | None = None
) -> tuple[pd.DataFrame, list[ReplayRound]]:
    """Run sia made to follow ``trace``; return the jobs table and every round's record."""
    policy = ReplaySia(trace, **dict(params or {}))
    result = _simulation(workload, profiles, cluster, policy).run()
    return result.jobs, policy.rounds


def replay_disagreements(rounds: list[ReplayRound]) -> pd.DataFrame:
    """Every (round, job) where sia's own choice differs from the imposed one, with the
    values A of both choices in sia's program (NaN for no configuration): equal values mean
    a tie the two solvers broke differently."""
    rows = []
    for r in rounds:
        index = {c: k for k, c in enumerate(r.configs)}
        for i, job in enumerate(r.jobs):
            own, imposed = r.own[i], r.imposed[i]
            if own == imposed:
                continue
            rows.append(
                {
                    "time": r.time,
                    "job": job,
                    "own": _label(None if own is None else (own.gpu_type, own.gpus)),
                    "imposed": _label(
                        None if imposed is None else (imposed.gpu_type, imposed.gpus)
                    ),
                    "own_value": r.values[i, index[own]] if own in index else np.nan,
                    "imposed_value": r.values[i, index[imposed]] if imposed in index else np.nan,
                }
            )
    return pd.DataFrame(
        rows, columns=["time", "job", "own", "imposed", "own_value", "imposed_value"]
    )


# ------------------------------------------------------------------------------- job level
@dataclass(frozen=True)
class JobAgreement:
    """Per-job agreement of two runs' results (jobs paired by name; ``ratio`` is ours over
    theirs): average-JCT ratio, median |ratio - 1|, share of jobs within 10%, restarts and
    moves between GPU types (ours, theirs), and the share of jobs starting on the same type."""

    jobs: int
    avg_ratio: float
    median_error: float
    within_10: float
    restarts: tuple[int, int]
    type_moves: tuple[int, int]
    same_first_type: float

    def row(self) -> dict:
        return {
            "jobs": self.jobs,
            "avg_ratio": round(self.avg_ratio, 3),
            "median_error": round(self.median_error, 3),
            "within_10": round(self.within_10, 3),
            "restarts_ratio": round(self.restarts[0] / max(self.restarts[1], 1), 3),
            "type_moves_ratio": round(self.type_moves[0] / max(self.type_moves[1], 1), 3),
            "same_first_type": round(self.same_first_type, 3),
        }


def _moves(types: str) -> int:
    return max(len(str(types).split(">")) - 1, 0)


def job_agreement(ours: pd.DataFrame, theirs: pd.DataFrame) -> JobAgreement:
    """Compare two per-job tables with columns ``name``, ``jct``, ``restarts`` and
    ``gpu_types`` (types in order, ``>``-separated); both must hold the same jobs."""
    both = theirs.merge(ours, on="name", suffixes=("_ref", ""), validate="one_to_one")
    if len(both) != len(theirs) or len(both) != len(ours):
        raise ValueError(f"the two tables hold different jobs ({len(ours)} and {len(theirs)})")
    ratio = both["jct"] / both["jct_ref"]
    first = both["gpu_types"].astype(str).str.split(">").str[0]
    first_ref = both["gpu_types_ref"].astype(str).str.split(">").str[0]
    return JobAgreement(
        len(both),
        float(both["jct"].mean() / both["jct_ref"].mean()),
        float(np.median(np.abs(ratio - 1))),
        float((np.abs(ratio - 1) <= 0.10).mean()),
        (int(both["restarts"].sum()), int(both["restarts_ref"].sum())),
        (int(both["gpu_types"].map(_moves).sum()), int(both["gpu_types_ref"].map(_moves).sum())),
        float((first == first_ref).mean()),
    )
