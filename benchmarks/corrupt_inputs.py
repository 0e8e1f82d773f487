"""A seeded corpus of corrupted inputs, each run under fifo and goodput through the CLI.

Every input is a valid one with one thing broken: a workload cell, a cluster YAML field, a
profile field, a measurement cell (when the Pollux reference is present) or an engine option.
Each run ends in one of:

* ``refused``: exit 2 with exactly one line on stderr, and no results folder;
* ``ran``: exit 0 with sane results (every job reported, times ordered, nothing negative or
  non-finite where it must not be, standard JSON);
* ``silently wrong``: exit 0 with results that fail those checks;
* ``traceback``, ``multi-line error`` or ``crash`` (another exit code);
* ``hang``: no end within the time limit.

Usage: ``python benchmarks/corrupt_inputs.py [--cases N] [--seed S] [--workers W]``; the outcome
table is printed and saved to ``benchmarks/results/corrupt_inputs.json``.
"""

from __future__ import annotations

import argparse
import csv
import json
import math
import shutil
import signal
import sys
import tempfile
import time
from collections import Counter
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

import numpy as np
import pandas as pd
import yaml
from common import REFERENCE, machine, save

ROOT = Path(__file__).resolve().parents[1]
HEADER = "name,time,application,num_replicas,batch_size"
BASE_JOBS = [
    "ncf-0,0,ncf,1,32768",
    "cifar10-1,30,cifar10,4,2048",
    "bert-2,90,bert,2,384",
    "yolov3-3,200,yolov3,4,64",
]
JUNK = [
    "",
    " ",
    "nan",
    "inf",
    "-inf",
    "-1",
    "0",
    "-0",
    "1e20",
    "1e308",
    "1e-300",
    "2.5",
    "abc",
    "9" * 30,
    "0x10",
    "1_000",
    "\x00",
    "é",
    ";",
    "=",
    "a;b=c",
    "1,2",
    '"',
    "None",
    "true",
    "-1e20",
    "4e3",
    "1000000",
    "99999999999999999999",
]
YAML_JUNK = [
    0,
    -1,
    1.5,
    float("nan"),
    float("inf"),
    10**30,
    2**63,
    "",
    "x",
    [],
    [1, 2],
    {},
    {"a": 1},
    None,
    True,
    "1e308",
    -(10**20),
]
TIME_LIMIT = 60  # seconds per run; a run still going then is a hang


def _workload_text(rng: np.random.Generator) -> tuple[str, str]:
    rows = [r.split(",") for r in BASE_JOBS]
    kind = rng.integers(0, 6)
    if kind <= 2:  # one cell
        row, col = rng.integers(0, len(rows)), rng.integers(0, 5)
        value = JUNK[rng.integers(0, len(JUNK))]
        rows[row][col] = value
        what = f"workload cell ({row}, {HEADER.split(',')[col]}) = {value!r}"
        text = HEADER + "\n" + "\n".join(",".join(r) for r in rows) + "\n"
    elif kind == 3:  # structure
        choices = {
            "empty file": "",
            "header only": HEADER + "\n",
            "missing column": "name,time,application,num_replicas\nj,0,ncf,1\n",
            "duplicate names": HEADER + "\nj,0,ncf,1,32768\nj,1,ncf,1,32768\n",
            "short row": HEADER + "\nj,0,ncf\n",
            "binary": "\x89PNG\r\n\x1a\n\x00\x00",
            "unknown application": HEADER + "\nj,0,gpt,1,32\n",
            "too many GPUs": HEADER + "\nj,0,cifar10,1000,2048\n",
        }
        names = sorted(choices)
        what = names[rng.integers(0, len(names))]
        text = choices[what]
    elif kind == 4:  # a numeric cell pushed to an extreme
        row = rng.integers(0, len(rows))
        col = 1 + rng.integers(0, 4) if rng.random() < 0.8 else 1
        col = int(col if col != 2 else 3)
        value = str(float(rng.choice([1e6, 1e9, 1e12, 1e15, 1e18])) * rng.choice([1, -1]))
        rows[row][col] = value
        what = f"workload cell ({row}, {HEADER.split(',')[col]}) = {value}"
        text = HEADER + "\n" + "\n".join(",".join(r) for r in rows) + "\n"
    else:  # a random printable line appended
        junk = "".join(chr(int(c)) for c in rng.integers(32, 127, rng.integers(1, 40)))
        what = f"extra line {junk!r}"
        text = HEADER + "\n" + "\n".join(",".join(r) for r in rows) + "\n" + junk + "\n"
    return what, text


def _cluster_text(rng: np.random.Generator) -> tuple[str, str | bytes]:
    base = {"nodes": 4, "gpus_per_node": 4, "gpu_type": "T4"}
    kind = rng.integers(0, 4)
    if kind <= 1:
        key = ["nodes", "gpus_per_node", "gpu_type"][rng.integers(0, 3)]
        value = YAML_JUNK[rng.integers(0, len(YAML_JUNK))]
        base[key] = value
        return f"cluster {key} = {value!r}", yaml.safe_dump({"cluster": base})
    if kind == 2:
        groups = [dict(base), {"nodes": int(rng.integers(-2, 5)), "gpus_per_node": 4}]
        if rng.random() < 0.5:
            groups[1]["gpu_type"] = str(rng.choice(["T4", "A100", "", "t4"]))
        return f"cluster groups {groups[1]}", yaml.safe_dump({"cluster": {"groups": groups}})
    choices = {
        "deep nesting": "nodes: " + "[" * 500 + "]" * 500,
        "alias": "a: &a [1, 2]\nnodes: *a\n",
        "not utf-8": b"nodes: \xff\xfe\n",
        "tabs": "cluster:\n\tnodes: 4\n",
        "scalar": "7\n",
        "unknown key": "nodes: 4\ngpus_per_node: 4\nracks: 2\n",
        "empty": "",
    }
    names = sorted(choices)
    what = names[rng.integers(0, len(names))]
    return f"cluster {what}", choices[what]


def _leaves(data, path=()):
    if isinstance(data, dict):
        for k, v in data.items():
            yield from _leaves(v, (*path, k))
    elif isinstance(data, list) and data and not isinstance(data[0], list | dict):
        yield path
    elif isinstance(data, list):
        for i, v in enumerate(data):
            yield from _leaves(v, (*path, i))
    else:
        yield path


def _profile_case(rng: np.random.Generator, folder: Path) -> str:
    """Corrupt one field of one bundled profile, in a copy of the profile folder."""
    shutil.copytree(ROOT / "traces" / "profiles", folder)
    files = sorted(folder.glob("*.yaml"))
    path = files[rng.integers(0, len(files))]
    data = yaml.safe_load(path.read_text())
    leaves = [p for p in _leaves(data) if p and p[0] != "provenance"]
    leaf = leaves[rng.integers(0, len(leaves))]
    target = data
    for key in leaf[:-1]:
        target = target[key]
    current = target[leaf[-1]]
    kind = rng.integers(0, 4)
    if kind == 0:
        del target[leaf[-1]]
        what = "deleted"
    elif kind == 1 and isinstance(current, list) and len(current) > 1:
        target[leaf[-1]] = list(reversed(current))
        what = "reversed"
    else:
        value = YAML_JUNK[rng.integers(0, len(YAML_JUNK))]
        if isinstance(current, list) and rng.random() < 0.6 and current:
            current = list(current)
            current[rng.integers(0, len(current))] = value
            target[leaf[-1]] = current
        else:
            target[leaf[-1]] = value
        what = f"= {value!r}"
    path.write_text(yaml.safe_dump(data, sort_keys=False))
    return f"profile {path.name} {'.'.join(map(str, leaf))} {what}"


def _measurement_case(rng: np.random.Generator, folder: Path) -> str:
    """Corrupt one cell (or the order of one column) of one reference measurement file."""
    apps = ["bert", "cifar10", "deepspeech2", "imagenet", "ncf", "yolov3"]
    shutil.copytree(REFERENCE / "traces", folder, ignore=shutil.ignore_patterns("philly.csv"))
    app = apps[rng.integers(0, len(apps))]
    files = sorted((folder / app).glob("*.csv"))
    path = files[rng.integers(0, len(files))]
    frame = pd.read_csv(path, dtype=str)
    column = frame.columns[rng.integers(0, len(frame.columns))]
    kind = rng.integers(0, 3)
    if kind == 0:
        row = rng.integers(0, len(frame))
        value = JUNK[rng.integers(0, len(JUNK))]
        frame.loc[row, column] = value
        what = f"cell ({row}, {column}) = {value!r}"
    elif kind == 1:
        values = frame[column].to_numpy()
        frame[column] = values[rng.permutation(len(values))]
        what = f"column {column} shuffled"
    else:
        frame[column] = [f"{-abs(float(v))!r}" if _number(v) else v for v in frame[column]]
        what = f"column {column} negated"
    frame.to_csv(path, index=False)
    return f"measurement {app}/{path.name} {what}"


def _number(text: str) -> bool:
    try:
        return math.isfinite(float(text))
    except ValueError:
        return False


OPTION_CASES = [
    ("--interval", ["0", "-60", "inf", "nan", "1e-9", "1e9", "x", "0.5", "30"]),
    ("--restart-delay", ["-1", "inf", "nan", "1e12", "x", "0"]),
    ("--interference", ["-0.1", "1", "1.5", "nan", "x", "0.25"]),
    ("--horizon", ["0", "-5", "inf", "nan", "1e300", "x", "600"]),
    ("--cluster", ["0x4", "4x0", "x", "99999999999999999999x4", "16x40000000", "4x4x4", "", "2x4"]),
    ("--seed", ["-1", "x", "1e3", "99999999999999999999999"]),
    ("--param", ["p=5", "p=nan", "nope=1", "p", "=1", "restart_penalty=maybe", "p=-0.5"]),
    ("--agent", ["psychic", "", "critical-batch", "tail-weighted"]),
    ("--placement-order", ["sideways", ""]),
]


def make_case(index: int, seed: int, scratch: Path) -> dict:
    """Case ``index`` of the corpus: its description and the CLI arguments after the policy."""
    rng = np.random.default_rng([seed, index])
    folder = scratch / f"case-{index}"
    folder.mkdir(parents=True)
    workload = folder / "workload.csv"
    workload.write_text(HEADER + "\n" + "\n".join(BASE_JOBS) + "\n")
    args = ["--workload", str(workload), "--cluster", "4x4"]
    kinds = ["workload", "cluster", "profile", "option"]
    if (REFERENCE / "traces").is_dir():
        kinds.append("measurement")
    kind = kinds[index % len(kinds)]
    if kind == "workload":
        what, text = _workload_text(rng)
        workload.write_text(text)
    elif kind == "cluster":
        what, text = _cluster_text(rng)
        path = folder / "cluster.yaml"
        path.write_bytes(text if isinstance(text, bytes) else text.encode())
        args[3] = str(path)
    elif kind == "profile":
        what = _profile_case(rng, folder / "profiles")
        args += ["--profiles", str(folder / "profiles")]
    elif kind == "measurement":
        what = _measurement_case(rng, folder / "traces")
        args += ["--profiles", str(folder / "traces")]
    else:
        option, values = OPTION_CASES[rng.integers(0, len(OPTION_CASES))]
        value = values[rng.integers(0, len(values))]
        what = f"{option} {value!r}"
        if option == "--cluster":
            args[3] = value
        else:
            args += [option, value]
    return {"index": index, "kind": kind, "what": what, "args": args, "folder": str(folder)}


class _Timeout(Exception):
    pass


def _alarm(signum, frame):
    raise _Timeout


def sane_results(out: Path, workload: Path) -> str | None:
    """None if the results folder is sane, else what is wrong."""
    try:
        jobs = pd.read_csv(out / "jobs.csv")
        json.loads(
            (out / "manifest.json").read_text(),
            parse_constant=lambda token: (_ for _ in ()).throw(ValueError(token)),
        )
    except Exception as err:  # noqa: BLE001 - any failure to read back is a finding
        return f"unreadable results: {err}"
    with workload.open(newline="", encoding="utf-8", errors="replace") as handle:
        expected = sum(1 for row in csv.reader(handle) if any(f.strip() for f in row)) - 1
    if expected is not None and len(jobs) != expected:
        return f"{len(jobs)} jobs reported, {expected} in the workload"
    done = jobs[jobs["finished"].astype(bool)]
    checks = {
        "negative GPU-seconds": (jobs["gpu_seconds"] < 0).any(),
        "non-finite GPU-seconds": ~np.isfinite(jobs["gpu_seconds"]).all(),
        "finish before arrival": (done["finish"] < done["arrival"]).any(),
        "non-positive JCT": (done["jct"] <= 0).any(),
        "non-finite JCT": ~np.isfinite(done["jct"]).all(),
        "start before arrival": (
            jobs["start"].dropna() < jobs.loc[jobs["start"].notna(), "arrival"]
        ).any(),
        "negative examples": (jobs["examples"] < 0).any(),
    }
    wrong = [name for name, bad in checks.items() if bool(bad)]
    return ", ".join(wrong) or None


def run_case(case: dict, policy: str) -> dict:
    """One CLI run of a case, classified."""
    from click.testing import CliRunner

    from goodput_sim.cli import main

    out = Path(case["folder"]) / f"out-{policy}"
    args = ["run", "--policy", policy, *case["args"], "--out", str(out)]
    signal.signal(signal.SIGALRM, _alarm)
    signal.alarm(TIME_LIMIT)
    started = time.perf_counter()
    try:
        result = CliRunner().invoke(main, args, catch_exceptions=True)
    except _Timeout:
        return {**case, "policy": policy, "outcome": "hang", "detail": f">{TIME_LIMIT} s"}
    finally:
        signal.alarm(0)
    seconds = time.perf_counter() - started
    stderr = [line for line in result.stderr.splitlines() if line.strip()]
    exception = result.exception
    if isinstance(exception, _Timeout):
        outcome, detail = "hang", f">{TIME_LIMIT} s"
    elif exception is not None and not isinstance(exception, SystemExit):
        outcome, detail = "traceback", f"{type(exception).__name__}: {exception}"[:200]
    elif result.exit_code == 2:
        outcome = "refused" if len(stderr) == 1 else "multi-line error"
        detail = stderr[0] if stderr else ""
        if out.exists():
            outcome, detail = "silently wrong", "refused but left a results folder"
    elif result.exit_code == 0:
        wrong = sane_results(out, Path(case["args"][1]))
        outcome, detail = ("silently wrong", wrong) if wrong else ("ran", "")
    else:
        outcome, detail = "crash", f"exit {result.exit_code}: {' | '.join(stderr[:2])}"[:200]
    return {**case, "policy": policy, "outcome": outcome, "detail": detail, "seconds": seconds}


def _run_pair(args: tuple) -> list[dict]:
    case, policies = args
    return [run_case(case, p) for p in policies]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cases", type=int, default=320)
    parser.add_argument("--seed", type=int, default=2026)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--policies", default="fifo,goodput")
    args = parser.parse_args()
    policies = args.policies.split(",")
    scratch = Path(tempfile.mkdtemp(prefix="corrupt-inputs-"))
    try:
        cases = [make_case(k, args.seed, scratch) for k in range(args.cases)]
        started = time.perf_counter()
        with ProcessPoolExecutor(max_workers=args.workers) as pool:
            results = [
                r for pair in pool.map(_run_pair, [(c, policies) for c in cases]) for r in pair
            ]
        wall = time.perf_counter() - started
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    table = Counter((r["kind"], r["outcome"]) for r in results)
    outcomes = [
        "refused",
        "ran",
        "silently wrong",
        "traceback",
        "multi-line error",
        "crash",
        "hang",
    ]
    kinds = sorted({r["kind"] for r in results})
    print(
        f"{len(cases)} corrupted inputs x {len(policies)} policies = {len(results)} runs "
        f"in {wall:.0f} s (seed {args.seed})"
    )
    print(f"{'input kind':<12}" + "".join(f"{o:>17}" for o in outcomes))
    for kind in kinds:
        print(f"{kind:<12}" + "".join(f"{table[(kind, o)]:>17}" for o in outcomes))
    totals = Counter(r["outcome"] for r in results)
    print(f"{'all':<12}" + "".join(f"{totals[o]:>17}" for o in outcomes))
    bad = [r for r in results if r["outcome"] not in ("refused", "ran")]
    for r in bad[:30]:
        print(f"  {r['outcome']}: case {r['index']} {r['policy']} {r['what']} -> {r['detail']}")
    save(
        "corrupt_inputs",
        {
            "machine": machine(),
            "seed": args.seed,
            "cases": len(cases),
            "policies": policies,
            "wall_seconds": wall,
            "outcomes": dict(totals),
            "by_kind": {k: {o: table[(k, o)] for o in outcomes} for k in kinds},
            "failures": [
                {k: r[k] for k in ("index", "kind", "what", "policy", "outcome", "detail")}
                for r in bad
            ],
        },
    )
    sys.exit(1 if bad else 0)


if __name__ == "__main__":
    main()
