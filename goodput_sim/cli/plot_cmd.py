"""`goodput-sim plot RESULTS --kind ...`: figures redrawn from saved results alone."""

from __future__ import annotations

import json
from pathlib import Path

import click
import pandas as pd

from goodput_sim.cli import main
from goodput_sim.errors import InputError

KINDS = ("cdf", "bars", "apps", "utilization", "timeline")


def _runs(results: Path) -> dict[str, Path]:
    """Policy -> run folder, for a run folder or a compare folder of them."""
    if (results / "manifest.json").is_file():
        folders = [results]
    else:
        folders = sorted(p.parent for p in results.glob("*/manifest.json"))
    if not folders:
        raise InputError(results, "holds no run results (no manifest.json in it or below it)")
    runs = {}
    for folder in folders:
        try:
            manifest = json.loads((folder / "manifest.json").read_text())
            runs[manifest["policy"]["name"]] = folder
        except (OSError, ValueError, KeyError, TypeError):
            raise InputError(
                folder / "manifest.json", "is not a readable results manifest"
            ) from None
    return runs


@main.command("plot")
@click.argument("results", type=click.Path(path_type=Path))
@click.option("--kind", type=click.Choice(KINDS), default="cdf", show_default=True)
@click.option(
    "-o",
    "--output",
    type=click.Path(path_type=Path),
    default=None,
    help="PNG or SVG file (default: RESULTS/<kind>.png).",
)
def plot_cmd(results: Path, kind: str, output: Path | None) -> None:
    """Redraw a figure from a run or compare results folder, without rerunning anything."""
    from goodput_sim import plots

    runs = _runs(results)
    manifests = {n: json.loads((f / "manifest.json").read_text()) for n, f in runs.items()}
    caption = plots._caption(manifests)
    output = output or results / f"{kind}.png"
    if output.suffix.lower() not in (".png", ".svg"):
        raise InputError("--output", f"expected a .png or .svg file, got {output.name!r}")
    jobs = {n: pd.read_csv(f / "jobs.csv") for n, f in runs.items()}
    if kind == "cdf":
        fig = plots.jct_cdf(jobs)
        fig.axes[0].set_title(f"JCT CDF: {caption}")
    elif kind == "bars":
        summaries = {n: m["summary"] for n, m in manifests.items()}
        for summary in summaries.values():
            summary["avg_jct"] = (
                summary["avg_jct"] if summary["avg_jct"] is not None else float("nan")
            )
        fig = plots.avg_jct_bars(summaries)
        fig.axes[0].set_title(f"Average JCT: {caption}")
    elif kind == "apps":
        fig = plots.jct_by_application(jobs, caption)
    else:
        rounds = {n: pd.read_csv(f / "rounds.csv", keep_default_na=False) for n, f in runs.items()}
        if kind == "utilization":
            total = next(iter(manifests.values()))["cluster"]["total_gpus"]
            fig = plots.utilization_over_time(rounds, total, caption)
        else:
            if len(rounds) != 1:
                raise InputError("--kind", "timeline draws one run; give a run folder")
            ((policy, table),) = rounds.items()
            fig = plots.allocation_timeline(table, policy, caption)
    fig.savefig(output, dpi=120, metadata={"Software": None} if output.suffix == ".png" else None)
    click.echo(f"wrote {output}")
