"""Hostile inputs to the readers of user files, generated systematically: every workload column
with each kind of bad value (and twice in the header), every YAML key of a ``--config``,
experiment and cluster file given twice, numbers written ``1_0``, the Philly log's fields, the
failure trace's fields, every option of each command that takes ``--config``, outputs that
cannot be written, and ``--profiles`` naming what is no folder. Each case is refused at parse
time (or runs a few tiny jobs), so the whole set runs in well under a minute.

:func:`input_cases` is appended to ``hostile_cases.all_cases``; the outcomes are those of
:class:`hostile_cases.Case`.
"""

from __future__ import annotations

import functools
import json
import tempfile
from pathlib import Path

from hostile_cases import EXPERIMENT, FIFO, WORKLOAD, Case, _tree, invoke

from goodput_sim.cli import main
from goodput_sim.inputs.workload import CATEGORY_COLUMN, WORKLOAD_COLUMNS

RAN, REFUSED = ("ran",), ("refused",)
FILES = {"w.csv": WORKLOAD}
RUN = ["run", "--policy", "fifo", "--workload", "w.csv", "--cluster", "2x4", "--quiet"]
RUN += ["--no-plot", "--out", "o"]

# Each kind of bad value a number or text cell can hold, as written in a file.
BAD_VALUES = {
    "NaN": "nan",
    "inf": "inf",
    "-inf": "-inf",
    "negative": "-4",
    "fraction": "1.5",
    "underscore digits": "1_0",
    "empty": "",
    "text": "abc",
    "huge": "1e30",
    "Arabic-Indic digit": "\u0664",
    "full-width digit": "\uff14",
    "True": "True",
    "hex": "0x10",
    "space inside": "1 0",
}

# Which bad values a workload column accepts (the rest are refused).
WORKLOAD_ACCEPTS = {
    "name": {"NaN", "inf", "-inf", "negative", "fraction", "underscore digits", "text", "huge"}
    | {"Arabic-Indic digit", "full-width digit", "True", "hex", "space inside"},
    "time": {"fraction"},
    "application": set(),
    "num_replicas": set(),
    "batch_size": set(),
    CATEGORY_COLUMN: {"empty"},
}
WORKLOAD_SURFACES = {
    "workload check": ["workload", "check", "w.csv"],
    "run": RUN,
}


def _csv(header: list[str], rows: list[list[str]]) -> str:
    return "".join(",".join(cells) + "\n" for cells in [header, *rows])


def _workload_rows() -> tuple[list[str], list[list[str]]]:
    lines = WORKLOAD.strip().splitlines()
    header = [*lines[0].split(","), CATEGORY_COLUMN]
    rows = [[*line.split(","), "adaptive"] for line in lines[1:]]
    return header, rows


def _workload_cases() -> list[Case]:
    header, rows = _workload_rows()
    cases = []
    for column in [*WORKLOAD_COLUMNS, CATEGORY_COLUMN]:
        index = header.index(column)
        for what, value in BAD_VALUES.items():
            changed = [list(row) for row in rows]
            changed[1][index] = value
            text = _csv(header, changed)
            expect = RAN if what in WORKLOAD_ACCEPTS[column] else REFUSED
            for surface, args in WORKLOAD_SURFACES.items():
                cases.append(
                    Case(f"workload {column}", f"{surface}: {what}", args, {"w.csv": text}, expect)
                )
        twice = _csv([*header, column], [[*row, row[index]] for row in rows])
        for surface, args in WORKLOAD_SURFACES.items():
            cases.append(
                Case(f"workload {column}", f"{surface}: column twice", args, {"w.csv": twice})
            )
    return cases


# ---------------------------------------------------------------- YAML keys and number forms


def _own_names(words: tuple[str, ...]) -> list[tuple[str, object]]:
    """(key, option) for each option's own name of the command ``words`` (as --config reads)."""
    command = main
    for word in words:
        command = command.commands[word]
    return [
        (flag[2:].replace("-", "_"), option)
        for option in command.params
        if getattr(option, "opts", None) and option.name not in ("config", "manifest", "help")
        for flag in option.opts
        if flag.startswith("--")
    ]


def _config_args(command: str) -> list[str]:
    if command == "run":
        return ["run", "--config", "c.yaml", "--quiet", "--no-plot", "--out", "o"]
    return ["compare", "--config", "c.yaml", "--quiet", "--out", "o"]


def _bad_config_value(option) -> object:
    """A value ``option`` refuses in a --config file, at parse time."""
    import click

    from goodput_sim.spec import BY_NAME

    if option.name in BY_NAME:
        kind = BY_NAME[option.name].kind
        return "bogus" if kind not in (str, Path) else [1, 2]
    if option.name == "seed":
        return -1
    if option.name == "params":
        return 5
    if option.is_flag:
        return "yes"
    if isinstance(option.type, click.types.IntParamType | click.types.FloatParamType):
        return "1_0"
    return [1, 2]


def _yaml_cases() -> list[Case]:
    cases = []
    for command in ("run", "compare"):
        for key, option in _own_names((command,)):
            twice = f"{key}: x\npolicy: fifo\n{key}: y\n"
            cases.append(
                Case(
                    f"--config of {command}",
                    f"{key} given twice",
                    _config_args(command),
                    {**FILES, "c.yaml": twice},
                )
            )
            bad = json.dumps({key: _bad_config_value(option)})
            cases.append(
                Case(
                    f"--config of {command}",
                    f"{key}: a value its option refuses",
                    _config_args(command),
                    {**FILES, "c.yaml": bad},
                )
            )
    numbers = {
        "seed": "1_0",
        "interval": "6_0",
        "restart_delay": "3_0",
        "horizon": "1:30",
        "max_events": "1_000_000",
        "mtbf": "017",
        "checkpoint_interval": "6_00",
        "min_nodes": "0_1",
        "max_wall": "1_0.5",
        "node_price": "2:00",
        "workers": "0_2",
        "interference": "0.1_0",
    }
    for key, number in numbers.items():
        for command in ("run", "compare"):
            if key == "workers" and command == "run":
                continue
            text = f"policy: fifo\nworkload: w.csv\n{key}: {number}\n"
            cases.append(
                Case(
                    f"--config of {command}",
                    f"{key}: {number} (YAML would read other digits)",
                    _config_args(command),
                    {**FILES, "c.yaml": text},
                )
            )
            quoted = f"policy: fifo\nworkload: w.csv\n{key}: '{number}'\n"
            cases.append(
                Case(
                    f"--config of {command}",
                    f"{key}: '{number}' (text, no number)",
                    _config_args(command),
                    {**FILES, "c.yaml": quoted},
                )
            )
    for key in EXPERIMENT:
        text = (
            json.dumps(EXPERIMENT, indent=1)[:-1] + f',\n "{key}": {json.dumps(EXPERIMENT[key])}}}'
        )
        cases.append(
            Case(
                "experiment file",
                f"{key} given twice",
                ["sweep", "e.yaml", "--quiet", "--out", "s"],
                {**FILES, "e.yaml": text},
            )
        )
    for key, value in (("loads", "[1_0]"), ("seeds", "[0_1]"), ("intervals", "[6_0]")):
        text = "".join(f"{k}: {json.dumps(v)}\n" for k, v in EXPERIMENT.items() if k != key)
        cases.append(
            Case(
                "experiment file",
                f"{key}: {value}",
                ["sweep", "e.yaml", "--quiet", "--out", "s"],
                {**FILES, "e.yaml": text + f"{key}: {value}\n"},
            )
        )
    group = {"nodes": "2", "gpus_per_node": "4", "gpu_type": "T4", "mtbf_hours": "100"}
    body = "".join(f"  {k}: {v}\n" for k, v in group.items())
    entries = ", ".join(f"{k}: {v}" for k, v in group.items())
    for key in group:
        for what, text in (
            (f"{key} given twice", f"cluster:\n{body}  {key}: {group[key]}\n"),
            (f"{key} twice in a group", f"groups:\n  - {{{entries}, {key}: {group[key]}}}\n"),
        ):
            cases.append(
                Case(
                    "cluster file",
                    what,
                    [*RUN[:5], "--cluster", "c.yaml", *RUN[7:]],
                    {**FILES, "c.yaml": text},
                )
            )
    for key, value in (("nodes", "0_2"), ("gpus_per_node", "0_4"), ("mtbf_hours", "1:00")):
        body = "".join(f"  {k}: {v if k != key else value}\n" for k, v in group.items())
        cases.append(
            Case(
                "cluster file",
                f"{key}: {value}",
                [*RUN[:5], "--cluster", "c.yaml", *RUN[7:]],
                {**FILES, "c.yaml": f"cluster:\n{body}"},
            )
        )
    for shape in ("\u0662x\u0664", "\uff12x4", "2_0x4"):
        args = [*RUN[:5], "--cluster", shape, *RUN[7:]]
        cases.append(Case("cluster shape", f"--cluster {shape!a}", args, FILES))
    return cases


# ------------------------------------------------------------------------- the Philly log

PHILLY_HEADER = ["timestamp", "duration", "num_gpus", "gpu_time"]
PHILLY_ROWS = [
    ["2017-10-02 03:00:00", "600", "2", "1200"],
    ["2017-10-02 04:00:00", "1200", "4", "4800"],
    ["2017-10-02 05:00:00", "900", "1", "900"],
    ["2017-10-03 03:30:00", "3600", "8", "28800"],
]
PHILLY_ACCEPTS = {
    "timestamp": set(),
    "duration": {"fraction", "huge"},
    "gpu_time": {"fraction", "huge"},
    "num_gpus": set(),
}
PHILLY_SURFACES = {
    "workload philly": ["workload", "philly", "p.csv", "-o", "w.csv"],
    "workload stats": ["workload", "stats", "p.csv", "-o", "s.yaml"],
}


def _philly_cases() -> list[Case]:
    cases = []
    for field_name in PHILLY_HEADER:
        index = PHILLY_HEADER.index(field_name)
        values = {**BAD_VALUES, "zero": "0"}
        for what, value in values.items():
            rows = [list(row) for row in PHILLY_ROWS]
            rows[1][index] = value
            accepted = what in PHILLY_ACCEPTS[field_name] or (
                what == "zero" and field_name in ("duration", "gpu_time")
            )
            for surface, args in PHILLY_SURFACES.items():
                cases.append(
                    Case(
                        f"Philly log {field_name}",
                        f"{surface}: {what}",
                        args,
                        {"p.csv": _csv(PHILLY_HEADER, rows)},
                        RAN if accepted else REFUSED,
                    )
                )
        twice = _csv([*PHILLY_HEADER, field_name], [[*r, r[index]] for r in PHILLY_ROWS])
        for surface, args in PHILLY_SURFACES.items():
            cases.append(
                Case(f"Philly log {field_name}", f"{surface}: column twice", args, {"p.csv": twice})
            )
    job = {
        "jobid": "a",
        "submitted_time": "2017-10-02 08:00:00",
        "attempts": [
            {
                "start_time": "2017-10-02 08:00:30",
                "end_time": "2017-10-02 08:10:30",
                "detail": [{"ip": "m1", "gpus": ["gpu0"]}],
            }
        ],
    }
    text = json.dumps([job])
    for key, value in (
        ("jobid", '"b"'),
        ("submitted_time", '"2017-10-03 08:00:00"'),
        ("attempts", "[]"),
        ("start_time", '"2017-10-02 08:01:30"'),
        ("end_time", '"2017-10-02 09:10:30"'),
        ("detail", "[]"),
        ("gpus", '["gpu1", "gpu2"]'),
    ):
        at = text.index(f'"{key}": ')
        twice = text[:at] + f'"{key}": {value}, ' + text[at:]
        cases.append(
            Case(
                "Philly job log",
                f"{key} given twice",
                ["workload", "philly", "log.json", "-o", "w.csv"],
                {"log.json": twice},
            )
        )
    return cases


# ---------------------------------------------------------------------- failure traces

TRACE_HEADER = ["time", "node", "duration", "kind"]
TRACE_ROWS = [["10", "0", "100", "failure"], ["200", "1", "50", "failure"]]
TRACE_ACCEPTS = {
    "time": {"fraction"},
    "node": set(),
    "duration": {"fraction"},
    "kind": {"empty"},
}


def _trace_cases() -> list[Case]:
    cases = []
    for field_name in TRACE_HEADER:
        index = TRACE_HEADER.index(field_name)
        for what, value in BAD_VALUES.items():
            rows = [list(row) for row in TRACE_ROWS]
            rows[1][index] = value
            expect = RAN if what in TRACE_ACCEPTS[field_name] else REFUSED
            cases.append(
                Case(
                    f"failure trace {field_name}",
                    what,
                    [*RUN, "--failure-trace", "f.csv"],
                    {**FILES, "f.csv": _csv(TRACE_HEADER, rows)},
                    expect,
                )
            )
        twice = _csv([*TRACE_HEADER, field_name], [[*r, r[index]] for r in TRACE_ROWS])
        cases.append(
            Case(
                f"failure trace {field_name}",
                "column twice",
                [*RUN, "--failure-trace", "f.csv"],
                {**FILES, "f.csv": twice},
            )
        )
    return cases


# ------------------------------------------------------- options by their own names, outputs


def _accepted_config_cases() -> list[Case]:
    """Keys that were refused although they name an option: they now run."""
    return [
        Case(
            "--config of run",
            f"{key} (valid)",
            ["run", "--config", "c.yaml", "--out", "o"],
            {**FILES, "c.yaml": f"policy: fifo\nworkload: w.csv\ncluster: 2x4\n{text}"},
            RAN,
        )
        for key, text in (
            ("quiet: true", "quiet: true\nplot: false\n"),
            ("force: true", "quiet: true\nforce: true\nplot: false\n"),
            ("param: {} and params", "quiet: true\nplot: false\nparam: []\nparams: {}\n"),
        )
    ]


@functools.cache
def _saved_run() -> dict[str, str]:
    """A tiny fifo run's folder (text files, keyed ``r/...``), made once."""
    root = Path(tempfile.mkdtemp(prefix="hostile-inputs-"))
    (root / "w.csv").write_text(WORKLOAD)
    args = [*RUN[:4], str(root / "w.csv"), *RUN[5:-1], str(root / "r")]
    done = invoke(args, 120)
    assert done is not None and done[0].exit_code == 0, done and done[0].output
    return _tree(root / "r", "r/")


def _output_cases() -> list[Case]:
    run = _saved_run()
    unwritable = {
        "under a regular file": ("file/", {"file": "x"}),
        "under a file, two folders deep": ("file/a/b/", {"file": "x"}),
        "under /proc": ("/proc/", {}),
        "under /sys": ("/sys/", {}),
        "under /dev/null": ("/dev/null/", {}),
    }
    writers = {
        "report -o": (["report", "r", "-o"], "out.html", run),
        "plot -o": (["plot", "r", "--kind", "cdf", "-o"], "out.png", run),
        "workload generate -o": (["workload", "generate", "--jobs", "3", "-o"], "w.csv", {}),
        "workload categorize -o": (["workload", "categorize", "w.csv", "-o"], "c.csv", FILES),
        "workload stats -o": (
            ["workload", "stats", "p.csv", "-o"],
            "s.yaml",
            {"p.csv": _csv(PHILLY_HEADER, PHILLY_ROWS)},
        ),
        "workload philly -o": (
            ["workload", "philly", "p.csv", "-o"],
            "p.csv",
            {"p.csv": _csv(PHILLY_HEADER, PHILLY_ROWS)},
        ),
    }
    cases = []
    for writer, (args, name, files) in writers.items():
        for what, (parent, more) in unwritable.items():
            cases.append(
                Case("output paths", f"{writer} {what}", [*args, parent + name], {**files, **more})
            )
    manifest = json.loads(run["r/manifest.json"])
    for key in ("total_gpus", "gpus_per_node", "nodes", "gpu_type"):
        changed = {k: v for k, v in manifest["cluster"].items() if k != key}
        files = {**run, "r/manifest.json": json.dumps({**manifest, "cluster": changed})}
        for kind in ("utilization", "nodes"):
            cases.append(
                Case(
                    "results folder",
                    f"plot {kind}: manifest without cluster.{key}",
                    ["plot", "r", "--kind", kind, "-o", "u.png"],
                    files,
                    RAN,
                )
            )
    changed = {k: v for k, v in manifest["cluster"].items() if k != "groups"}
    files = {**run, "r/manifest.json": json.dumps({**manifest, "cluster": changed})}
    cases.append(
        Case(
            "results folder",
            "plot utilization: manifest without cluster.groups",
            ["plot", "r", "--kind", "utilization", "-o", "u.png"],
            files,
        )
    )
    return cases


def _profiles_cases() -> list[Case]:
    commands = {
        "run": [*RUN, "--profiles"],
        "compare": ["compare", "--policies", "fifo", *RUN[3:8], "--out", "o", "--profiles"],
        "sweep": ["sweep", "--policies", "fifo", "--workloads", "w.csv", "--cluster", "2x4"]
        + ["--quiet", "--out", "s", "--profiles"],
        "profiles show": ["profiles", "show", "--profiles"],
    }
    cases = []
    for command, args in commands.items():
        for what, target, files in (
            ("/dev/null", "/dev/null", {}),
            ("/dev/zero", "/dev/zero", {}),
            ("a named pipe", "pipe", {"pipe": FIFO}),
        ):
            cases.append(
                Case(
                    "--profiles",
                    f"{command} --profiles {what}",
                    [*args, target],
                    {**FILES, **files},
                )
            )
    return cases


def input_cases() -> list[Case]:
    """Every hostile input case of this module, in a fixed order."""
    return [
        *_workload_cases(),
        *_yaml_cases(),
        *_philly_cases(),
        *_trace_cases(),
        *_accepted_config_cases(),
        *_output_cases(),
        *_profiles_cases(),
    ]
