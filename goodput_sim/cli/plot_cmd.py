"""`goodput-sim plot RESULTS --kind ...`: figures redrawn from saved results alone."""

from __future__ import annotations

from pathlib import Path

import click

from goodput_sim.cli import main
from goodput_sim.errors import InputError

RUN_KINDS = ("cdf", "bars", "apps", "types", "utilization", "nodes", "timeline", "jobs")
SWEEP_KINDS = ("load", "bars")
FORMATS = (".png", ".svg", ".pdf")  # what matplotlib writes that a paper takes


@main.command("plot")
@click.argument("results", type=click.Path(path_type=Path))
@click.option(
    "--kind",
    type=click.Choice(sorted({*RUN_KINDS, *SWEEP_KINDS})),
    default=None,
    help="cdf, bars (with 95% CIs), apps, types (GPU-hours per GPU type), utilization, nodes "
    "(cluster size), timeline or jobs for a run or comparison; "
    "load or bars for a sweep [default: cdf, or load for a sweep].",
)
@click.option("--policy", default=None, help="The policy a timeline or jobs figure draws.")
@click.option(
    "--jobs",
    default=None,
    help="Comma-separated job names for --kind jobs [default: the three longest].",
)
@click.option("--load", type=float, default=None, help="The load a sweep's bars figure draws.")
@click.option(
    "-o",
    "--output",
    type=click.Path(path_type=Path),
    default=None,
    help="PNG, SVG or PDF file (default: RESULTS/<kind>.png).",
)
def plot_cmd(
    results: Path,
    kind: str | None,
    policy: str | None,
    jobs: str | None,
    load: float | None,
    output: Path | None,
) -> None:
    """Redraw a figure from a run, comparison or sweep results folder, without rerunning."""
    from goodput_sim import plots
    from goodput_sim.report import load_results, policy_table

    data = load_results(results)
    kind = kind or ("load" if data.kind == "sweep" else "cdf")
    allowed = SWEEP_KINDS if data.kind == "sweep" else RUN_KINDS
    if kind not in allowed:
        raise InputError("--kind", f"{kind} does not apply to a {data.kind}; use {allowed}")
    output = output or results / f"{kind}.png"
    if output.suffix.lower() not in FORMATS:
        raise InputError("--output", f"expected a {', '.join(FORMATS)} file, got {output.name!r}")
    caption = data.caption()
    table = policy_table(data)
    if kind == "load":
        fig = plots.jct_against_load(table, caption)
    elif kind == "bars":
        loads = sorted(table["load"].unique())
        if load is not None:
            if load not in loads:
                raise InputError("--load", f"no runs at load {load:g}; loads: {loads}")
            table = table[table["load"] == load]
        elif len(loads) > 1:
            raise InputError(
                "--kind", f"bars draws one load; pick one with --load (loads: {loads})"
            )
        fig = plots.interval_bars(table, caption=caption)
    elif kind == "cdf":
        fig = plots.jct_cdf(data.jobs, caption=caption)
    elif kind == "apps":
        fig = plots.jct_by_application(data.jobs, caption)
    elif kind == "types":
        summaries = {n: m["summary"] for n, m in data.manifests.items()}
        if not all("type_moves" in s for s in summaries.values()):
            raise InputError("--kind", "types needs runs on profiles by GPU type")
        fig = plots.gpu_hours_by_type(summaries, caption)
    else:
        if not data.rounds:
            raise InputError(results, "has no rounds.csv to draw over time")
        cluster = next(iter(data.manifests.values()))["cluster"]
        if kind == "utilization":
            fig = plots.utilization_over_time(data.rounds, cluster["total_gpus"], caption)
        elif kind == "nodes":
            fig = plots.cluster_size_over_time(data.rounds, cluster["gpus_per_node"], caption)
        else:
            name = policy or next(iter(data.rounds))
            if name not in data.rounds:
                raise InputError("--policy", f"no results of {name!r}; found {sorted(data.rounds)}")
            if kind == "timeline":
                fig = plots.allocation_timeline(data.rounds[name], name, caption)
            else:
                from goodput_sim.html_report import longest_jobs

                names = list(data.jobs[name]["name"])
                chosen = [j.strip() for j in (jobs or "").split(",") if j.strip()]
                chosen = chosen or longest_jobs(data.jobs[name])  # as the HTML report picks
                unknown = sorted(set(chosen) - set(names))
                if unknown:
                    shown = ", ".join(names[:10]) + (", ..." if len(names) > 10 else "")
                    raise InputError(
                        "--jobs", f"unknown job(s) {', '.join(unknown)}; the run has {shown}"
                    )
                fig = plots.job_traces(data.rounds[name], chosen, f"{name}, {caption}")
    plots.save_figure(fig, output)
    click.echo(f"wrote {output}")
