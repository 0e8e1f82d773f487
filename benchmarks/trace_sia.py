"""Trace sia against the Sia reference simulator, round by round and job by job.

Inputs from the reference (any of):

* its run log (``--output`` of its simulator: one JSON object per round), read for the
  allocation trace and the per-job results;
* an allocation trace as CSV, ``time,job,gpu_type,gpus`` (one row per job holding GPUs per
  round; see goodput_sim.experiments.sia_trace);
* per-job results as CSV with columns ``name,jct,restarts,gpu_types``.

Commands:

    python benchmarks/trace_sia.py compare --reference-log w1.log --workload W.csv \\
        --profiles TRACES --cluster configs/cluster-sia-default.yaml [--param ties=reference]
        # runs sia, prints the first round the two traces part, round and job agreement

    python benchmarks/trace_sia.py replay --reference-log w1.log --workload W.csv ...
        # runs sia made to follow the reference's allocations; prints the rounds where sia's
        # own choice differs, and whether each is a tie (equal values) in sia's program

    python benchmarks/trace_sia.py programs --reference-programs programs.json \\
        --workload W.csv --profiles TRACES [--param solver=cbc]
        # the first round whose program differs from the reference's (recorded by
        # benchmarks/sia_reference_hook.py): a belief's parameters or statistics, a value A

    python benchmarks/trace_sia.py jobs --reference-jobs sia-philly-workload-1.csv \\
        --workload W.csv ... [--scatter out.png] [--seeds 0,1,2 --param ties=random]
        # job-level agreement (average ratio, median error, share within 10%, restarts and
        # type moves); with --seeds, one run per tie seed and the spread across them
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import pandas as pd

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from goodput_sim.experiments.sia_trace import (  # noqa: E402
    compare_traces,
    job_agreement,
    jobs_from_reference_log,
    read_trace,
    replay_disagreements,
    replay_sia,
    trace_from_reference_log,
    trace_sia,
)


def _params(items: list[str]) -> dict:
    out = {}
    for item in items or []:
        key, _, value = item.partition("=")
        try:
            out[key] = json.loads(value)
        except json.JSONDecodeError:
            out[key] = value
    return out


def _reference_trace(args) -> pd.DataFrame:
    if args.reference_log:
        return trace_from_reference_log(Path(args.reference_log).read_text().splitlines())
    return read_trace(args.reference_trace)


def _reference_jobs(args) -> pd.DataFrame:
    if args.reference_log:
        return jobs_from_reference_log(Path(args.reference_log).read_text().splitlines())
    return pd.read_csv(args.reference_jobs)


def compare(args) -> None:
    theirs = _reference_trace(args)
    _, ours = trace_sia(args.workload, args.profiles, args.cluster, _params(args.param))
    if args.out_trace:
        ours.to_csv(args.out_trace, index=False)
    result = compare_traces(ours, theirs)
    if result.divergence is None:
        print("the traces agree in every round")
    else:
        print(f"first round they part: t={result.divergence.time:g} s")
        for job, mine, other in result.divergence.jobs:
            print(f"  {job}: ours {mine}, reference {other}")
    print(f"(round, job) pairs agreeing: {result.rounds_agreeing:.1%}")
    print(f"jobs starting on the same GPU type: {result.first_type_agreeing:.1%}")
    print(f"restarts ours/reference: {result.restarts[0]}/{result.restarts[1]}")
    print(f"type moves ours/reference: {result.type_moves[0]}/{result.type_moves[1]}")


def replay(args) -> None:
    trace = _reference_trace(args)
    _, rounds = replay_sia(trace, args.workload, args.profiles, args.cluster, _params(args.param))
    end = trace["time"].max()
    differ = replay_disagreements([r for r in rounds if r.time <= end])
    decided = sum(len(r.jobs) for r in rounds if r.time <= end)
    ties = (differ["own_value"] == differ["imposed_value"]).sum()
    print(f"(round, job) decisions: {decided}; sia's own choice differs in {len(differ)}")
    print(f"  of which ties in sia's program (equal values): {ties}")
    if len(differ):
        print(differ.head(args.show).to_string(index=False))


def programs(args) -> None:
    from goodput_sim.experiments.sia_programs import (
        first_difference,
        read_reference_programs,
        record_programs,
    )

    theirs = read_reference_programs(args.reference_programs)
    ours = record_programs(
        args.workload, args.profiles, args.cluster, _params(args.param), len(theirs)
    )
    found = first_difference(ours, theirs)
    if found is None:
        print(f"the first {min(len(ours), len(theirs))} programs agree")
        return
    k, differences = found
    print(f"round {k + 1} (of those solving a program) differs:")
    for line in differences[: args.show]:
        print(f"  {line}")


def jobs(args) -> None:
    theirs = _reference_jobs(args)
    seeds = [int(s) for s in args.seeds.split(",")] if args.seeds else [None]
    rows, tables = [], []
    for seed in seeds:
        params = _params(args.param)
        if seed is not None:
            params["tie_seed"] = seed
        ours, _ = trace_sia(args.workload, args.profiles, args.cluster, params)
        agreement = job_agreement(ours, theirs)
        rows.append({"seed": seed, **agreement.row()})
        tables.append(ours)
    frame = pd.DataFrame(rows)
    print(frame.to_string(index=False))
    if len(frame) > 1:
        print("mean:", frame.drop(columns="seed").mean().round(3).to_dict())
        spread = [job_agreement(a, b).row() for a, b in zip(tables, tables[1:], strict=False)]
        print("between consecutive seeds:", pd.DataFrame(spread).mean().round(3).to_dict())
    if args.out_jobs:
        tables[0].to_csv(args.out_jobs, index=False)
    if args.scatter:
        from goodput_sim.experiments.sia_jobs_plot import scatter

        scatter(tables[0], theirs, args.scatter, args.title or Path(args.workload).stem)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    sub = parser.add_subparsers(dest="command", required=True)
    commands = (("compare", compare), ("replay", replay), ("programs", programs), ("jobs", jobs))
    for name, func in commands:
        p = sub.add_parser(name)
        p.set_defaults(func=func)
        p.add_argument("--workload", required=True)
        p.add_argument("--profiles", required=True, help="the reference's traces/ folder")
        p.add_argument("--cluster", default="configs/cluster-sia-default.yaml")
        p.add_argument("--param", action="append", help="sia parameter, key=value")
        p.add_argument("--reference-log", help="the reference simulator's run log")
        if name == "jobs":
            p.add_argument("--reference-jobs", help="per-job results CSV")
            p.add_argument("--seeds", help="tie seeds, comma-separated (with ties=random)")
            p.add_argument("--scatter", help="write a scatter of per-job JCTs (PNG)")
            p.add_argument("--title")
            p.add_argument("--out-jobs", help="write our per-job results (CSV)")
        else:
            p.add_argument("--reference-trace", help="allocation trace CSV")
        if name == "compare":
            p.add_argument("--out-trace", help="write our allocation trace (CSV)")
        if name in ("replay", "programs"):
            p.add_argument("--show", type=int, default=20)
        if name == "programs":
            p.add_argument("--reference-programs", required=True, help="sia_reference_hook.py's")
    args = parser.parse_args()
    args.func(args)


if __name__ == "__main__":
    main()
