"""Hostile inputs to the experiment surfaces: ``experiment batch-rules | limited-adaptivity |
cost-jct | failures``, ``sweep`` (its options and experiment files), ``compare``, ``report`` and
``plot``. Experiment files get every key with a wrong type, a value out of range, a value twice,
the key written twice and unknown keys beside it; every engine setting of ``settings`` is
generated from its declaration (``goodput_sim.spec.SETTINGS``), so a new setting is covered
the day it is declared. Then variant names, cluster lists, damaged sweep summaries for the
reports, and guard stops (one before the first round, whose partial results must still be
read back).

Each case is refused at parse time where it can be; a case that runs simulates the 4-job
workload of ``hostile_cases`` on 2x4 GPUs with one worker. :func:`experiment_cases` returns
them in a fixed order; with the bases of :func:`hostile_cases.make_bases` it adds the cases
that damage a saved sweep or comparison, and builds (once, under the bases) a comparison and a
sweep stopped by a guard before their first round and a sweep over two typed clusters of one
shape.
"""

from __future__ import annotations

import json
import math
from collections.abc import Iterable
from pathlib import Path

from hostile_cases import (
    DELETE,
    FIFO,
    WORKLOAD,
    Case,
    _cell,
    _changed,
    _drop,
    _tree,
    invoke,
)

from goodput_sim.spec import SETTINGS

ROOT = Path(__file__).resolve().parents[1]
TYPED = str(ROOT / "traces" / "profiles-sia")
FILES = {"w.csv": WORKLOAD}
SWEEP = ["sweep", "e.yaml", "--quiet", "--workers", "1", "--out", "s"]
REFUSED, RAN, GUARD = ("refused",), ("ran",), ("guard",)
BASE = {"policies": "[fifo]", "workloads": "[w.csv]", "clusters": "[2x4]"}
KEYS = ("name", "policies", "workloads", "loads", "seeds", "clusters", "intervals", "profiles")
KEYS += ("settings", "variants")
VALID = {  # one valid value of each key (YAML text), for the key-twice cases
    "name": "e",
    "policies": "[fifo]",
    "workloads": "[w.csv]",
    "loads": "[1.0]",
    "seeds": "[0]",
    "clusters": "[2x4]",
    "intervals": "[60]",
    "profiles": "null",
    "settings": "{restart_delay: 30}",
    "variants": "{a: {}}",
}


def _yaml(**keys: object) -> str:
    """An experiment file: the small valid one's keys, with ``keys`` (YAML text) set or
    DELETEd."""
    merged = {**BASE, **keys}
    return "".join(f"{k}: {v}\n" for k, v in merged.items() if v is not DELETE)


def _sweep(what: str, text: str | bytes, expect=REFUSED, extra: dict | None = None) -> Case:
    return Case("experiment file", what, SWEEP, {**FILES, **(extra or {}), "e.yaml": text}, expect)


# ------------------------------------------------------------------------ experiment files
def _file_cases() -> list[Case]:
    deep = "policies: " + "[" * 100 + "]" * 100 + "\nworkloads: [w.csv]\n"
    cases = [
        _sweep("an empty file", ""),
        _sweep("a list", "- fifo\n- w.csv\n"),
        _sweep("a number", "5\n"),
        _sweep("a string", "fifo\n"),
        _sweep("malformed YAML", "policies: [fifo\nworkloads: [w.csv]\n"),
        _sweep("a tab-indented mapping", "settings:\n\trestart_delay: 5\n" + _yaml()),
        _sweep("binary bytes", b"\x00\x01\x02\xff\xfe"),
        _sweep("an alias", "policies: &p [fifo]\nworkloads: [w.csv]\nclusters: *p\n"),
        _sweep("nested 100 deep", deep),
        _sweep("two YAML documents", _yaml() + "---\n" + _yaml()),
        _sweep("a BOM before valid keys", "\ufeff" + _yaml(), RAN),
        _sweep("CRLF line ends", _yaml().replace("\n", "\r\n"), RAN),
        Case("experiment file", "a folder as the file", SWEEP, {**FILES, "e.yaml/x": "1"}),
        Case("experiment file", "no such file", SWEEP, FILES),
        Case("experiment file", "a FIFO as the file", SWEEP, {**FILES, "e.yaml": FIFO}),
        _sweep("unknown key bogus", _yaml(bogus=1)),
        _sweep("unknown key Policies (case)", _yaml(Policies="[fifo]")),
        _sweep("unknown key policy (singular)", _yaml(policy="fifo")),
        _sweep("unknown key setting (singular)", _yaml(setting="{restart_delay: 5}")),
        _sweep("unknown key interval (singular)", _yaml(interval=60)),
        _sweep("unknown key variant (singular)", _yaml(variant="{a: {}}")),
        _sweep("no policies key", _yaml(policies=DELETE)),
        _sweep("no workloads key", _yaml(workloads=DELETE)),
        _sweep("a null key", _yaml() + "null: 1\n"),
        _sweep("a numeric key", _yaml() + "5: 1\n"),
    ]
    for key in KEYS:
        text = _yaml(**{key: VALID[key]}) + f"{key}: {VALID[key]}\n"
        cases.append(_sweep(f"key {key} written twice", text))
    return cases


def _key_cases() -> list[Case]:
    bad = {
        "name": [
            "5",
            "1.5",
            "true",
            "null",
            "[a]",
            "{a: 1}",
            "''",
            "' '",
            "a/b",
            ".hidden",
            "x" * 101,
            '"a\\nb"',
            "-rf",
            "é",
            "'a b'",
            '"a\\u0000b"',
        ],
        "policies": [
            "fifo",
            "[]",
            "[fifo, fifo]",
            "[bogus]",
            "[5]",
            "[null]",
            "[[fifo]]",
            "{fifo: 1}",
            "[{policy: fifo, bogus: 1}]",
            "[{agent: fixed}]",
            "[{policy: 5}]",
            "[{policy: goodput, params: 5}]",
            "[{policy: goodput, params: {bogus: 1}}]",
            "[{policy: goodput, params: {p: abc}}]",
            "[{policy: fifo, agent: bogus}]",
            "[{policy: goodput, agent: 5}]",
            "[fifo, {policy: fifo}]",
            "[{policy: goodput, params: {p: -1}}, {policy: goodput, params: {p: -1.0}}]",
        ],
        "workloads": [
            "w.csv",
            "[]",
            "[w.csv, w.csv]",
            "[missing.csv]",
            "[5]",
            "[null]",
            "[[w.csv]]",
            "[{generate: 5}]",
            "[{generate: {jobs: -1}}]",
            "[{generate: {jobs: 0}}]",
            "[{generate: {preset: bogus}}]",
            "[{generate: {jobs: 3, bogus: 1}}]",
            "[{generate: {jobs: 3}, bogus: 1}]",
            "[{generate: {jobs: 3}, name: 'a/b'}]",
            "[{generate: {jobs: true}}]",
            "[{generate: {jobs: 3, hours: 1, days: 1}}]",
            "[{name: x}]",
            "[empty]",
            "[bad.csv]",
            "[w.csv, {generate: {jobs: 3}, name: w}]",
        ],
        "loads": [
            "1.0",
            "[]",
            "[0]",
            "[-1]",
            "[abc]",
            "[null]",
            "[true]",
            "[.nan]",
            "[.inf]",
            "[1, 1.0]",
            "[[1]]",
            "[{a: 1}]",
            "[1e-300]",
        ],
        "seeds": [
            "0",
            "[]",
            "[-1]",
            "[1.5]",
            "[abc]",
            "[true]",
            "[null]",
            "[0, 0]",
            "[4294967296]",
            "[[0]]",
            "[.inf]",
        ],
        "clusters": [
            "2x4",
            "[]",
            "[2x4, 2x4]",
            "['0x4']",
            "[0x4]",
            "[2x0]",
            "[abc]",
            "[5]",
            "[null]",
            "[missing.yaml]",
            "[2x4x4]",
            "['2x4+']",
            "[{nodes: 2}]",
            "[1x1]",
            "[100001x1]",
            "[-2x4]",
            "[2x4, 2X4]",
            "[bad.yaml]",
            "[empty-groups.yaml]",
            "[unknown-type.yaml]",
        ],
        "intervals": [
            "60",
            "[]",
            "[0]",
            "[-60]",
            "[abc]",
            "[true]",
            "[null]",
            "[60, 60.0]",
            "[1e9]",
            "[.nan]",
            "[[60]]",
        ],
        "profiles": ["5", "[a]", "missing-folder", "''", "w.csv", "{a: 1}"],
        "settings": [
            "[restart_delay]",
            "restart_delay",
            "5",
            "{bogus: 1}",
            "{interval: 60}",
            "{Restart_delay: 5}",
        ],
    }
    extra = {
        "empty/.keep": "",
        "bad.csv": "\x00garbage\n,,\n",
        "bad.yaml": "cluster: [[[\n",
        "empty-groups.yaml": "cluster:\n  groups: []\n",
        "unknown-type.yaml": "cluster:\n  groups:\n    - {nodes: 2, gpus_per_node: 4, "
        "gpu_type: nosuch}\n",
    }
    return [
        _sweep(f"{key}: {value[:40]}", _yaml(**{key: value}), extra=extra)
        for key, values in bad.items()
        for value in values
    ]


def _bad_setting_values(name: str) -> Iterable[tuple[str, str]]:
    """(what, YAML text) of values a declared setting must refuse, from its declaration."""
    declared = next(s for s in SETTINGS if s.name == name)
    yield "an empty axis", "[]"
    yield "a mapping", "{a: 1}"
    yield "a nested list", "[[1]]"
    if declared.kind in (int, float):
        yield "text", "abc"
        yield "true", "true"
        yield "NaN", ".nan"
        if declared.low is not None:
            below = declared.low - 1 if declared.kind is int else declared.low - 0.5
            yield f"below {declared.low:g}", repr(below)
        if declared.high is not None and math.isfinite(declared.high):
            yield f"above {declared.high:g}", repr(declared.kind(declared.high * 10 + 1))
        if declared.kind is int:
            yield "a fraction", "1.5"
    elif declared.kind is bool:
        yield "text", "maybe"
        yield "a number", "5"
    elif declared.kind is str:
        yield "a number", "5"
        yield "a list of a number", "[5]"
        if declared.choices:
            yield "an unknown choice", "bogus"
    elif declared.kind is dict:
        yield "text", "abc"
        yield "a number", "5"
    else:  # a file
        yield "a missing file", "missing.csv"
        yield "a number", "5"
        yield "a folder", "empty"


def _setting_cases() -> list[Case]:
    cases = []
    for declared in SETTINGS:
        if declared.name == "interval":  # swept by intervals: refused as a setting
            continue
        for what, text in _bad_setting_values(declared.name):
            yaml_text = _yaml(settings=f"{{{declared.name}: {text}}}")
            extra = {"empty/.keep": ""}
            cases.append(_sweep(f"settings.{declared.name}: {what}", yaml_text, extra=extra))
        if declared.kind in (int, float) and declared.default is not None:
            value = declared.default
            text = _yaml(settings=f"{{{declared.name}: [{value!r}, {value!r}]}}")
            cases.append(_sweep(f"settings.{declared.name}: a value twice", text))
    for what, settings in [
        ("min_nodes without max_nodes", "{min_nodes: 1}"),
        ("max_nodes without min_nodes", "{max_nodes: 2}"),
        ("min_nodes above max_nodes", "{min_nodes: 3, max_nodes: 2}"),
        ("autoscaler search without bounds", "{autoscaler: search}"),
        ("autoscaler queue without bounds", "{autoscaler: queue}"),
        ("node_price without bounds", "{node_price: 2.5}"),
        ("startup_delay without bounds", "{startup_delay: 10}"),
        ("autoscaler_params without bounds", "{autoscaler_params: {cooldown: 3}}"),
        (
            "autoscaler_params of an unknown key",
            "{min_nodes: 1, max_nodes: 2, autoscaler_params: {bogus: 1}}",
        ),
        ("mtbf and failure_trace together", "{mtbf: 12, failure_trace: t.csv}"),
        ("a failure trace naming node 99", "{failure_trace: far.csv}"),
        ("progress swept with --progress", "{progress: [noise, lr-aware]}"),
    ]:
        extra = {
            "t.csv": "time,node,duration\n10,0,100\n",
            "far.csv": "time,node,duration\n10,99,100\n",
        }
        args = SWEEP + (["--progress", "noise"] if "--progress" in what else [])
        files = {**FILES, **extra, "e.yaml": _yaml(settings=settings)}
        cases.append(Case("experiment file", f"settings: {what}", args, files))
    return cases


def _variant_cases() -> list[Case]:
    bad = [
        ("a list", "[a, b]"),
        ("a string", "a"),
        ("an empty mapping", "{}"),
        ("a numeric label", "{8: {cluster: 8x4}}"),
        ("a label with a space", "{'a b': {}}"),
        ("a label starting with a dot", "{.a: {}}"),
        ("a label starting with '-'", "{'-a': {}}"),
        ("a label with a newline", '{"a\\n": {}}'),
        ("a label with a slash", "{'a/b': {}}"),
        ("a label of 101 characters", "{" + "v" * 101 + ": {}}"),
        ("a label of 10,000 characters", "\n  ? " + "v" * 10_000 + "\n  : {}"),
        ("a label with a NUL", '{"a\\u0000": {}}'),
        ("an empty label", "{'': {}}"),
        ("a null label", "{null: {}}"),
        ("a non-ASCII label", "{é: {}}"),
        ("a bundle that is a number", "{a: 5}"),
        ("a bundle that is a list", "{a: [1]}"),
        ("an unknown bundle key", "{a: {bogus: 1}}"),
        ("the interval in a bundle", "{a: {interval: 30}}"),
        ("a list in a bundle", "{a: {restart_delay: [1, 2]}}"),
        ("a cluster that is a number", "{a: {cluster: 5}}"),
        ("a cluster of 0 nodes", "{a: {cluster: '0x4'}}"),
        ("a cluster read by YAML as a number", "{a: {cluster: 0x4}}"),
        ("a missing cluster file", "{a: {cluster: missing.yaml}}"),
        ("a cluster too small for the jobs", "{a: {cluster: 1x1}}"),
        ("a label twice", "{a: {}, a: {cluster: 4x4}}"),
        ("two variants making one run", "{a: {}, b: {}}"),
        ("two variants of one cluster", "{a: {cluster: 2x4}, b: {cluster: 2X4}}"),
        ("a bad setting value", "{a: {restart_delay: abc}}"),
        ("a negative setting", "{a: {restart_delay: -1}}"),
        ("node_price without bounds", "{a: {node_price: 2}}"),
        ("autoscaler search without bounds", "{a: {autoscaler: search}}"),
        ("min_nodes above max_nodes", "{a: {min_nodes: 3, max_nodes: 2}}"),
        ("a settings key inside", "{a: {settings: {restart_delay: 5}}}"),
    ]
    cases = [_sweep(f"variants: {what}", _yaml(variants=text)) for what, text in bad]
    long = "v" * 100
    stem = "w" * 200
    cases += [
        _sweep("variants: a null bundle (valid)", _yaml(variants="{a: null}"), RAN),
        _sweep("variants: a label of 100 characters", _yaml(variants=f"{{{long}: {{}}}}"), RAN),
        Case(
            "experiment file",
            "variants: a 100-character label on a 200-character workload name",
            SWEEP,
            {
                f"{stem}.csv": WORKLOAD,
                "e.yaml": _yaml(
                    workloads=f"[{stem}.csv]",
                    variants=f"{{{long}: {{cluster: 2x4, restart_delay: 10}}}}",
                ),
            },
            RAN,
        ),
        _sweep(
            "variants: a label beside a swept setting",
            _yaml(settings="{restart_delay: [10, 20]}", variants="{'1.5': {restart_delay: 5}}"),
            RAN,
        ),
    ]
    return cases


def _cluster_cases() -> list[Case]:
    typed = {
        name: f"cluster:\n  groups:\n    - {{nodes: 2, gpus_per_node: 4, gpu_type: {name}}}\n"
        for name in ("aws", "rtx")
    }
    files = {**FILES, "aws.yaml": typed["aws"], "rtx.yaml": typed["rtx"]}
    files["aws-copy.yaml"] = typed["aws"]
    files["mixed.yaml"] = (
        "cluster:\n  groups:\n    - {nodes: 1, gpus_per_node: 4, gpu_type: aws}\n"
        "    - {nodes: 1, gpus_per_node: 4, gpu_type: rtx}\n"
    )
    profiles = f"profiles: {json.dumps(TYPED)}\n"
    entries = [
        ("two typed clusters of one shape", "[aws.yaml, rtx.yaml]", profiles, RAN),
        ("two files of one typed cluster", "[aws.yaml, aws-copy.yaml]", profiles, REFUSED),
        ("a typed cluster without typed profiles", "[aws.yaml]", "", REFUSED),
        ("a typed and an untyped cluster, typed profiles", "[aws.yaml, 2x4]", profiles, REFUSED),
        ("a mixed-type cluster and its halves", "[mixed.yaml, aws.yaml]", profiles, RAN),
        ("two shapes", "[2x4, 4x4]", "", RAN),
        ("a shape and its file", "[2x4, c.yaml]", "", REFUSED),
    ]
    files["c.yaml"] = "cluster:\n  nodes: 2\n  gpus_per_node: 4\n"
    return [
        Case(
            "cluster lists",
            what,
            SWEEP,
            {**files, "e.yaml": _yaml(clusters=clusters) + extra},
            expect,
        )
        for what, clusters, extra, expect in entries
    ]


# ---------------------------------------------------------------------- sweep command line
def _sweep_option_cases() -> list[Case]:
    cli = ["sweep", "--workloads", "w.csv", "--cluster", "2x4", "--quiet", "--workers", "1"]
    cli += ["--out", "s"]
    fifo = [*cli, "--policies", "fifo"]
    options = [
        ("--policies ''", [*cli, "--policies", ""]),
        ("--policies ','", [*cli, "--policies", ","]),
        ("--policies bogus", [*cli, "--policies", "bogus"]),
        ("--policies fifo,Fifo", [*cli, "--policies", "fifo,Fifo"]),
        ("--seeds ''", [*fifo, "--seeds", ""]),
        ("--seeds a", [*fifo, "--seeds", "a"]),
        ("--seeds 1.5", [*fifo, "--seeds", "1.5"]),
        ("--seeds 4294967296", [*fifo, "--seeds", "4294967296"]),
        ("--seeds 0,,0", [*fifo, "--seeds", "0,,0"]),
        ("--workers 0", [*fifo, "--workers", "0"]),
        ("--workers 65", [*fifo, "--workers", "65"]),
        ("--workers abc", [*fifo, "--workers", "abc"]),
        ("--max-runs 0", [*fifo, "--max-runs", "0"]),
        ("--max-runs 100001", [*fifo, "--max-runs", "100001"]),
        ("--max-runs abc", [*fifo, "--max-runs", "abc"]),
        ("--max-runs 1 for 2 runs", [*fifo, "--seeds", "0,1", "--max-runs", "1"]),
        ("--progress bogus", [*fifo, "--progress", "bogus"]),
        ("--agent bogus", [*fifo, "--agent", "bogus"]),
        ("--param p", [*cli, "--policies", "goodput", "--param", "p"]),
        ("--param =1", [*cli, "--policies", "goodput", "--param", "=1"]),
        ("--param p=abc", [*cli, "--policies", "goodput", "--param", "p=abc"]),
        ("--param bogus=1", [*cli, "--policies", "goodput", "--param", "bogus=1"]),
        ("--cluster 0x4", [*fifo[:3], "--cluster", "0x4", *fifo[5:]]),
        ("--cluster abc", [*fifo[:3], "--cluster", "abc", *fifo[5:]]),
        ("--cluster 1x1 (too small)", [*fifo[:3], "--cluster", "1x1", *fifo[5:]]),
        ("--cluster 1e9x4", [*fifo[:3], "--cluster", "1000000000x4", *fifo[5:]]),
        ("--cluster a missing file", [*fifo[:3], "--cluster", "missing.yaml", *fifo[5:]]),
        ("--workloads missing.csv", [*fifo, "--workloads", "missing.csv"]),
        ("--workloads an empty folder", ["sweep", "--workloads", "empty", "--policies", "fifo"]),
        ("--out ''", [*fifo[:-2], "--out", ""]),
        ("--out '.'", [*fifo[:-2], "--out", "."]),
        ("--out with a control character", [*fifo[:-2], "--out", "s\tx"]),
        ("--out a file", [*fifo[:-2], "--out", "w.csv"]),
        ("--scheduler ''", [*fifo, "--scheduler", ""]),
        ("a file and --workloads", ["sweep", "e.yaml", "--workloads", "w.csv", "--quiet"]),
        ("a file and --policies", ["sweep", "e.yaml", "--policies", "fifo", "--quiet"]),
        ("a file and --agent", ["sweep", "e.yaml", "--agent", "fixed", "--quiet"]),
        ("a file and --param", ["sweep", "e.yaml", "--param", "p=1", "--quiet"]),
        ("no file and no --workloads", ["sweep", "--policies", "fifo", "--quiet"]),
        ("two files", ["sweep", "e.yaml", "e.yaml", "--quiet"]),
    ]
    files = {**FILES, "empty/.keep": "", "e.yaml": _yaml()}
    cases = [Case("sweep options", what, args, files) for what, args in options]
    cases.append(Case("sweep options", "a valid tiny sweep", fifo, files, RAN))
    cases.append(
        Case(
            "sweep options",
            "--out a folder of other files",
            [*fifo[:-2], "--out", "d"],
            {**files, "d/notes.txt": "mine"},
        )
    )
    return cases


# ----------------------------------------------------------------------------- compare
def _compare_cases() -> list[Case]:
    cli = ["compare", "--workload", "w.csv", "--cluster", "2x4", "--quiet", "--out", "c"]
    two = [*cli, "--policies", "fifo,tiresias"]
    options = [
        ("--policies ''", [*cli, "--policies", ""], REFUSED),
        ("--policies bogus", [*cli, "--policies", "fifo,bogus"], REFUSED),
        ("--workers 0", [*two, "--workers", "0"], REFUSED),
        ("--format bogus", [*two, "--format", "bogus"], REFUSED),
        ("--seed -1", [*two, "--seed", "-1"], REFUSED),
        ("--seed 4294967296", [*two, "--seed", "4294967296"], REFUSED),
        ("--max-wall 0", [*two, "--max-wall", "0"], REFUSED),
        ("--max-wall -1", [*two, "--max-wall", "-1"], REFUSED),
        ("--max-wall abc", [*two, "--max-wall", "abc"], REFUSED),
        ("--autoscaler search without bounds", [*two, "--autoscaler", "search"], REFUSED),
        ("--node-price without bounds", [*two, "--node-price", "2"], REFUSED),
        ("--startup-delay without bounds", [*two, "--startup-delay", "5"], REFUSED),
        ("--min-nodes 3 --max-nodes 2", [*two, "--min-nodes", "3", "--max-nodes", "2"], REFUSED),
        ("--cluster 1x1", [*two[:3], "--cluster", "1x1", *two[5:]], REFUSED),
        ("--workload missing.csv", [*two[:1], "--workload", "missing.csv", *two[3:]], REFUSED),
        ("--out a file", [*cli[:-2], "--out", "w.csv", "--policies", "fifo"], REFUSED),
        ("--max-events 10", [*two, "--max-events", "10"], GUARD),
        ("--max-wall 1e-9 (before the first round)", [*two, "--max-wall", "1e-9"], GUARD),
        (
            "--autoscaler queue with bounds",
            [*two, "--autoscaler", "queue", "--min-nodes", "1"] + ["--max-nodes", "2"],
            RAN,
        ),
    ]
    return [Case("compare", what, args, FILES, expect) for what, args, expect in options]


# ------------------------------------------------------------------------- report and plot
SUMMARY_COLUMNS = (
    "workload,load,cluster,interval,policy,agent,params,seed,gpu_types,settings,run_key,"
    "avg_jct,p95_jct,makespan,gpu_utilization,unfinished"
)


def _summary(rows: list[str]) -> str:
    return SUMMARY_COLUMNS + "\n" + "".join(r + "\n" for r in rows)


def _sweep_rows(jct: str = "100", types: tuple[str, ...] = ("T4",)) -> list[str]:
    rows = []
    for policy in ("fifo", "goodput"):
        for seed in range(2):
            for gpu in types:
                rows.append(
                    f"w,1.0,2x4,60.0,{policy},fixed,{{}},{seed},{gpu},{{}},k{policy}{seed}{gpu},"
                    f"{jct},200,300,0.5,0"
                )
    return rows


def _report_cases(bases: Path | None) -> list[Case]:
    record = '{"kind": "sweep"}\n'
    synthetic = [
        ("a typed sweep of one shape", _summary(_sweep_rows(types=("aws", "rtx"))), RAN),
        ("a sweep without gpu_types", _sweep_rows_without("gpu_types"), RAN),
        ("blank gpu_types", _summary(_sweep_rows(types=("",))), RAN),
        ("every avg_jct blank", _summary(_sweep_rows(jct="")), RAN),
        (
            "settings not JSON",
            _summary([r.replace(",{},k", ",{oops,k") for r in _sweep_rows()]),
            RAN,
        ),
        ("only the header", _summary([]), REFUSED),
        ("avg_jct abc", _summary(_sweep_rows(jct="abc")), REFUSED),
        ("avg_jct -1", _summary(_sweep_rows(jct="-1")), REFUSED),
        ("a header only of blanks", ",,,\n1,2,3,4\n", REFUSED),
    ]
    cases = []
    for what, text, expect in synthetic:
        files = {"s/summary.csv": text, "s/sweep.json": record}
        cases.append(Case("report", f"report: {what}", ["report", "s"], files, expect))
        for kind in ("bars", "load"):
            args = ["plot", "s", "--kind", kind, "-o", "o.png"]
            cases.append(Case("plot", f"plot {kind}: {what}", args, files, expect))
    folder = {"s/summary.csv": _summary(_sweep_rows()), "s/sweep.json": record}
    options = [
        ("report", "no such folder", ["report", "missing"], {}, REFUSED),
        ("report", "a file as the folder", ["report", "w.csv"], FILES, REFUSED),
        ("report", "an empty folder", ["report", "d"], {"d/.keep": ""}, REFUSED),
        ("report", "-o not .html", ["report", "s", "-o", "r.txt"], folder, REFUSED),
        (
            "report",
            "-o an existing file",
            ["report", "s", "-o", "r.html"],
            {**folder, "r.html": "mine"},
            REFUSED,
        ),
        ("report", "--format bogus", ["report", "s", "--format", "bogus"], folder, REFUSED),
        ("report", "--format json", ["report", "s", "--format", "json"], folder, RAN),
        ("plot", "--kind bogus", ["plot", "s", "--kind", "bogus"], folder, REFUSED),
        ("plot", "-o .txt", ["plot", "s", "-o", "o.txt"], folder, REFUSED),
        ("plot", "--load abc", ["plot", "s", "--kind", "bars", "--load", "abc"], folder, REFUSED),
        (
            "plot",
            "--load 7 (not swept)",
            ["plot", "s", "--kind", "bars", "--load", "7", "-o", "o.png"],
            folder,
            REFUSED,
        ),
        (
            "plot",
            "a run figure of a sweep",
            ["plot", "s", "--kind", "timeline", "-o", "o.png"],
            folder,
            REFUSED,
        ),
        ("plot", "no such folder", ["plot", "missing", "-o", "o.png"], {}, REFUSED),
    ]
    cases += [Case(s, what, args, files, expect) for s, what, args, files, expect in options]
    if bases is None:
        return cases
    sweep = _tree(bases / "sw", "s/")
    for what, change, expect in [
        ("gpu_types dropped", _drop("gpu_types"), RAN),
        ("gpu_types of one run changed", _cell("gpu_types", "rtx"), RAN),
        ("cluster dropped", _drop("cluster"), RAN),
        ("settings dropped", _drop("settings"), RAN),
        ("variant blank", _cell("variant", ""), RAN),
        ("seed 1.5", _cell("seed", "1.5"), REFUSED),
        ("unfinished -1", _cell("unfinished", "-1"), REFUSED),
        ("workload blank", _cell("workload", ""), REFUSED),
        ("sweep.json deleted", None, RAN),
    ]:
        files = (
            _changed(sweep, "s/summary.csv", change)
            if change is not None
            else _changed(sweep, "s/sweep.json", DELETE)
        )
        cases.append(Case("report", f"saved sweep: {what}", ["report", "s"], files, expect))
        cases.append(
            Case(
                "plot",
                f"saved sweep bars: {what}",
                ["plot", "s", "--kind", "bars", "-o", "o.png"],
                files,
                expect,
            )
        )
    comparison = _tree(bases / "cmp", "c/")
    for what, change, expect in [
        ("a run's rounds.csv only its header", _header_only, RAN),
        ("a run's rounds.csv one newline", lambda t: "\n", REFUSED),
    ]:
        files = _changed(comparison, "c/fifo/rounds.csv", change)
        cases.append(Case("report", f"saved comparison: {what}", ["report", "c"], files, expect))
        for kind in ("utilization", "timeline", "nodes"):
            args = ["plot", "c", "--kind", kind, "--policy", "fifo", "-o", "o.png"]
            cases.append(Case("plot", f"saved comparison {kind}: {what}", args, files, expect))
    return cases


def _sweep_rows_without(column: str) -> str:
    columns = SUMMARY_COLUMNS.split(",")
    drop = columns.index(column)
    lines = _summary(_sweep_rows()).splitlines()
    return "".join(
        ",".join(c for k, c in enumerate(line.split(",")) if k != drop) + "\n" for line in lines
    )


def _header_only(text: str) -> str:
    return text.splitlines()[0] + "\n"


# ------------------------------------------------------------------ experiment subcommands
def _batch_rules_cases() -> list[Case]:
    cli = ["experiment", "batch-rules", "--workloads", "w.csv", "--cluster", "2x4"]
    cli += ["--workers", "1", "--out", "b"]
    options = [
        ("--agents bogus", ["--agents", "bogus"]),
        ("--agents ''", ["--agents", ","]),
        ("--schedulers bogus", ["--schedulers", "bogus"]),
        ("--seeds abc", ["--seeds", "abc"]),
        ("--seeds -1", ["--seeds", "-1"]),
        ("--seeds ''", ["--seeds", ","]),
        ("--progress bogus", ["--progress", "bogus"]),
        ("--tail-geometry bogus", ["--tail-geometry", "bogus"]),
        ("--workers 0", ["--workers", "0"]),
        ("--format bogus", ["--format", "bogus"]),
        ("--cluster 0x4", ["--cluster", "0x4"]),
        ("--cluster 1x1 (too small)", ["--cluster", "1x1"]),
        ("--workloads missing.csv", ["--workloads", "missing.csv"]),
        ("--profiles missing", ["--profiles", "missing"]),
    ]
    files = {**FILES, "empty/.keep": ""}
    cases = [Case("experiment batch-rules", what, [*cli, *extra], files) for what, extra in options]
    only_empty = ["experiment", "batch-rules", "--workloads", "empty", "--out", "b"]
    cases.append(Case("experiment batch-rules", "--workloads an empty folder", only_empty, files))
    return cases


def _limited_cases() -> list[Case]:
    cli = ["experiment", "limited-adaptivity", "--workloads", "w.csv", "--cluster", "2x4"]
    cli += ["--workers", "1", "--policies", "fifo", "--out", "la"]
    many = ",".join(f"{k / 1000:g}" for k in range(1001))
    options = [
        ("--shares abc", ["--shares", "abc"], REFUSED),
        ("--shares ''", ["--shares", ""], REFUSED),
        ("--shares -0.1", ["--shares", "-0.1"], REFUSED),
        ("--shares 1.5", ["--shares", "0,1.5"], REFUSED),
        ("--shares nan", ["--shares", "nan"], REFUSED),
        ("--shares inf", ["--shares", "inf"], REFUSED),
        ("--shares equal to the percent", ["--shares", "0.1234567,0.1234568"], REFUSED),
        ("--shares 1,001 of them (over the budget)", ["--shares", many], REFUSED),
        ("--category bogus", ["--category", "bogus"], REFUSED),
        ("--seed -1", ["--seed", "-1"], REFUSED),
        ("--policies bogus", ["--policies", "bogus"], REFUSED),
        ("--policies ''", ["--policies", ","], REFUSED),
        ("--workers 0", ["--workers", "0"], REFUSED),
        ("--cluster 1x1 (too small)", ["--cluster", "1x1"], REFUSED),
        ("--cluster 0x4", ["--cluster", "0x4"], REFUSED),
        ("--cluster missing.yaml", ["--cluster", "missing.yaml"], REFUSED),
        ("--workloads missing.csv", ["--workloads", "missing.csv"], REFUSED),
        ("--workloads a garbled CSV", ["--workloads", "bad.csv"], REFUSED),
        ("--workloads of one name twice", ["--workloads", "sub/w.csv"], REFUSED),
        ("--profiles missing", ["--profiles", "missing"], REFUSED),
        ("--profiles of other GPU types", ["--profiles", TYPED], REFUSED),
        ("--out a file", ["--out", "w.csv"], REFUSED),
        ("--out ''", ["--out", ""], REFUSED),
        ("--out with its runs a file", ["--out", "busy"], REFUSED),
        ("one share, no share 0", ["--shares", "1"], RAN),
        ("shares 0 and 1", ["--shares", "0,1"], RAN),
    ]
    files = {**FILES, "bad.csv": "\x00garbage\n", "sub/w.csv": WORKLOAD, "busy/runs": "a file"}
    return [
        Case("experiment limited-adaptivity", what, [*cli, *extra], files, expect)
        for what, extra, expect in options
    ]


COST_COLUMNS = "workload,load,cluster,variant,interval,policy,agent,params,seed,settings,avg_jct"
COST_COLUMNS += ",node_hours,cost,unfinished"


def _cost_rows(jct: str = "100") -> list[str]:
    auto = '"{""min_nodes"": 1, ""max_nodes"": 4, ""node_price"": 2.5}"'
    rows = []
    for seed in range(2):
        rows.append(f"w,1.0,2x4,fixed-2,60,fifo,fixed,{{}},{seed},{{}},{jct},2,,0")
        rows.append(f"w,1.0,4x4,fixed-4,60,fifo,fixed,{{}},{seed},{{}},{jct},4,,0")
        rows.append(f"w,1.0,2x4,utility,60,fifo,fixed,{{}},{seed},{auto},{jct},3,7.5,0")
    return rows


def _cost_cases() -> list[Case]:
    good = COST_COLUMNS + "\n" + "\n".join(_cost_rows()) + "\n"
    entries = [
        ("a valid summary", good, [], RAN),
        ("a run without a finished job", good.replace(",100,3,7.5,0", ",,3,7.5,4", 1), [], RAN),
        ("no such folder", None, [], REFUSED),
        ("no summary.csv", {"r/.keep": ""}, [], REFUSED),
        (
            "no variant column",
            good.replace("variant,", "")
            .replace(",fixed-2,", ",")
            .replace(",fixed-4,", ",")
            .replace(",utility,", ","),
            [],
            REFUSED,
        ),
        ("only the header", COST_COLUMNS + "\n", [], REFUSED),
        ("garbled", "\x00garbage\n", [], REFUSED),
        ("settings not JSON", good.replace(",{},100", ",{oops,100"), [], REFUSED),
        ("settings a JSON list", good.replace(",{},100", ",[],100"), [], REFUSED),
        ("cluster abc", good.replace("2x4,fixed-2", "abc,fixed-2"), [], REFUSED),
        ("one run twice", good + _cost_rows()[0] + "\n", [], REFUSED),
        ("--figure .txt", good, ["--figure", "f.txt"], REFUSED),
        ("--figure without a suffix", good, ["--figure", "f"], REFUSED),
        ("-o a file", good, ["-o", "w.csv"], REFUSED),
    ]
    cases = []
    for what, text, extra, expect in entries:
        if text is None:
            files = {}
        elif isinstance(text, dict):
            files = text
        else:
            files = {"r/summary.csv": text}
        args = ["experiment", "cost-jct", "r", *extra]
        cases.append(Case("experiment cost-jct", what, args, {**FILES, **files}, expect))
    return cases


FAIL_COLUMNS = "workload,load,cluster,interval,policy,agent,params,seed,settings,avg_jct"
FAIL_COLUMNS += ",lost_gpu_hours,node_failures"


def _failure_cases() -> list[Case]:
    mtbf = '"{""mtbf"": 12}"'
    rows = [
        f"w,1.0,2x4,60,fifo,fixed,{{}},{seed},{settings},{jct},{lost},{failures}"
        for seed in range(2)
        for settings, jct, lost, failures in (("{}", 100, 0, 0), (mtbf, 150, 1.5, 2))
    ]
    good = FAIL_COLUMNS + "\n" + "\n".join(rows) + "\n"
    entries = [
        ("a valid summary", good, [], RAN),
        ("a failing run without a finished job", good.replace(",150,", ",,", 1), [], RAN),
        ("no such folder", None, [], REFUSED),
        ("no run without failures", good.replace(",{},", ',"{""mtbf"": 24}",'), [], REFUSED),
        ("no lost_gpu_hours column", good.replace(",lost_gpu_hours", ""), [], REFUSED),
        ("settings not JSON", good.replace(",{},", ",{oops,"), [], REFUSED),
        ("only the header", FAIL_COLUMNS + "\n", [], REFUSED),
        ("one run twice", good + rows[0] + "\n", [], REFUSED),
        ("--figure .txt", good, ["--figure", "f.txt"], REFUSED),
        ("-o a file", good, ["-o", "w.csv"], REFUSED),
    ]
    cases = []
    for what, text, extra, expect in entries:
        files = {} if text is None else {"r/summary.csv": text}
        args = ["experiment", "failures", "r", *extra]
        cases.append(Case("experiment failures", what, args, {**FILES, **files}, expect))
    return cases


# ------------------------------------------------------------------------------ guards
def _guard_cases(bases: Path | None) -> list[Case]:
    cases = [
        _sweep("settings max_events 10: a guard stop", _yaml(settings="{max_events: 10}"), GUARD),
        _sweep(
            "settings max_wall 1e-9: stopped at time 0", _yaml(settings="{max_wall: 1.0e-9}"), GUARD
        ),
        _sweep("a variant with max_events 10", _yaml(variants="{a: {max_events: 10}}"), GUARD),
        _sweep(
            "max_events swept [10, 20000000]: one run stops",
            _yaml(settings="{max_events: [10, 20000000]}"),
            GUARD,
        ),
        Case(
            "guards",
            "a 2-run sweep whose runs all stop (--max-runs 2)",
            [*SWEEP, "--max-runs", "2"],
            {**FILES, "e.yaml": _yaml(seeds="[0, 1]", settings="{max_events: 10}")},
            GUARD,
        ),
        Case(
            "guards",
            "run --max-wall 1e-9: stopped before its first round",
            ["run", "--policy", "fifo", "--workload", "w.csv", "--cluster", "2x4", "--quiet"]
            + ["--max-wall", "1e-9", "--no-plot", "--out", "r"],
            FILES,
            GUARD,
        ),
    ]
    if bases is None:
        return cases
    stopped = _stopped_bases(bases)
    comparison = _tree(stopped / "c", "c/")
    cases.append(
        Case("guards", "report of a comparison stopped at time 0", ["report", "c"], comparison, RAN)
    )
    cases.append(
        Case(
            "guards",
            "report --format json of it",
            ["report", "c", "--format", "json"],
            comparison,
            RAN,
        )
    )
    for kind in ("cdf", "bars", "jobs", "utilization", "timeline", "nodes", "apps"):
        args = ["plot", "c", "--kind", kind, "--policy", "fifo", "-o", "o.png"]
        cases.append(Case("guards", f"plot {kind} of it", args, comparison, RAN))
    run = _tree(stopped / "c" / "fifo", "r/")
    cases.append(Case("guards", "report of one run stopped at time 0", ["report", "r"], run, RAN))
    cases.append(
        Case(
            "guards",
            "replay of its manifest",
            ["run", "--manifest", "r/manifest.json", "--out", "again", "--quiet", "--no-plot"],
            {**run, "w.csv": WORKLOAD},
            GUARD,
        )
    )
    sweep = _tree(stopped / "s", "s/")
    cases.append(Case("guards", "report of a sweep stopped at time 0", ["report", "s"], sweep, RAN))
    cases.append(
        Case(
            "guards",
            "resuming the stopped sweep redoes it",
            SWEEP,
            {**sweep, **FILES, "e.yaml": _yaml(settings="{max_wall: 1.0e-9}")},
            GUARD,
        )
    )
    typed = _tree(stopped / "t", "t/")
    cases.append(
        Case("guards", "report of a typed sweep of one shape", ["report", "t"], typed, RAN)
    )
    return cases


def _stopped_bases(bases: Path) -> Path:
    """Under ``bases/experiments`` (made once): ``c``, a fifo/tiresias comparison, and ``s``, a
    sweep, both stopped by --max-wall before their first round; ``t``, a sweep over aws and rtx
    2x4 clusters."""
    root = bases / "experiments"
    if (root / "done").is_file():
        return root
    root.mkdir(parents=True, exist_ok=True)
    (root / "w.csv").write_text(WORKLOAD)
    for name in ("aws", "rtx"):
        (root / f"{name}.yaml").write_text(
            f"cluster:\n  groups:\n    - {{nodes: 2, gpus_per_node: 4, gpu_type: {name}}}\n"
        )
    (root / "s.yaml").write_text(
        _yaml(workloads=f"[{root / 'w.csv'}]", settings="{max_wall: 1.0e-9}")
    )
    (root / "t.yaml").write_text(
        _yaml(
            workloads=f"[{root / 'w.csv'}]",
            clusters=f"[{root / 'aws.yaml'}, {root / 'rtx.yaml'}]",
            profiles=json.dumps(TYPED),
        )
    )
    common = ["--workload", str(root / "w.csv"), "--cluster", "2x4", "--quiet"]
    for args, code in [
        (
            [
                "compare",
                "--policies",
                "fifo,tiresias",
                *common,
                "--max-wall",
                "1e-9",
                "--out",
                str(root / "c"),
            ],
            3,
        ),
        (["sweep", str(root / "s.yaml"), "--quiet", "--workers", "1", "--out", str(root / "s")], 3),
        (["sweep", str(root / "t.yaml"), "--quiet", "--workers", "1", "--out", str(root / "t")], 0),
    ]:
        done = invoke(args, 300)
        assert done is not None and done[0].exit_code == code, (args, done and done[0].output)
    (root / "done").write_text("")
    return root


def experiment_cases(bases: Path | None = None) -> list[Case]:
    """Every hostile case of the experiment surfaces, in a fixed order; with ``bases``
    (:func:`hostile_cases.make_bases`) also those that damage or read saved results."""
    return [
        *_file_cases(),
        *_key_cases(),
        *_setting_cases(),
        *_variant_cases(),
        *_cluster_cases(),
        *_sweep_option_cases(),
        *_compare_cases(),
        *_report_cases(bases),
        *_batch_rules_cases(),
        *_limited_cases(),
        *_cost_cases(),
        *_failure_cases(),
        *_guard_cases(bases),
    ]
