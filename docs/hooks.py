"""MkDocs hook: the performance page's figures, read from ``benchmarks/results/*.json`` when the
site is built, so the page always shows the latest measurements and never a copy of them.

A page asks for a table with a marker line ``<!-- benchmarks: NAME -->``; NAME is one of
``TABLES``. A marker naming no table, or a results file that is missing, stops the build. The
figures of ``FIGURES`` are served from the results folder as ``images/<name>``."""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from pathlib import Path

from mkdocs.exceptions import PluginError
from mkdocs.structure.files import File

FIGURES = ("scale_policy_time.png",)
MARKER = re.compile(r"^<!-- benchmarks: ([a-z_]+) -->$", re.MULTILINE)


def _results(config) -> Path:
    return Path(config["config_file_path"]).parent / "benchmarks" / "results"


def _load(folder: Path, name: str) -> dict:
    path = folder / f"{name}.json"
    if not path.is_file():
        raise PluginError(f"performance page: {path.name} is missing from benchmarks/results")
    return json.loads(path.read_text())


def _s(seconds: float) -> str:
    """Seconds as a reader wants them: two decimals below 10 s, one below 100, then whole."""
    if seconds < 10:
        return f"{seconds:.2f}"
    if seconds < 100:
        return f"{seconds:.1f}"
    return f"{seconds:,.0f}"


def _ms(value: float) -> str:
    """Milliseconds to about three significant figures."""
    if value < 0.1:
        return f"{value:.3f}"
    if value < 10:
        return f"{value:.2f}"
    return f"{value:.1f}"


def _mib(value: float) -> str:
    return f"{value:,.0f}"


def _machine(data: dict) -> str:
    machine = data.get("machine")
    if isinstance(machine, dict):
        cpus = machine.get("cpus", machine.get("cpu_count"))
        parts = [f"{cpus} CPUs" if cpus else None, f"Python {machine.get('python')}"]
        if machine.get("numpy"):
            parts.append(f"numpy {machine['numpy']}")
        return "*Measured on " + ", ".join(p for p in parts if p) + ".*"
    if "cpus" in data:
        return f"*Measured on {data['cpus']} CPUs.*"
    return ""


def _table(header: list[str], rows: list[list[str]]) -> str:
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    lines += ["| " + " | ".join(row) + " |" for row in rows]
    return "\n".join(lines)


def policies(folder: Path) -> str:
    data = _load(folder, "policies")
    rows = []
    for key, run in data["runs"].items():
        workload, policy = key.split("/")
        rows.append(
            [
                workload,
                policy,
                _s(run["wall_seconds"]),
                f"{run['rounds']:,}",
                f"{_ms(run['policy_ms_median'])} / {_ms(run['policy_ms_p95'])}",
                _mib(run["peak_rss_mib"]),
                f"{run['avg_jct']:,.1f}",
            ]
        )
    header = [
        "workload",
        "policy",
        "wall (s)",
        "rounds",
        "policy ms per round (median / p95)",
        "peak MiB",
        "avg JCT (s)",
    ]
    return _table(header, rows) + "\n\n" + _machine(data)


def command(folder: Path) -> str:
    data = _load(folder, "philly")["workload_6"]
    labels = {
        "run": "the run, after imports",
        "command": "`goodput-sim run` command",
        "command --plot": "`goodput-sim run --plot` (drawing the figure)",
    }
    rows = [[labels.get(name, name), _s(run["cpu_seconds"])] for name, run in data.items()]
    return _table(["goodput on workload-6", "CPU seconds (median of 3 fresh processes)"], rows)


def command_cpu(folder: Path) -> str:
    data = _load(folder, "command")
    rows = [
        [policy, _s(run["cpu_seconds"]), _s(run["bar_seconds"]) if run["bar_seconds"] else "-"]
        for policy, run in data["workload_6"].items()
    ]
    text = _table(["`goodput-sim run` on workload-6", "CPU seconds (median of 3)", "bar"], rows)
    demo = data["demo"]
    text += (
        "\n\nAfter the install step (compiling the kernels, "
        f"{_s(demo['install_cpu_seconds'])} s of CPU) in an empty cache folder, the first "
        "`goodput-sim demo` takes "
        f"{_s(demo['first_cpu_seconds'])} s of CPU and the second {_s(demo['second_cpu_seconds'])}"
        f" s (bar: at most {_s(demo['bar_seconds'])} s more). Load average about "
        f"{data['machine']['load_average']:.1f} while measuring."
    )
    return text + "\n\n" + _machine(data)


def sweep(folder: Path) -> str:
    data = _load(folder, "sweep")
    policies = ", ".join(sorted(data["mean_avg_jct_by_policy"]))
    text = (
        f"A sweep of {data['runs']} runs ({policies} on the Pollux artifact's reference "
        f"workloads, measured profiles; `benchmarks/bench_sweep.py`) with "
        f"`--workers {data['workers']}` takes {_s(data['wall_seconds'])} s of wall time."
    )
    return text + "\n\n" + _machine(data)


def scale(folder: Path) -> str:
    data = _load(folder, "scale")
    rows = [
        [
            f"{data['jobs']:,} jobs over {data['days']} days on {data['cluster']}, goodput",
            _s(data["wall_seconds"]),
            _mib(data["peak_rss_mib"]),
            f"{data['max_active']:,}",
            f"{_ms(data['policy_ms_median'])} / {_ms(data['policy_ms_p95'])}",
            f"{data['policy_time_exponent']:.2f}",
        ]
    ]
    header = [
        "run",
        "wall (s)",
        "peak MiB",
        "most active jobs",
        "policy ms per round (median / p95)",
        "policy time exponent in active jobs",
    ]
    return _table(header, rows) + "\n\n" + _machine(data)


def philly(folder: Path) -> str:
    data = _load(folder, "philly")
    days = sorted(data["days"], key=lambda d: data["days"][d])
    header = ["policy"]
    for day in days:
        jobs = next((runs[day]["jobs"] for runs in data["runs"].values() if day in runs), None)
        span = "whole log" if day == "all" else f"{day} day" + ("s" if day != "1" else "")
        header.append(f"{span} ({jobs:,} jobs)" if jobs else span)
    header.append("exponent in days")
    rows = []
    for policy, runs in data["runs"].items():
        row = [policy]
        for day in days:
            run = runs.get(day)
            row.append(
                f"{_s(run['cpu_seconds'])} s, {_mib(run['peak_mib'])} MiB" if run else "not run"
            )
        row.append(f"{data['exponents'][policy]:.2f}")
        rows.append(row)
    return _table(header, rows) + "\n\n" + _machine(data)


def optimizer(folder: Path) -> str:
    data = _load(folder, "optimizer")
    rows = [
        ["greedy + local search (`goodput`)", _ms(data["greedy_ms_per_round"])],
        [
            "genetic, population 100, 100 generations (`goodput-ga`)",
            _ms(data["genetic_ms_per_round"]),
        ],
    ]
    worse = data["rounds_greedy_worse"]
    text = (
        f"Over {data['rounds']} recorded rounds of `{data['workload']}`, the greedy objective is "
        f"on average {100 * (data['objective_ratio_mean'] - 1):.3f}% above the genetic "
        f"search's, and below it in {worse if worse else 'none'} of the {data['rounds']}."
    )
    return _table(["optimiser", "ms per round"], rows) + "\n\n" + text + "\n\n" + _machine(data)


def heterogeneous(folder: Path) -> str:
    data = _load(folder, "heterogeneous")
    rows = []
    for name, run in data["runs"].items():
        rows.append(
            [
                name,
                run["case"],
                _s(run["wall_seconds"]),
                f"{_ms(run['policy_ms_median'])} / {_ms(run['policy_ms_p95'])} / "
                f"{_ms(run['policy_ms_max'])}",
                f"{run['peak_active_jobs']:,}",
                _mib(run["peak_rss_mib"]),
            ]
        )
    header = [
        "run",
        "case",
        "wall (s)",
        "policy ms per round (median / p95 / max)",
        "most active jobs",
        "peak MiB",
    ]
    return _table(header, rows) + "\n\n" + _machine(data)


def million_rows(folder: Path) -> str:
    data = _load(folder, "million_rows")
    rows = [
        [step, _s(data[step]["wall_seconds"]), _mib(data[step]["peak_rss_mib"])]
        for step in ("generate", "check", "run")
    ]
    bar = data["bars"]["run"]
    text = (
        f"{data['jobs']:,} jobs: generated, checked, and run with `--horizon 60` with its "
        f"results written (bar for the run: {_s(bar['seconds'])} s, {_mib(bar['mib'])} MiB)."
    )
    return text + "\n\n" + _table(["step", "wall (s)", "peak MiB"], rows) + "\n\n" + _machine(data)


def best_config(folder: Path) -> str:
    data = _load(folder, "best_config")
    rows = [
        [case, f"{run['distinct_pairs']:,}", _ms(run["median_ms"]), _ms(run["max_ms"])]
        for case, run in data["cases"].items()
    ]
    text = f"{data['benchmark']}, {data['repeats']} repeats; the bar is {_ms(data['bar_ms'])} ms."
    header = ["pairs", "distinct pairs", "median ms", "max ms"]
    return text + "\n\n" + _table(header, rows) + "\n\n" + _machine(data)


def corrupt_inputs(folder: Path) -> str:
    data = _load(folder, "corrupt_inputs")
    outcomes = data["outcomes"]
    rows = [[name, f"{count:,}"] for name, count in outcomes.items()]
    text = (
        f"{data['cases']:,} cases ({data['table_cases']:,} from the tables of hand-written and "
        f"generated cases, {data['seeded_cases']:,} seeded, seed {data['seed']}), "
        f"{data['runs']:,} runs under {' and '.join(data['policies'])} in "
        f"{_s(data['wall_seconds'])} s with {data['workers']} workers. Outcomes:"
    )
    return text + "\n\n" + _table(["outcome", "runs"], rows) + "\n\n" + _machine(data)


TABLES: dict[str, Callable[[Path], str]] = {
    "policies": policies,
    "command": command,
    "command_cpu": command_cpu,
    "sweep": sweep,
    "scale": scale,
    "philly": philly,
    "optimizer": optimizer,
    "heterogeneous": heterogeneous,
    "million_rows": million_rows,
    "best_config": best_config,
    "corrupt_inputs": corrupt_inputs,
}


def on_files(files, config):
    for name in FIGURES:
        path = _results(config) / name
        if not path.is_file():
            raise PluginError(f"performance page: {name} is missing from benchmarks/results")
        files.append(File.generated(config, f"images/{name}", abs_src_path=str(path)))
    return files


def on_page_markdown(markdown: str, page, config, files) -> str:
    folder = _results(config)

    def table(match: re.Match) -> str:
        name = match.group(1)
        if name not in TABLES:
            raise PluginError(f"{page.file.src_path}: no benchmark table named {name!r}")
        return TABLES[name](folder)

    return MARKER.sub(table, markdown)


def on_serve(server, config, builder):
    server.watch(str(_results(config)))
    return server
