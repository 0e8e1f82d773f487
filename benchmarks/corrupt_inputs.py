"""A seeded corpus of hostile inputs, run through the CLI: every surface a user can hand the
tool something broken on.

The hand-written table of ``tests/hostile_cases.py`` (one case per known root cause), then
seeded cases: a valid input with one thing broken. Surfaces: workload cells, cluster YAML
fields, profile fields, measurement cells (when the Pollux reference is present) and engine
options (each under fifo and goodput); saved manifests replayed, reported and plotted; run,
comparison and sweep folders with one file damaged; experiment files; failure, checkpoint,
autoscaling and budget options with failure traces; ``run --config`` files; typed clusters and
profiles; output names. Each case ends in one of:

* ``refused``: exit 2 with exactly one line on stderr, and nothing written;
* ``ran``: exit 0 with sane results (every job reported, times ordered, nothing negative or
  non-finite where it must not be, standard JSON, nothing written outside the chosen folder,
  a replay recording what it was given);
* ``guard``: a work or time guard stopped the run, exit 3, in one line;
* ``silently wrong`` (results that fail those checks, or a table case that ran where it must
  be refused), ``refused valid``, ``traceback``, ``multi-line error``, ``leftover`` (a refusal
  that wrote files), ``crash`` (another exit code) or ``hang`` (no end within 60 s).

Usage: ``python benchmarks/corrupt_inputs.py [--cases N] [--seed S] [--workers W]``; the outcome
table by surface is printed and saved to ``benchmarks/results/corrupt_inputs.json``.
"""

from __future__ import annotations

import argparse
import csv
import io
import json
import math
import os
import re
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
sys.path.insert(0, str(ROOT / "tests"))

from hostile_cases import EXPERIMENT as SMALL_EXPERIMENT  # noqa: E402
from hostile_cases import WORKLOAD as WORKLOAD_TEXT  # noqa: E402 - the hand-written table
from hostile_cases import Case, all_cases, json_paths, make_bases  # noqa: E402
from hostile_cases import run_case as hostile_run  # noqa: E402

from goodput_sim.errors import InputError  # noqa: E402
from goodput_sim.inputs.workload import MAX_LOAD  # noqa: E402
from goodput_sim.results.saved import MAX_SEED, SWEEP_COLUMNS, read_table  # noqa: E402
from goodput_sim.spec import setting  # noqa: E402

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


# --- Seeded mutations of saved manifests, results folders and experiment files -------------

RAW = "\x00raw{}\x00"  # a placeholder for a bare JSON token (NaN, 1e400, deep nesting)
RETYPED = ["abc", "", [], {}, None, True, False, [1, 2], {"a": 1}, "60", "1e3"]
HUGE = [1e300, 10**30, 2**63, 2**64 + 1, 1e18]
NEGATIVE = [-1, -1.5, -1e9, -(2**63), -0.0]
RAW_TOKENS = ["NaN", "Infinity", "-Infinity", "1e400", "-1e400"]
NESTING = [50, 1000, 100_000]
MANIFEST_SECTIONS = ["config", "cluster", "policy", "agent", "seed", "inputs", "summary"]
MANIFEST_SECTIONS += ["input_sha256", "stopped", "params", None]
CSV_JUNK = [*JUNK, "True", "False", "1.5.2", "x=1@2", "a=1;b", "@@", "{}", "[1]", "1e-5"]
NAMES = ["..", ".", "", "a/b", "-rf", "a\nb", "x" * 300, "caf\xe9", " e ", "a b", "~", "$HOME"]
NAMES += ["e\x00", "e\t", "../up", "/abs", "e" * 100, "e" * 101, "CON", "-", "_e", "e.", "1"]


def _get(data, path):
    for key in path:
        data = data[key]
    return data


def _pick(rng: np.random.Generator, items: list):
    return items[int(rng.integers(0, len(items)))]


def _mutate_json(rng: np.random.Generator, data: dict, section: str | None) -> tuple[str, dict]:
    """One mutation of ``data`` at a node under ``section`` (None: the whole object): its
    description and what it did (``op``, ``path``, ``value``, ``raw`` tokens)."""
    root = () if section is None else (section,)
    if section is not None and section not in data:
        data[section] = None
    nodes = list(json_paths(_get(data, root), root))
    path = _pick(rng, nodes)
    current = _get(data, path)
    ops = ["drop", "retype", "raw", "huge", "negative", "nested", "unknown key", "off by half"]
    op = _pick(rng, ops)
    raw = {}
    value: object = None
    if op == "unknown key" and not isinstance(current, dict):
        op = "retype"
    if op == "off by half" and not isinstance(current, int | float):
        op = "huge"
    if op == "drop" and not path:
        op = "retype"
    if op == "drop":
        parent = _get(data, path[:-1])
        del parent[path[-1]]
    elif op == "unknown key":
        key = _pick(rng, ["bogus", "nodes_", "restart_dely", "", "name "])
        current[key] = 1
        value = key
    else:
        if op == "retype":
            value = _pick(rng, RETYPED)
        elif op == "huge":
            value = _pick(rng, HUGE)
        elif op == "negative":
            value = _pick(rng, NEGATIVE)
        elif op == "off by half":
            value = current + 0.5 if isinstance(current, int | float) else 0.5
        else:  # a bare token: non-standard JSON, out-of-range numbers or deep nesting
            token = _pick(rng, RAW_TOKENS)
            if op == "nested":
                depth = _pick(rng, NESTING)
                token = "[" * depth + "]" * depth
            value = RAW.format(len(raw))
            raw[value] = token
        if path:
            _get(data, path[:-1])[path[-1]] = value
        else:
            data = value  # the whole manifest replaced
    shown = raw.get(value, value) if isinstance(value, str) else value
    shown = f"{str(shown)[:20]}...x{len(str(shown))}" if len(repr(shown)) > 40 else repr(shown)
    where = ".".join(map(str, path)) or "(root)"
    what = f"{where} {op}" + ("" if op == "drop" else f" {shown}")
    return what, {"op": op, "path": path, "value": value, "raw": raw, "data": data}


def _json_text(data, raw: dict) -> str:
    text = json.dumps(data, indent=2)
    for placeholder, token in raw.items():
        text = text.replace(json.dumps(placeholder), token)
    return text


def _tree_files(folder: Path, prefix: str) -> dict[str, str]:
    return {
        prefix + str(p.relative_to(folder)): p.read_text()
        for p in sorted(folder.rglob("*"))
        if p.is_file() and p.suffix != ".png"
    }


def manifest_case(rng: np.random.Generator, bases: Path) -> tuple[Case, dict]:
    """A saved run's manifest with one value dropped, retyped, made NaN, huge, negative or
    deeply nested, or a key added; replayed by ``run --manifest`` or read by ``report``/
    ``plot``."""
    data = json.loads((bases / "run" / "manifest.json").read_text())
    data["inputs"]["workload"] = "w.csv"  # the copy beside the manifest
    section = _pick(rng, MANIFEST_SECTIONS)
    what, change = _mutate_json(rng, data, section)
    text = _json_text(change["data"], change["raw"])
    command = _pick(rng, ["replay"] * 6 + ["report"] * 3 + ["plot"])
    if command == "replay":
        args = ["run", "--manifest", "m.json", "--quiet", "--no-plot", "--out", "replay"]
        files = {"w.csv": WORKLOAD_TEXT, "m.json": text}
    else:
        files = {**_tree_files(bases / "run", "r/"), "r/manifest.json": text}
        files["r/w.csv"] = WORKLOAD_TEXT
        kind = _pick(rng, ["cdf", "jobs", "timeline", "utilization"])
        args = ["report", "r"] if command == "report" else ["plot", "r", "--kind", kind]
        args += [] if command == "report" else ["-o", "o.png"]
    check = {"kind": command, **{k: change[k] for k in ("op", "path", "value")}}
    return Case("manifest", f"{command}: {what}", args, files, ("refused", "ran")), check


def _csv_mutation(rng: np.random.Generator, text: str) -> tuple[str, str | None]:
    """One damage to a CSV's text: its description and the new text (None: the file removed)."""
    rows = list(csv.reader(io.StringIO(text)))
    header, body = rows[0], rows[1:]
    op = _pick(
        rng,
        ["drop column", "garbage cell", "garbage cell", "truncated", "empty", "header only"]
        + ["swapped columns", "NUL byte", "removed", "extra row", "renamed column", "no header"]
        + ["latin-1", "CRLF", "short row"],
    )
    if op == "drop column":
        k = int(rng.integers(0, len(header)))
        name = header[k]
        rows = [r[:k] + r[k + 1 :] for r in rows]
        return f"without {name}", _csv_text(rows)
    if op == "garbage cell" and body:
        row, col = int(rng.integers(0, len(body))), int(rng.integers(0, len(header)))
        value = _pick(rng, CSV_JUNK)
        if col < len(body[row]):
            body[row][col] = value
        return f"{header[col]} row {row + 1} = {value!r}", _csv_text([header, *body])
    if op == "truncated":
        cut = int(rng.integers(0, len(text)))
        return f"cut at byte {cut} of {len(text)}", text[:cut]
    if op == "empty":
        return "empty", ""
    if op == "header only":
        return "header only", _csv_text([header])
    if op == "swapped columns" and len(header) > 1:
        a, b = (int(x) for x in rng.choice(len(header), 2, replace=False))
        for r in body:
            if max(a, b) < len(r):
                r[a], r[b] = r[b], r[a]
        return f"{header[a]} and {header[b]} swapped", _csv_text([header, *body])
    if op == "NUL byte":
        at = int(rng.integers(0, len(text) + 1))
        return f"NUL at byte {at}", text[:at] + "\x00" + text[at:]
    if op == "removed":
        return "removed", None
    if op == "extra row":
        junk = "".join(chr(int(c)) for c in rng.integers(32, 127, rng.integers(1, 60)))
        return f"extra row {junk!r}", text + junk + "\n"
    if op == "renamed column":
        k = int(rng.integers(0, len(header)))
        old, header[k] = header[k], header[k].upper()
        return f"column {old} renamed {header[k]}", _csv_text([header, *body])
    if op == "no header":
        return "no header", _csv_text(body)
    if op == "latin-1":
        return "a latin-1 byte", text.replace(",", ",\xe9", 1).encode("latin-1")
    if op == "CRLF":
        return "CRLF line ends", text.replace("\n", "\r\n")
    k = int(rng.integers(0, max(len(body), 1)))
    if body:
        body[k] = body[k][: len(body[k]) // 2]
    return f"row {k + 1} cut short", _csv_text([header, *body])


def _csv_text(rows: list[list[str]]) -> str:
    handle = io.StringIO()
    csv.writer(handle, lineterminator="\n").writerows(rows)
    return handle.getvalue()


FOLDERS = {
    "run": ("run", "r", ["jobs.csv", "rounds.csv", "fairness.csv"], ["cdf", "jobs", "timeline"]),
    "comparison": (
        "cmp",
        "c",
        ["summary.csv", "fifo/jobs.csv", "goodput/jobs.csv", "fifo/rounds.csv"]
        + ["goodput/rounds.csv"],
        ["cdf", "bars", "utilization", "apps"],
    ),
    "sweep": ("sw", "s", ["summary.csv"] * 4 + ["sweep.json"], ["bars", "load"]),
}


def folder_case(rng: np.random.Generator, bases: Path, which: str) -> tuple[Case, dict]:
    """A results folder (a run, a comparison or a sweep) with one file damaged, read by
    ``report`` or ``plot``."""
    base, prefix, names, kinds = FOLDERS[which]
    files = _tree_files(bases / base, f"{prefix}/")
    name = _pick(rng, names)
    key = f"{prefix}/{name}"
    if name.endswith(".json"):
        what, change = _mutate_json(rng, json.loads(files[key]), None)
        files[key] = _json_text(change["data"], change["raw"])
    else:
        what, text = _csv_mutation(rng, files[key])
        if text is None:
            files.pop(key)
        else:
            files[key] = text
    if rng.random() < 0.5:
        args, command = ["report", prefix], "report"
    else:
        kind = _pick(rng, kinds)
        args, command = ["plot", prefix, "--kind", kind, "-o", "o.png"], f"plot {kind}"
    surface = f"{which} folder"
    return Case(surface, f"{command}: {name} {what}", args, files, ("refused", "ran")), {
        "kind": "report" if command == "report" else "plot"
    }


EXPERIMENT = {**SMALL_EXPERIMENT, "settings": {"restart_delay": 30}}
AXIS_JUNK = [0, -1, -0.5, 1e9, 1e300, float("nan"), float("inf"), -float("inf"), 1e-300]
AXIS_JUNK += [2**40, 1.5, "1", True, None, "x", [], {}, [1], 10**30]
SETTING_NAMES = [
    "autoscaler",
    "checkpoint_interval",
    "failure_trace",
    "horizon",
    "interference",
    "job_crash_hours",
    "lr_schedule",
    "max_events",
    "max_nodes",
    "min_nodes",
    "mtbf",
    "oracle",
    "placement_order",
    "progress",
    "repair_hours",
    "restart_delay",
    "stall_hours",
    "startup_delay",
    "weibull_shape",
]


FINE = {  # the declared ranges of the numeric axes
    "loads": lambda v: 0 < v <= MAX_LOAD,
    "intervals": lambda v: setting("interval").in_range(v),
    "seeds": lambda v: isinstance(v, int) and 0 <= v <= MAX_SEED,
}


def _fine(key: str, value: object) -> bool:
    """Whether ``value`` is a valid entry of the numeric axis ``key``."""
    number = isinstance(value, int | float) and not isinstance(value, bool)
    return number and value == value and FINE[key](value)


def _axis_invalid(key: str, values: list) -> bool | None:
    """Whether a numeric axis is invalid: True with a value out of range, None (either may be
    right: merged or refused) with a repeated value, False otherwise."""
    if not all(_fine(key, v) for v in values):
        return True
    return None if len(set(values)) < len(values) else False


def experiment_case(rng: np.random.Generator) -> tuple[Case, dict]:
    """A small experiment file with one thing wrong (a key's type, an unknown key, an axis
    value huge, negative or NaN, a bad name, a setting out of range, its encoding), run by
    ``sweep``."""
    data = json.loads(json.dumps(EXPERIMENT))
    op = _pick(
        rng,
        ["key type", "element", "element", "unknown key", "axis value", "axis value", "name"]
        + ["name", "setting", "setting", "encoding", "policy entry", "missing key"],
    )
    invalid = True
    encoding = None
    if op == "key type":
        key = _pick(rng, [*EXPERIMENT, "profiles", "variants"])
        data[key] = _pick(rng, YAML_JUNK)
        what = f"{key}: {data[key]!r}"
        invalid = key != "name" or not isinstance(data[key], str)
        if key in FINE and isinstance(data[key], list) and data[key]:
            invalid = _axis_invalid(key, data[key])
    elif op == "element":
        key = _pick(rng, ["policies", "workloads", "clusters", "loads", "seeds", "intervals"])
        data[key] = [_pick(rng, AXIS_JUNK)]
        what = f"{key}: {data[key]!r}"
        if key in FINE:
            invalid = _axis_invalid(key, data[key])
    elif op == "unknown key":
        key = _pick(rng, ["polices", "load", "seed", "bogus", "cluster", "Name"])
        if rng.random() < 0.5:
            data["settings"][key] = 1
            what = f"unknown setting {key}"
        else:
            data[key] = [1]
            what = f"unknown key {key}"
    elif op == "axis value":
        key = _pick(rng, ["loads", "seeds", "intervals"])
        value = _pick(rng, AXIS_JUNK[:9] + [2**40, 1.5, 10**30, 2**32])
        data[key] = [value] if rng.random() < 0.7 else [*data[key], value]
        what = f"{key}: {data[key]!r}"
        invalid = _axis_invalid(key, data[key])
    elif op == "name":
        data["name"] = _pick(rng, NAMES)
        what = f"name {data['name']!r}"
        invalid = None  # the name rule decides; the check looks where results went
    elif op == "setting":
        key = _pick(rng, SETTING_NAMES)
        value = _pick(rng, AXIS_JUNK + ["bogus", "exponential"])
        data["settings"][key] = value if rng.random() < 0.7 else [value, value]
        what = f"settings.{key}: {data['settings'][key]!r}"
        invalid = None
    elif op == "policy entry":
        entry = _pick(
            rng,
            [
                {"policy": "goodput", "params": {"p": _pick(rng, AXIS_JUNK)}},
                {"policy": "fifo", "agent": _pick(rng, ["", "psychic", 1, None])},
                {"policy": _pick(rng, ["", "FIFO", "fifo ", 7, None])},
                {"policy": "fifo", "params": []},
                {"policy": "fifo", "bogus": 1},
            ],
        )
        data["policies"] = [entry]
        what = f"policies: [{entry!r}]"
        invalid = None
    elif op == "missing key":
        key = _pick(rng, ["policies", "workloads"])
        del data[key]
        what = f"without {key}"
    else:
        encoding = _pick(
            rng, ["utf-16", "utf-8-sig", "latin-1", "NUL", "invalid", "tabs", "CRLF", "cut"]
        )
        what = f"encoded {encoding}"
        invalid = encoding not in ("utf-8-sig", "CRLF")
    text = yaml.safe_dump(data, sort_keys=False, allow_unicode=True)
    body: str | bytes = text
    if encoding == "utf-16":
        body = text.encode("utf-16")
    elif encoding == "utf-8-sig":
        body = text.encode("utf-8-sig")
    elif encoding == "latin-1":
        body = (text + "# caf\xe9\n").encode("latin-1")
    elif encoding == "NUL":
        at = int(rng.integers(0, len(text)))
        body = text[:at] + "\x00" + text[at:]
    elif encoding == "invalid":
        body = text.encode() + b"\xff\xfe\n"
    elif encoding == "tabs":
        body = text.replace("  ", "\t")
        invalid = "\t" in body
    elif encoding == "CRLF":
        body = text.replace("\n", "\r\n")
    elif encoding == "cut":
        at = int(rng.integers(1, len(text)))
        body = text[:at]
        invalid = None
    args = ["sweep", "e.yaml", "--quiet", "--workers", "1"]
    out = None
    if op != "name":
        args += ["--out", "s"]
        out = "s"
    files = {"w.csv": WORKLOAD_TEXT, "e.yaml": body}
    return Case("experiment file", what, args, files, ("refused", "ran")), {
        "kind": "sweep",
        "invalid": invalid,
        "out": out,
        "name": data.get("name"),
    }


RUN = ["run", "--workload", "w.csv", "--quiet", "--no-plot", "--out", "o"]
FAILURE_OPTIONS = {
    "--mtbf": ["0", "-1", "1e-9", "0.0001", "1e-6", "nan", "inf", "x", "1e300", "24", "100"],
    "--repair-hours": ["0", "-1", "1e-6", "87600", "nan", "x", "1", "2"],
    "--repair": ["fixed", "exponential", "sometimes"],
    "--job-crash-hours": ["0", "-3", "1e-9", "nan", "inf", "12", "x"],
    "--lifetime": ["weibull", "exponential", "gamma"],
    "--weibull-shape": ["0", "-1", "1e-9", "0.5", "1e9", "nan", "x"],
    "--checkpoint-interval": ["0", "-5", "epoch", "600", "x", "1e300"],
    "--checkpoint-seconds": ["-1", "0", "30", "1e12", "nan"],
    "--min-nodes": ["0", "-1", "1", "2", "100001", "1e9", "x"],
    "--max-nodes": ["0", "1", "4", "100000", "100001", "1e20", "x"],
    "--autoscaler": ["utility", "queue", "search", "magic"],
    "--startup-delay": ["-1", "0", "60", "1e12", "nan"],
    "--node-price": ["-1", "0", "2.5", "nan", "x"],
    "--stall-hours": ["0", "-1", "1e-9", "0.01", "1e9", "nan"],
    "--max-events": ["0", "-1", "1", "10", "1e9", "x", "99999999999999999999"],
    "--max-wall": ["0", "-1", "0.001", "1e9", "nan"],
    "--horizon": ["0", "60", "1e300", "nan"],
}
FAILURE_TRACES = [
    "time,node,duration\n0,0,60\n",
    "time,node,duration\n0,99,60\n",
    "time,node,duration\n-5,0,60\n",
    "time,node,duration\n0,0,-5\n",
    "time,node\n0,0\n",
    "\ufefftime,node,duration\n10,1,600\n",
    "time,node,duration\n0,0,nan\n",
    "",
    "time,node,duration\n" + "".join(f"{k},0,1\n" for k in range(2000)),
]


def failure_case(rng: np.random.Generator) -> tuple[Case, dict]:
    """One to three failure, checkpoint, autoscaling or budget options, each at a value drawn
    from its valid and invalid ones (and sometimes a failure trace), on fifo, goodput or sia."""
    policy = _pick(rng, ["fifo", "goodput", "tiresias"])
    args = [RUN[0], "--policy", policy, *RUN[1:], "--cluster", "2x4"]
    files = {"w.csv": WORKLOAD_TEXT}
    chosen = rng.choice(sorted(FAILURE_OPTIONS), size=int(rng.integers(1, 4)), replace=False)
    parts = []
    for option in chosen:
        value = _pick(rng, FAILURE_OPTIONS[option])
        args += [option, value]
        parts.append(f"{option} {value}")
    if rng.random() < 0.25:
        trace = _pick(rng, FAILURE_TRACES)
        files["f.csv"] = trace
        args += ["--failure-trace", "f.csv"]
        parts.append(f"--failure-trace {trace[:30]!r}")
    return Case("failure options", f"{policy}: {' '.join(parts)}", args, files), {"kind": "run"}


CONFIG_KEYS = [
    "policy", "workload", "cluster", "seed", "interval", "restart_delay", "interference",
    "horizon", "oracle", "mtbf", "repair_hours", "job_crash_hours", "min_nodes", "max_nodes",
    "autoscaler", "param", "agent", "progress", "lr_schedule", "checkpoint_interval",
]  # fmt: skip


def config_case(rng: np.random.Generator) -> tuple[Case, dict]:
    """A ``run --config`` file: valid options with one to three keys changed to junk (a wrong
    type, NaN, huge, negative, a list, an unknown or misspelt key)."""
    data: dict = {"policy": "fifo", "workload": "w.csv", "cluster": "2x4", "seed": 0}
    parts = []
    for _ in range(int(rng.integers(1, 4))):
        key = _pick(rng, [*CONFIG_KEYS, "bogus", "restart_dely", "Policy", "max-nodes"])
        value = _pick(rng, YAML_JUNK + AXIS_JUNK[:12] + ["goodput", "16x4", "w.csv"])
        data[key] = value
        parts.append(f"{key}: {value!r}")
    text = yaml.safe_dump(data, sort_keys=False, allow_unicode=True)
    args = ["run", "--config", "c.yaml", "--quiet", "--no-plot", "--out", "o"]
    return Case("config file", ", ".join(parts), args, {"w.csv": WORKLOAD_TEXT, "c.yaml": text}), {
        "kind": "run"
    }


def typed_case(rng: np.random.Generator) -> tuple[Case, dict]:
    """The Sia cluster file or one typed profile with one value dropped, retyped, made huge or
    negative, or a key added, run under sia (or type-blind goodput)."""
    cluster = yaml.safe_load((ROOT / "configs" / "cluster-sia-default.yaml").read_text())
    profiles = {
        f"ps/{p.name}": p.read_text() for p in sorted((ROOT / "traces" / "profiles-sia").glob("*"))
    }
    if rng.random() < 0.5:
        what, change = _mutate_json(rng, cluster, _pick(rng, ["cluster", None]))
        cluster_text = yaml.safe_dump(change["data"], allow_unicode=True)
        what = f"cluster {what}"
    else:
        cluster_text = yaml.safe_dump(cluster)
        name = _pick(rng, sorted(profiles))
        data = yaml.safe_load(profiles[name])
        section = _pick(rng, ["gpu_types", "limits", "restart_delay", "slowdown", "progress"])
        what, change = _mutate_json(rng, data, section)
        profiles[name] = yaml.safe_dump(change["data"], allow_unicode=True)
        what = f"{name} {what}"
    policy = _pick(rng, ["sia", "sia", "goodput"])
    args = [RUN[0], "--policy", policy, *RUN[1:], "--cluster", "c.yaml", "--profiles", "ps"]
    files = {"w.csv": WORKLOAD_TEXT, "c.yaml": cluster_text, **profiles}
    return Case("typed inputs", f"{policy}: {what}", args, files), {"kind": "run"}


def output_case(rng: np.random.Generator) -> tuple[Case, dict]:
    """``--out`` (run, compare, sweep) or ``-o`` (workload generate, plot) named with a name of
    the hostile list, maybe below a missing folder or an existing file."""
    name = _pick(rng, NAMES)
    if rng.random() < 0.3:
        name = f"{_pick(rng, ['missing', 'w.csv', 'deep/er'])}/{name}"
    command = _pick(rng, ["run", "compare", "sweep", "generate"])
    common = ["--workload", "w.csv", "--cluster", "2x4", "--quiet"]
    if command == "run":
        args = ["run", "--policy", "fifo", *common, "--no-plot", "--out", name]
    elif command == "compare":
        args = ["compare", "--policies", "fifo,tiresias", *common, "--no-plot", "--out", name]
    elif command == "sweep":
        args = ["sweep", "--policies", "fifo", "--workloads", "w.csv", "--cluster", "2x4"]
        args += ["--quiet", "--out", name]
    else:
        args = ["workload", "generate", "--jobs", "5", "-o", name]
    case = Case("output paths", f"{command} into {name!r}", args, {"w.csv": WORKLOAD_TEXT})
    return case, {"kind": "output", "out": name}


# --- Classifying and running every case ------------------------------------------------------

OUTCOMES = [
    "refused",
    "ran",
    "guard",
    "refused valid",
    "silently wrong",
    "traceback",
    "multi-line error",
    "leftover",
    "crash",
    "hang",
]
GOOD = {"refused", "ran", "guard"}
SEEDED = ["workload", "cluster", "profile", "option"]
SEEDED += ["measurement"] if (REFERENCE / "traces").is_dir() else []
SEEDED += ["manifest", "manifest", "run folder", "comparison folder", "sweep folder"]
SEEDED += ["experiment file", "experiment file"]
SEEDED += ["failure options", "failure options", "config file", "typed inputs", "output paths"]
BUILDERS = {
    "experiment file": experiment_case,
    "failure options": failure_case,
    "config file": config_case,
    "typed inputs": typed_case,
    "output paths": output_case,
}
OLD = {"workload", "cluster", "profile", "option", "measurement"}
_BASES: dict = {}


def _table(bases: Path) -> list[Case]:
    if "table" not in _BASES:
        _BASES["table"] = all_cases(bases)
    return _BASES["table"]


def _new_files(folder: Path, case: Case) -> list[str]:
    """Files the command wrote: everything in ``folder`` now that the case did not bring."""
    given = {str(Path(name)) for name in case.files}
    return sorted(
        str(p.relative_to(folder))
        for p in folder.rglob("*")
        if p.is_file() and str(p.relative_to(folder)) not in given
    )


def _same(given: object, recorded: object) -> bool:
    number = (int, float)
    if isinstance(given, bool) or isinstance(recorded, bool):
        return type(given) is type(recorded) and given == recorded
    if isinstance(given, number) and isinstance(recorded, number):
        return float(given) == float(recorded)
    if isinstance(given, str) and isinstance(recorded, number):
        return _number(given) and float(given) == float(recorded)
    return given == recorded


def _replay_wrong(folder: Path, check: dict) -> str | None:
    """What a replay that ran got wrong: insane results, or a value of the manifest it was
    given that its own manifest does not record (ignored, defaulted or coerced silently)."""
    wrong = sane_results(folder / "replay", folder / "w.csv")
    if wrong or check["op"] == "drop":
        return wrong
    path, value = check["path"], check["value"]
    from goodput_sim.policies import policy_class

    params = {p.name for p in policy_class("goodput").params} | {"seed"}
    section = path[0] if path else None
    recorded = (
        section in ("config", "seed")
        or (section == "cluster" and len(path) > 1 and path[1] in ("groups", "domains"))
        or (section == "policy" and len(path) > 1 and path[1] in params)
        or section is None
    )
    if not recorded:
        return None
    replayed = json.loads((folder / "replay" / "manifest.json").read_text())
    if check["op"] == "unknown key":
        return f"unknown key {value!r} at {'.'.join(map(str, path))} ignored"
    if isinstance(value, str) and value.startswith("\x00raw"):
        return "a non-standard or out-of-range JSON token accepted"
    try:
        now = _get(replayed, path)
    except (KeyError, IndexError, TypeError):
        return f"{'.'.join(map(str, path))} = {value!r} not in the replay's manifest"
    if not _same(value, now):
        return f"{'.'.join(map(str, path))} = {value!r} replayed as {now!r}"
    return None


def _ran_wrong(folder: Path, case: Case, check: dict, stdout: str) -> str | None:
    """None if a command that exited 0 did what it should, else what is wrong."""
    new = _new_files(folder, case)
    kind = check["kind"]
    if kind == "replay":
        outside = [p for p in new if not p.startswith("replay/")]
        return f"wrote {outside[:3]} outside --out" if outside else _replay_wrong(folder, check)
    if kind == "report":
        if new:
            return f"report wrote {new[:3]}"
        if re.search(r"(?i)(?<![\w.])-?(nan|inf)(?![\w])", stdout):
            return "report prints nan or inf"
        return None
    if kind == "plot":
        if new != ["o.png"] or (folder / "o.png").stat().st_size == 0:
            return f"plot wrote {new[:3]}, not o.png alone"
        return None
    if kind in ("run", "output"):
        root = os.path.normpath(check.get("out", "o"))
        outside = [p for p in new if os.path.commonpath([root, os.path.normpath(p)]) != root]
        return f"wrote {outside[:3]} outside {root!r}" if outside else None
    root = check["out"] or f"results/{str(check['name']).strip()}"
    outside = [p for p in new if not p.startswith(root.rstrip("/") + "/")]
    if outside:
        return f"wrote {outside[:3]} outside {root!r}"
    if check["invalid"]:
        return "an invalid experiment ran"
    try:
        runs = read_table(folder / root / "summary.csv", SWEEP_COLUMNS, "sweep summary")
    except InputError as error:
        return f"its summary is unreadable: {error}"
    return None if len(runs) else "an empty summary"


def run_seeded(index: int, seed: int, scratch: Path, bases: Path, policies: list[str]):
    """Seeded case ``index``: an old-corpus input under each policy, or a mutation of a saved
    manifest, results folder, experiment file, option set, config file, typed input or output
    path under its command."""
    kind = SEEDED[index % len(SEEDED)]
    if kind in OLD:
        case = make_case(index, seed, scratch)
        results = [run_case(case, p) for p in policies]
        shutil.rmtree(case["folder"], ignore_errors=True)
        return [{**r, "surface": kind} for r in results]
    rng = np.random.default_rng([seed, index, 1])
    if kind == "manifest":
        case, check = manifest_case(rng, bases)
    elif kind in BUILDERS:
        case, check = BUILDERS[kind](rng)
    else:
        case, check = folder_case(rng, bases, kind.split()[0])
    folder = scratch / f"case-{index}"
    done = run_table_case(case, folder)
    if done["outcome"] == "ran":
        wrong = _ran_wrong(folder, case, check, done.pop("stdout", ""))
        if wrong:
            done = {**done, "outcome": "silently wrong", "detail": wrong}
    done.pop("stdout", None)
    shutil.rmtree(folder, ignore_errors=True)
    return [{"index": index, "surface": kind, "what": case.what, "policy": "", **done}]


def run_table_case(case: Case, folder: Path) -> dict:
    try:
        return hostile_run(case, folder, timeout=TIME_LIMIT)
    except Exception as error:  # noqa: BLE001 - a failure of the harness itself is a finding
        return {"outcome": "crash", "detail": f"harness: {type(error).__name__}: {error}"[:300]}


def run_hostile(k: int, scratch: Path, bases: Path) -> list[dict]:
    """Case ``k`` of the hand-written table, its outcome checked against what it allows."""
    case = _table(bases)[k]
    folder = scratch / f"table-{k}"
    done = run_table_case(case, folder)
    done.pop("stdout", None)
    shutil.rmtree(folder, ignore_errors=True)
    outcome = done["outcome"]
    if outcome in GOOD and outcome not in case.expect:
        wanted = "/".join(case.expect)
        bad = "refused valid" if outcome == "refused" else "silently wrong"
        done = {**done, "outcome": bad, "detail": f"{outcome}, expected {wanted}: {done['detail']}"}
    return [{"index": k, "surface": f"table: {case.surface}", "what": case.what, **done}]


def _work(task: tuple) -> list[dict]:
    kind, *rest = task
    if kind == "table":
        return run_hostile(*rest)
    return run_seeded(*rest)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cases", type=int, default=1190, help="seeded cases")
    parser.add_argument("--seed", type=int, default=2026)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--policies", default="fifo,goodput")
    parser.add_argument(
        "--no-table", action="store_true", help="skip the hand-written hostile table"
    )
    args = parser.parse_args()
    policies = args.policies.split(",")
    scratch = Path(tempfile.mkdtemp(prefix="corrupt-inputs-"))
    try:
        bases = make_bases(scratch / "bases")
        table = (
            []
            if args.no_table
            else [("table", k, scratch, bases) for k in range(len(_table(bases)))]
        )
        seeded = [("seeded", k, args.seed, scratch, bases, policies) for k in range(args.cases)]
        started = time.perf_counter()
        with ProcessPoolExecutor(max_workers=args.workers) as pool:
            results = [r for rows in pool.map(_work, table + seeded) for r in rows]
        wall = time.perf_counter() - started
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    counts = Counter((r["surface"], r["outcome"]) for r in results)
    surfaces = list(dict.fromkeys(r["surface"] for r in sorted(results, key=_surface_order)))
    cases = len(table) + len(seeded)
    print(
        f"{cases} cases ({len(table)} hand-written, {len(seeded)} seeded; old-corpus inputs "
        f"under {len(policies)} policies) = {len(results)} runs in {wall:.0f} s "
        f"(seed {args.seed}, {args.workers} workers)"
    )
    width = max(len(s) for s in [*surfaces, "surface"]) + 1
    short = {
        o: o.replace("multi-line error", "multi-line").replace("silently wrong", "wrong")
        for o in OUTCOMES
    }
    col = max(len(o) for o in short.values()) + 2
    heads = "".join(f"{short[o]:>{col}}" for o in OUTCOMES)
    print(f"{'surface':<{width}}{heads}{'total':>8}")
    for surface in surfaces:
        row = [counts[(surface, o)] for o in OUTCOMES]
        print(f"{surface:<{width}}" + "".join(f"{n:>{col}}" for n in row) + f"{sum(row):>8}")
    totals = Counter(r["outcome"] for r in results)
    cells = "".join(f"{totals[o]:>{col}}" for o in OUTCOMES)
    print(f"{'all':<{width}}{cells}{len(results):>8}")
    bad = [r for r in results if r["outcome"] not in GOOD]
    for r in bad[:60]:
        print(
            f"  {r['outcome']}: {r['surface']} {r['index']} {r.get('policy', '')} "
            f"{r['what']!r} -> {r['detail']}"
        )
    save(
        "corrupt_inputs",
        {
            "machine": machine(),
            "seed": args.seed,
            "cases": cases,
            "table_cases": len(table),
            "seeded_cases": len(seeded),
            "runs": len(results),
            "policies": policies,
            "workers": args.workers,
            "wall_seconds": wall,
            "outcomes": {o: totals[o] for o in OUTCOMES},
            "by_surface": {s: {o: counts[(s, o)] for o in OUTCOMES} for s in surfaces},
            "failures": [
                {
                    k: r.get(k, "")
                    for k in ("surface", "index", "what", "policy", "outcome", "detail")
                }
                for r in bad
            ],
        },
    )
    sys.exit(1 if bad else 0)


def _surface_order(r: dict) -> tuple:
    order = [*dict.fromkeys(SEEDED)]
    s = r["surface"]
    return (s.startswith("table: "), order.index(s) if s in order else 99, s)


if __name__ == "__main__":
    main()
