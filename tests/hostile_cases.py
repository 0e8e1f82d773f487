"""Hostile inputs to every surface added since the first reliability corpus: manifests for
``run --manifest``, damaged results folders for ``report`` and ``plot``, output paths, sweep
axes with duplicates, inputs that would run for ever or exhaust memory, guards, and smaller
cases. Each case is a command line, the files it needs and the outcomes allowed:

* ``refused``: exit 2 and one line on stderr, no traceback, nothing new left behind but
  what the command was asked to write (and a refused command writes nothing);
* ``ran``: exit 0;
* ``guard``: exit 3 and one line on stderr (a run stopped early, its partial results kept).

``tests/test_hardening.py`` runs every case; ``benchmarks/corrupt_inputs.py`` runs them with its
seeded mutations. :func:`make_bases` writes the valid run, comparison and sweep the cases
damage, once.
"""

from __future__ import annotations

import io
import json
import os
import signal
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

import pandas as pd
import yaml
from click.testing import CliRunner

from goodput_sim.cli import main

ROOT = Path(__file__).resolve().parents[1]
WORKLOAD = (
    "name,time,application,num_replicas,batch_size\n"
    "ncf-0,0,ncf,1,32768\ncifar10-1,30,cifar10,4,2048\nbert-2,90,bert,2,384\n"
    "yolov3-3,200,yolov3,4,64\n"
)
EXPERIMENT = {  # a small valid experiment file's keys, over w.csv
    "name": "e",
    "policies": ["fifo"],
    "workloads": ["w.csv"],
    "clusters": ["2x4"],
    "loads": [1.0],
    "seeds": [0],
    "intervals": [60],
}
FIFO = object()  # a file to create as a named pipe
DELETE = object()  # a manifest key or file to remove


@dataclass
class Case:
    surface: str
    what: str
    args: list[str]
    files: dict[str, str | bytes | object] = field(default_factory=dict)
    expect: tuple[str, ...] = ("refused",)


def invoke(args: list[str], timeout: float) -> tuple[object, float] | None:
    """The CLI's result for ``args`` in this process (run in the current folder), and seconds;
    None if it did not end within ``timeout`` seconds."""

    def alarm(signum, frame):
        raise TimeoutError

    previous = signal.signal(signal.SIGALRM, alarm)
    signal.setitimer(signal.ITIMER_REAL, timeout)
    started = time.perf_counter()
    try:
        result = CliRunner().invoke(main, args, catch_exceptions=True)
    except TimeoutError:
        return None
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)
    if isinstance(result.exception, TimeoutError):
        return None
    return result, time.perf_counter() - started


def make_bases(root: Path) -> Path:
    """``root/w.csv`` and, from it, a goodput run ``run``, a fifo/goodput comparison ``cmp`` and
    a 2-seed sweep ``sw`` on 2x4 GPUs (about 10 s)."""
    root.mkdir(parents=True, exist_ok=True)
    (root / "w.csv").write_text(WORKLOAD)
    common = ["--workload", str(root / "w.csv"), "--cluster", "2x4", "--quiet"]
    commands = [
        ["run", "--policy", "goodput", *common, "--out", str(root / "run")],
        ["compare", "--policies", "fifo,goodput", *common, "--out", str(root / "cmp")],
        ["sweep", "--policies", "fifo,goodput", "--seeds", "0,1", "--out", str(root / "sw")]
        + ["--workloads", str(root / "w.csv"), "--cluster", "2x4", "--quiet"],
    ]
    for args in commands:
        done = invoke(args, 600)
        assert done is not None and done[0].exit_code == 0, (args, done and done[0].output)
    return root


def _tree(folder: Path, prefix: str) -> dict[str, str]:
    """The text files below ``folder`` (no figures), keyed by ``prefix`` + relative path."""
    out = {}
    for path in sorted(folder.rglob("*")):
        if path.is_file() and path.suffix != ".png":
            out[prefix + str(path.relative_to(folder))] = path.read_text()
    return out


def json_paths(data: object, path: tuple = ()) -> Iterator[tuple]:
    """Every node's key path in a JSON value (the root's is ``()``)."""
    yield path
    if isinstance(data, dict | list):
        for key, value in data.items() if isinstance(data, dict) else enumerate(data):
            yield from json_paths(value, (*path, key))


def set_at(path: tuple, value: object) -> Callable[[dict], None]:
    """A change to a JSON object: ``value`` (or DELETE) at the key path ``path``."""

    def change(data: dict) -> None:
        target = data
        for key in path[:-1]:
            target = target[key]
        if value is DELETE:
            del target[path[-1]]
        else:
            target[path[-1]] = value

    return change


def _json(change: Callable[[dict], None]) -> Callable[[str], str]:
    def apply(text: str) -> str:
        data = json.loads(text)
        change(data)
        return json.dumps(data, indent=2)

    return apply


def _drop(column: str) -> Callable[[str], str]:
    def apply(text: str) -> str:
        frame = pd.read_csv(io.StringIO(text), dtype=str, keep_default_na=False)
        return frame.drop(columns=[column], errors="ignore").to_csv(index=False)

    return apply


def _cell(column: str, value: str, row: int = 0) -> Callable[[str], str]:
    def apply(text: str) -> str:
        frame = pd.read_csv(io.StringIO(text), dtype=str, keep_default_na=False)
        frame.loc[row, column] = value
        return frame.to_csv(index=False)

    return apply


def _changed(files: dict, key: str, change: object) -> dict:
    files = dict(files)
    if change is DELETE:
        files.pop(key)
    else:
        files[key] = change(files[key]) if callable(change) else change
    return files


FAILURES = {
    "mtbf_hours": None,
    "repair_hours": 1.0,
    "repair": "fixed",
    "seed": 0,
    "lifetime": "exponential",
    "weibull_shape": 0.7,
    "job_crash_hours": None,
}


def _manifest_cases(bases: Path) -> list[Case]:
    text = (bases / "run" / "manifest.json").read_text()
    files = {"w.csv": WORKLOAD}
    args = ["run", "--manifest", "m.json", "--quiet", "--out", "replay"]
    changes = {
        "config a list": set_at(("config",), []),
        "config.failures a string": set_at(("config", "failures"), "x"),
        "config.failures unknown key": set_at(("config", "failures"), {**FAILURES, "bogus": 1}),
        "config.interval abc": set_at(("config", "interval"), "abc"),
        "config.interval null": set_at(("config", "interval"), None),
        "config.oracle yes": set_at(("config", "oracle"), "yes"),
        "policy without name": set_at(("policy", "name"), DELETE),
        "policy p abc": set_at(("policy", "p"), "abc"),
        "agent missing": set_at(("agent",), DELETE),
        "inputs a list": set_at(("inputs",), []),
        "group nodes -1": set_at(("cluster", "groups", 0, "nodes"), -1),
        "group nodes a": set_at(("cluster", "groups", 0, "nodes"), "a"),
        "group 1.5 GPUs": set_at(("cluster", "groups", 0, "gpus_per_node"), 1.5),
        "group 1e9 GPUs": set_at(("cluster", "groups", 0, "gpus_per_node"), 1e9),
        "group 2e6 nodes": set_at(("cluster", "groups", 0, "nodes"), 2_000_000),
        "empty groups": set_at(("cluster", "groups"), []),
        "seed -1": set_at(("seed",), -1),
        "seed 1.5": set_at(("seed",), 1.5),
        "policy seed -1": set_at(("policy", "seed"), -1),
        "trace entry without duration": set_at(
            ("config", "failures"), {**FAILURES, "trace": [{"time": 10, "node": 0}]}
        ),
        "trace duration -5": set_at(
            ("config", "failures"),
            {**FAILURES, "trace": [{"time": 10, "node": 0, "duration": -5}]},
        ),
        "trace names node 99": set_at(
            ("config", "failures"),
            {**FAILURES, "trace": [{"time": 10, "node": 99, "duration": 5}]},
        ),
        "summary avg_jct abc": set_at(("summary", "avg_jct"), "abc"),
    }
    cases = [
        Case("manifest", what, args, {**files, "m.json": _json(change)(text)})
        for what, change in changes.items()
    ]
    seed_line = '\n  "seed": 0,'
    assert seed_line in text
    for what, token in (("seed 1e400", "1e400"), ("bare NaN seed", "NaN")):
        broken = text.replace(seed_line, f'\n  "seed": {token},', 1)
        cases.append(Case("manifest", what, args, {**files, "m.json": broken}))
    deep = "[" * 100_000 + "]" * 100_000
    cases.append(Case("manifest", "JSON nested 100,000 deep", args, {**files, "m.json": deep}))
    cases.append(Case("manifest", "a folder as manifest", args, {"m.json/x": "1"}))
    # A run made with a relative --workload replays from its own folder.
    cases.append(
        Case(
            "manifest",
            "relative --workload replays",
            ["run", "--policy", "fifo", "--workload", "w.csv", "--cluster", "2x4", "--quiet"]
            + ["--out", "r", "&&", "run", "--manifest", "r/manifest.json", "--out", "again"],
            files,
            ("ran",),
        )
    )
    return cases


def _folder_cases(bases: Path) -> list[Case]:
    run = _tree(bases / "run", "r/")
    plots = {
        "jobs.csv": ["cdf", "jobs"],
        "rounds.csv": ["timeline", "utilization"],
        "manifest.json": ["cdf"],
    }
    damage = [
        ("jobs.csv", "without jct", _drop("jct")),
        ("jobs.csv", "without name", _drop("name")),
        ("jobs.csv", "without finished", _drop("finished")),
        ("jobs.csv", "without application", _drop("application")),
        ("jobs.csv", "jct abc", _cell("jct", "abc")),
        ("jobs.csv", "jct negative", _cell("jct", "-500")),
        ("jobs.csv", "finished maybe", _cell("finished", "maybe")),
        ("jobs.csv", "cut in half", lambda t: t[: len(t) // 2]),
        ("jobs.csv", "missing", DELETE),
        ("rounds.csv", "empty", ""),
        ("rounds.csv", "garbled", "\x00\x01garbage\n,,,\n"),
        ("rounds.csv", "without nodes_up", _drop("nodes_up")),
        ("rounds.csv", "garbage allocations", _cell("allocations", "zz=@@;;=", 1)),
        ("rounds.csv", "time -1", _cell("time", "-1")),
        ("manifest.json", "without cluster", _json(set_at(("cluster",), DELETE))),
        ("manifest.json", "inputs a list", _json(set_at(("inputs",), []))),
        ("manifest.json", "config a list", _json(set_at(("config",), []))),
        ("manifest.json", "summary.avg_jct abc", _json(set_at(("summary", "avg_jct"), "abc"))),
        ("manifest.json", "empty summary", _json(set_at(("summary",), {}))),
        ("manifest.json", "not JSON", "{not json"),
        ("manifest.json", "not UTF-8", b"\xff\xfe{}"),
    ]
    cases = []
    for name, what, change in damage:
        files = _changed(run, f"r/{name}", change)
        cases.append(Case("results folder", f"report: {name} {what}", ["report", "r"], files))
        for kind in plots[name]:
            args = ["plot", "r", "--kind", kind, "-o", "o.png"]
            cases.append(Case("results folder", f"plot {kind}: {name} {what}", args, files))
    sweep = _tree(bases / "sw", "s/")
    for what, change in [
        ("empty", ""),
        ("garbled", "\x00garbage\n1,2\n"),
        ("without makespan", _drop("makespan")),
        ("without p95_jct", _drop("p95_jct")),
        ("load x", _cell("load", "x")),
        ("avg_jct NaN", _cell("avg_jct", "NaN")),
        ("without policy", _drop("policy")),
        ("seed -3", _cell("seed", "-3")),
        ("ftf_unfair_fraction -inf", _cell("ftf_unfair_fraction", "-inf")),
        ("ftf_rho_max inf", _cell("ftf_rho_max", "inf")),
    ]:
        files = _changed(sweep, "s/summary.csv", change)
        cases.append(Case("results folder", f"sweep report: {what}", ["report", "s"], files))
        for kind in ("bars", "load"):
            args = ["plot", "s", "--kind", kind, "-o", "o.png"]
            cases.append(Case("results folder", f"sweep plot {kind}: {what}", args, files))

    def fifo_zero(text: str) -> str:  # a zero baseline: the reduction is undefined
        frame = pd.read_csv(io.StringIO(text), dtype=str, keep_default_na=False)
        frame.loc[frame["policy"] == "fifo", "avg_jct"] = "0"
        return frame.to_csv(index=False)

    files = _changed(sweep, "s/summary.csv", fifo_zero)
    cases.append(
        Case("results folder", "sweep report: avg_jct 0", ["report", "s"], files, ("ran",))
    )
    comparison = _tree(bases / "cmp", "c/")
    files = _changed(comparison, "c/summary.csv", "\x00garbage\n")  # only orders the runs
    cases.append(
        Case("results folder", "compare: summary.csv garbled", ["report", "c"], files, ("ran",))
    )
    twice = dict(comparison)  # fifo twice, differently configured: two rows, named apart
    for key, text in comparison.items():
        if key.startswith("c/fifo/"):
            changed = text.replace('"restart_delay": 30.0', '"restart_delay": 60.0')
            twice[key.replace("c/fifo/", "c/fifo-b/")] = changed
    cases.append(Case("results folder", "compare: two fifo runs", ["report", "c"], twice, ("ran",)))
    return cases


def _experiment(name: str = "e", extra: str = "", **axes: str) -> str:
    keys = {"policies": "[fifo]", "workloads": "[w.csv]", "clusters": "[2x4]", **axes}
    return f"name: {json.dumps(name)}\n" + "".join(f"{k}: {v}\n" for k, v in keys.items()) + extra


def _output_cases(bases: Path) -> list[Case]:
    run = _tree(bases / "run", "r/")
    fifo = ["run", "--policy", "fifo", "--workload", "w.csv", "--cluster", "2x4", "--quiet"]
    files = {"w.csv": WORKLOAD}
    cases = [
        Case("output paths", f"run --out {what}", [*fifo, "--no-plot", "--out", out], files)
        for what, out in [
            ("300 characters", "x" * 300),
            (".", "."),
            ("sub/..", "sub/.."),
            ("with a newline", "a\nb"),
            ("under /proc", "/proc/nope/out"),
            ("empty", ""),
        ]
    ]
    cases += [
        Case(
            "output paths", "run --out -rf", [*fifo, "--no-plot", "--out", "-rf"], files, ("ran",)
        ),
        Case(
            "output paths",
            "plot -o into missing folders",
            ["plot", "r", "--kind", "cdf", "-o", "m/s/o.png"],
            run,
            ("ran",),
        ),
        Case(
            "output paths",
            "plot -o onto a folder",
            ["plot", "r", "--kind", "cdf", "-o", "d"],
            {**run, "d/x": "1"},
        ),
        Case(
            "output paths",
            "plot -o onto a file",
            ["plot", "r", "--kind", "cdf", "-o", "o.png"],
            {**run, "o.png": "old"},
        ),
        Case(
            "output paths",
            "report -o into missing folders",
            ["report", "r", "-o", "m/s/r.html"],
            run,
            ("ran",),
        ),
        Case(
            "output paths",
            "report -o onto a folder",
            ["report", "r", "-o", "d"],
            {**run, "d/x": "1"},
        ),
        Case(
            "output paths",
            "generate -o into missing folders",
            ["workload", "generate", "--jobs", "5", "-o", "m/s/w.csv"],
            {},
            ("ran",),
        ),
        Case(
            "output paths",
            "sweep into a comparison's folder",
            [
                "sweep",
                "--policies",
                "fifo",
                "--workloads",
                "w.csv",
                "--cluster",
                "2x4",
                "--out",
                "c",
                "--quiet",
            ],
            {**_tree(bases / "cmp", "c/"), **files},
        ),
    ]
    for what, name in [("300 characters", "x" * 300), ("..", ".."), (".", "."), ("-rf", "-rf")]:
        cases.append(
            Case(
                "output paths",
                f"experiment name {what}",
                ["sweep", "e.yaml", "--quiet"],
                {**files, "e.yaml": _experiment(name)},
            )
        )
    for what, name in [("with a newline", "a\nb"), ("with a slash", "a/b"), ("empty", "")]:
        cases.append(
            Case(
                "output paths",
                f"experiment name {what}",
                ["sweep", "e.yaml", "--quiet"],
                {**files, "e.yaml": _experiment(name)},
            )
        )
    return cases


def _sweep_cases() -> list[Case]:
    files = {"w.csv": WORKLOAD}
    cli = ["sweep", "--workloads", "w.csv", "--cluster", "2x4", "--out", "s", "--quiet"]
    cases = [
        Case("sweep identity", "--policies fifo,fifo", [*cli, "--policies", "fifo,fifo"], files),
        Case(
            "sweep identity", "--seeds 0,0", [*cli, "--policies", "fifo", "--seeds", "0,0"], files
        ),
        Case("sweep identity", "--seeds -1", [*cli, "--policies", "fifo", "--seeds", "-1"], files),
        Case(
            "sweep identity",
            "a workload twice",
            [*cli, "--policies", "fifo", "--workloads", "w.csv"],
            files,
        ),
    ]
    cluster_file = {"c.yaml": "cluster:\n  nodes: 2\n  gpus_per_node: 4\n"}
    for what, axes in [
        ("loads 1 and 1.0", {"loads": "[1, 1.0]"}),
        ("loads 0.5 and 0.5000001", {"loads": "[0.5, 0.5000001]"}),
        ("intervals 60 and 60.0", {"intervals": "[60, 60.0]"}),
        ("policies fifo twice", {"policies": "[fifo, fifo]"}),
        ("clusters 2x4 and 2X4", {"clusters": "[2x4, 2X4]"}),
        ("clusters 2x4 and ' 2x4'", {"clusters": "[2x4, ' 2x4']"}),
        ("clusters 2x4 and a file equal to it", {"clusters": "[2x4, c.yaml]"}),
        ("workloads listed twice", {"workloads": "[w.csv, w.csv]"}),
        (
            "policy params -1 and '-1'",
            {
                "policies": "[{policy: goodput, params: {p: -1}},"
                " {policy: goodput, params: {p: '-1'}}]"
            },
        ),
    ]:
        text = _experiment(**axes)
        cases.append(
            Case(
                "sweep identity",
                f"experiment {what}",
                ["sweep", "e.yaml", "--quiet", "--out", "s"],
                {**files, **cluster_file, "e.yaml": text},
            )
        )
    return cases


def _bound_cases() -> list[Case]:
    files = {"w.csv": WORKLOAD}
    fifo = [
        "run",
        "--policy",
        "fifo",
        "--workload",
        "w.csv",
        "--cluster",
        "2x4",
        "--quiet",
        "--no-plot",
        "--out",
        "o",
    ]
    either = ("refused", "ran", "guard")
    cases = [
        Case("work bounds", what, fifo + extra.split(), files, expect)
        for what, extra, expect in [
            ("--mtbf 1e-9", "--mtbf 1e-9", either),
            ("--mtbf 0.0001", "--mtbf 0.0001", either),
            ("--mtbf 1e-6 --repair-hours 1e-6", "--mtbf 1e-6 --repair-hours 1e-6", ("refused",)),
            ("--repair-hours 87600", "--mtbf 1 --repair-hours 87600", either),
            ("--max-nodes 1e9", "--min-nodes 1 --max-nodes 1000000000", ("refused",)),
            ("--max-nodes 1e20", "--min-nodes 1 --max-nodes 100000000000000000000", ("refused",)),
            ("--min/max-nodes 100001", "--min-nodes 100001 --max-nodes 100001", ("refused",)),
            ("--job-crash-hours 1e-9", "--job-crash-hours 1e-9", ("refused",)),
            ("--max-events 2", "--max-events 2", ("refused",)),
            ("--max-events 10", "--max-events 10", ("guard",)),
        ]
    ]
    for what, group in [
        ("2,000,000 nodes", "{nodes: 2000000, gpus_per_node: 4, gpu_type: aws}"),
        (
            "3 groups of 50,000 nodes",
            ", ".join(["{nodes: 50000, gpus_per_node: 4}"] * 3),
        ),
        ("2e8 GPUs", "{nodes: 1000, gpus_per_node: 200000}"),
    ]:
        yaml_text = f"cluster:\n  groups: [{group}]\n"
        args = [*fifo[:5], "--cluster", "c.yaml", *fifo[7:]]
        cases.append(
            Case("work bounds", f"cluster of {what}", args, {**files, "c.yaml": yaml_text})
        )
    loads = "[" + ", ".join(str(1 + k / 1e5) for k in range(100_000)) + "]"
    cases.append(
        Case(
            "work bounds",
            "a 100,000-element loads list",
            ["sweep", "e.yaml", "--quiet", "--out", "s"],
            {**files, "e.yaml": _experiment(loads=loads)},
        )
    )
    for what, loads in [
        ("loads [1000]", "[1000]"),
        ("loads [1e6]", "[1000000]"),
        ("loads [1e9]", "[1000000000.0]"),
        ("loads [1e30]", "[1000000000000000000000000000000]"),
        ("loads [inf]", "[.inf]"),
    ]:
        cases.append(
            Case(
                "work bounds",
                f"experiment {what}",
                ["sweep", "e.yaml", "--quiet", "--out", "s"],
                {**files, "e.yaml": _experiment(loads=loads)},
                either,
            )
        )
    cases.append(
        Case(
            "work bounds",
            "experiment loads [1.5] (valid)",
            ["sweep", "e.yaml", "--quiet", "--out", "s"],
            {**files, "e.yaml": _experiment(loads="[1.5]")},
            ("ran",),
        )
    )
    cases.append(
        Case(
            "work bounds",
            "generate 5 jobs over 1e9 hours",
            ["workload", "generate", "--jobs", "5", "--hours", "1e9", "-o", "g.csv"],
            {},
        )
    )
    sia = [
        "run",
        "--policy",
        "sia",
        "--workload",
        "w.csv",
        "--cluster",
        "2x4",
        "--quiet",
        "--no-plot",
        "--out",
        "o",
    ]
    for param in ("p=1", "p=10", "lambda_n=0", "lambda_n=0.5"):
        cases.append(
            Case(
                "work bounds", f"sia {param}", [*sia, "--param", param], files, ("refused", "guard")
            )
        )
    ga = [
        "run",
        "--policy",
        "goodput-ga",
        "--workload",
        "w.csv",
        "--cluster",
        "2x4",
        "--quiet",
        "--no-plot",
        "--out",
        "o",
    ]
    cases.append(
        Case(
            "work bounds",
            "goodput-ga 10000 x 10000",
            [*ga, "--param", "population=10000", "--param", "generations=10000"],
            files,
        )
    )
    cases += [
        Case("work bounds", "/dev/zero as workload", [*fifo[:3], "/dev/zero", *fifo[4:]], {}),
        Case(
            "work bounds",
            "/dev/zero as failure trace",
            [*fifo, "--failure-trace", "/dev/zero"],
            files,
        ),
        Case("work bounds", "a FIFO as workload", [*fifo[:3], "pipe", *fifo[4:]], {"pipe": FIFO}),
        Case(
            "work bounds", "workload check of a FIFO", ["workload", "check", "pipe"], {"pipe": FIFO}
        ),
        Case(
            "work bounds",
            "a FIFO as cluster file",
            [*fifo[:5], "--cluster", "pipe", *fifo[7:]],
            {**files, "pipe": FIFO},
        ),
        Case(
            "work bounds", "a FIFO as experiment file", ["sweep", "pipe", "--quiet"], {"pipe": FIFO}
        ),
    ]
    return cases


def _guard_cases() -> list[Case]:
    default = (ROOT / "traces" / "workloads" / "default.csv").read_text()
    files = {"big.csv": default}
    stop = ("guard",)
    return [
        Case(
            "guards",
            "compare --max-wall 0.3",
            [
                "compare",
                "--policies",
                "fifo,goodput",
                "--workload",
                "big.csv",
                "--max-wall",
                "0.3",
                "--quiet",
                "--out",
                "c",
            ],
            files,
            stop,
        ),
        Case(
            "guards",
            "run --max-wall 1e-9 (fires at time 0)",
            [
                "run",
                "--policy",
                "goodput",
                "--workload",
                "big.csv",
                "--max-wall",
                "1e-9",
                "--quiet",
                "--out",
                "o",
            ],
            files,
            stop,
        ),
        Case(
            "guards",
            "sweep with max_wall",
            ["sweep", "e.yaml", "--quiet", "--out", "s"],
            {
                **files,
                "e.yaml": _experiment(
                    policies="[goodput]",
                    workloads="[big.csv]",
                    clusters="[16x4]",
                    settings="{max_wall: 0.05}",
                ),
            },
            stop,
        ),
    ]


def _profile_copy(folder: str, prefix: str, name: str, change: Callable[[str], str]) -> dict:
    source = ROOT / "traces" / folder
    files = {f"{prefix}/{p.name}": p.read_text() for p in sorted(source.glob("*.yaml"))}
    files[f"{prefix}/{name}"] = change(files[f"{prefix}/{name}"])
    return files


def _smaller_cases() -> list[Case]:
    files = {"w.csv": WORKLOAD}
    fifo = [
        "run",
        "--policy",
        "fifo",
        "--workload",
        "w.csv",
        "--cluster",
        "2x4",
        "--quiet",
        "--no-plot",
        "--out",
        "o",
    ]
    goodput = [*fifo[:2], "goodput", *fifo[3:]]
    sia = [
        *fifo[:2],
        "sia",
        *fifo[3:5],
        "--cluster",
        str(ROOT / "configs" / "cluster-sia-default.yaml"),
        *fifo[7:],
        "--profiles",
        "ps",
    ]
    typed = "profiles-sia"
    sweep = ["sweep", "--policies", "fifo", "--workloads", "w.csv", "--cluster", "2x4"]
    sweep += ["--out", "s", "--quiet"]

    def misspell(text: str) -> str:
        return (
            text.replace("restart_delay:", "restart_dely:")
            if "restart_delay:" in text
            else text + "\nrestart_dely: 5\n"
        )

    cases = [
        Case(
            "smaller",
            "bundled profile key restart_dely",
            [*goodput, "--profiles", "pr"],
            {**files, **_profile_copy("profiles", "pr", "ncf.yaml", misspell)},
        ),
        Case(
            "smaller",
            "typed profile key restart_dely",
            sia,
            {**files, **_profile_copy(typed, "ps", "ncf.yaml", misspell)},
        ),
        Case(
            "smaller",
            "typed profile lr_schedule bogus",
            sia,
            {
                **files,
                **_profile_copy(typed, "ps", "ncf.yaml", lambda t: t + "\nlr_schedule: bogus\n"),
            },
        ),
        Case(
            "smaller", "generate --jobs 0", ["workload", "generate", "--jobs", "0", "-o", "g.csv"]
        ),
        Case(
            "smaller", "generate --jobs -1", ["workload", "generate", "--jobs", "-1", "-o", "g.csv"]
        ),
        Case(
            "smaller",
            "generate --load nan",
            ["workload", "generate", "--jobs", "5", "--load", "nan", "-o", "g.csv"],
        ),
        Case(
            "smaller",
            "generate --hours 100000 then check",
            [
                "workload",
                "generate",
                "--jobs",
                "5",
                "--hours",
                "100000",
                "-o",
                "g.csv",
                "&&",
                "workload",
                "check",
                "g.csv",
            ],
            {},
            ("refused", "ran"),
        ),
        Case(
            "smaller",
            "failure trace with a BOM",
            [*fifo, "--failure-trace", "f.csv"],
            {**files, "f.csv": "\ufefftime,node,duration\n10,0,100\n"},
            ("ran",),
        ),
        Case(
            "smaller",
            "--seed -1 goodput-ga",
            [*fifo[:2], "goodput-ga", *fifo[3:], "--seed", "-1"],
            files,
        ),
        Case("smaller", "--seed -1 with --mtbf", [*fifo, "--seed", "-1", "--mtbf", "10"], files),
        *(
            Case("smaller", f"--scheduler {what}", [*sweep, "--scheduler", address], files)
            for what, address in [
                ("'not a url'", "not a url"),
                ("at a closed port", "tcp://127.0.0.1:1"),
                ("port 99999", "127.0.0.1:99999"),
            ]
        ),
        Case(
            "smaller",
            "--param p=-1 and policy.p=1",
            [*goodput, "--param", "p=-1", "--param", "policy.p=1"],
            files,
        ),
        Case(
            "smaller",
            "--param p=\uff11 (full-width digit)",
            [*goodput, "--param", "p=\uff11"],
            files,
        ),
        Case(
            "smaller",
            "a NUL byte in a workload",
            fifo,
            {"w.csv": WORKLOAD.replace("ncf-0", "ncf\x000")},
        ),
        Case(
            "smaller",
            "batch_size 32769 for ncf",
            fifo,
            {"w.csv": WORKLOAD.replace("32768", "32769")},
        ),
        Case(
            "smaller",
            "a latin-1 experiment file",
            ["sweep", "e.yaml", "--quiet", "--out", "s"],
            {**files, "e.yaml": (_experiment() + "# caf\xe9\n").encode("latin-1")},
        ),
        Case("smaller", "a top-level unknown option", ["--bogus"]),
    ]
    for what, text in [
        ("seed: 1.5", "seed: 1.5\n"),
        ("seed: true", "seed: true\n"),
        ("oracle: 5", "oracle: 5\n"),
        ("seed: -1", "seed: -1\n"),
    ]:
        cases.append(
            Case(
                "smaller",
                f"run --config with {what}",
                [*fifo, "--config", "cfg.yaml"],
                {**files, "cfg.yaml": text},
            )
        )
    renamed = _profile_copy(typed, "ps", "ncf.yaml", lambda t: t)
    renamed["ps/bert.yaml"] = renamed["ps/ncf.yaml"]
    cases.append(Case("smaller", "typed ncf profile saved as bert.yaml", sia, {**files, **renamed}))

    def limits_text(text: str) -> str:
        data = yaml.safe_load(text)
        data["limits"] = "[[[]]]"
        return yaml.safe_dump(data)

    files_typed = {**files, **_profile_copy(typed, "ps", "bert.yaml", limits_text)}
    cases.append(Case("smaller", "typed profile limits a string", sia, files_typed))
    cases.append(
        Case("smaller", "generate -o with a NUL byte", ["workload", "generate", "-o", "e\x00"])
    )
    cases.append(Case("smaller", "generate -o '~'", ["workload", "generate", "-o", "~"]))
    cases.append(Case("smaller", "sweep --out '~'", [*sweep[:-3], "--quiet", "--out", "~"], files))
    config = ["run", "--config", "c.yaml", "--quiet", "--no-plot", "--out", "o"]
    for what, text in [
        ("run --config workload: 5 (not a descriptor)", "policy: fifo\nworkload: 5\n"),
        ("run --config workload: 2**63", "policy: fifo\nworkload: 9223372036854775808\n"),
        ("run --config cluster: -1", "policy: fifo\nworkload: w.csv\ncluster: -1\n"),
    ]:
        cases.append(Case("smaller", what, config, {**files, "c.yaml": text}))
    long_out = [*sweep[:-3], "--quiet", "--out", "x" * 300]
    cases.append(Case("smaller", "sweep --out 300 characters long", long_out, files))
    return cases


def all_cases(bases: Path) -> list[Case]:
    """Every hostile case, in a fixed order."""
    from hostile_experiments import experiment_cases  # it builds on this module's helpers
    from hostile_inputs import input_cases  # it builds on this module's Case and helpers

    return [
        *_manifest_cases(bases),
        *_folder_cases(bases),
        *_output_cases(bases),
        *_sweep_cases(),
        *_bound_cases(),
        *_guard_cases(),
        *_smaller_cases(),
        *input_cases(),
        *experiment_cases(bases),
    ]


def write_files(folder: Path, files: dict) -> None:
    for name, content in files.items():
        path = folder / name
        path.parent.mkdir(parents=True, exist_ok=True)
        if content is FIFO:
            os.mkfifo(path)
        else:
            path.write_bytes(content if isinstance(content, bytes) else str(content).encode())


def _listing(folder: Path) -> set[str]:
    return {str(p.relative_to(folder)) for p in folder.rglob("*")}


def run_case(case: Case, folder: Path, timeout: float = 60.0) -> dict:
    """Run ``case`` in ``folder`` (made here, with its files) and classify what happened:
    ``refused``, ``ran``, ``guard``, ``traceback``, ``multi-line error``, ``leftover`` (a refusal
    that wrote something), ``crash`` (another exit code) or ``hang``; with the last command's
    ``stdout``."""
    folder.mkdir(parents=True, exist_ok=True)
    write_files(folder, case.files)
    before = _listing(folder)
    here = Path.cwd()
    os.chdir(folder)
    try:
        commands: list[list[str]] = [[]]
        for arg in case.args:
            commands.append([]) if arg == "&&" else commands[-1].append(arg)
        seconds = 0.0
        for args in commands:
            done = invoke(args, timeout - seconds)
            if done is None:
                return {"outcome": "hang", "detail": f"more than {timeout:g} s", "seconds": timeout}
            result, spent = done
            seconds += spent
            if result.exit_code != 0:
                break
    finally:
        os.chdir(here)
    lines = [line for line in result.stderr.splitlines() if line.strip()]
    errors = [line for line in lines if not line.startswith("drawing ")]
    exception = result.exception
    if exception is not None and not isinstance(exception, SystemExit):
        outcome, detail = "traceback", f"{type(exception).__name__}: {exception}"[:300]
    elif result.exit_code == 0:
        outcome, detail = "ran", ""
    elif result.exit_code in (2, 3):
        outcome = {2: "refused", 3: "guard"}[result.exit_code]
        detail = errors[0] if errors else ""
        if len(errors) != 1:
            outcome, detail = "multi-line error", " | ".join(errors[:3])
        new = sorted(_listing(folder) - before)
        if outcome == "refused" and new:
            outcome, detail = "leftover", f"refused but wrote {new[:3]}: {detail}"
    else:
        outcome, detail = "crash", f"exit {result.exit_code}: {' | '.join(errors[:2])}"
    return {
        "outcome": outcome,
        "detail": detail[:300],
        "seconds": round(seconds, 2),
        "stdout": result.stdout,
    }
