"""`goodput-sim plot RESULTS --kind ...`: figures redrawn from saved results alone."""

from __future__ import annotations

from pathlib import Path

import click

from goodput_sim.cli import force_option, main, writable_file, writing
from goodput_sim.cli.numbers import Float
from goodput_sim.errors import InputError
from goodput_sim.results.figures import RUN_KINDS, SWEEP_KINDS

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
@click.option("--load", type=Float(), default=None, help="The load a sweep's bars figure draws.")
@click.option(
    "-o",
    "--output",
    type=click.Path(path_type=Path),
    default=None,
    help="PNG, SVG or PDF file (default: RESULTS/<kind>.png, redrawn each time).",
)
@force_option
def plot_cmd(
    results: Path,
    kind: str | None,
    policy: str | None,
    jobs: str | None,
    load: float | None,
    output: Path | None,
    force: bool,
) -> None:
    """Redraw a figure from a run, comparison or sweep results folder, without rerunning."""
    from goodput_sim.results.figures import draw
    from goodput_sim.results.plots import save_figure
    from goodput_sim.results.report import load_results

    data = load_results(results)
    kind = kind or ("load" if data.kind == "sweep" else "cdf")
    if output is not None and output.suffix.lower() not in FORMATS:
        raise InputError("--output", f"expected a {', '.join(FORMATS)} file, got {output.name!r}")
    if output is None:  # a default output never blocks: the results' own figure, redrawn
        output = results / f"{kind}.png"
    else:
        writable_file(output, force=force)
    chosen = [j.strip() for j in (jobs or "").split(",") if j.strip()]

    def started() -> None:  # drawing takes seconds: say so, once the request is known good
        click.echo(f"drawing the {kind} figure of {results} ...", err=True)

    figure = draw(data, kind, policy, chosen, load, started)
    with writing(output):
        save_figure(figure, output)
    click.echo(f"wrote {output}")
