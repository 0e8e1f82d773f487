"""`goodput-sim report RESULTS`: statistics with confidence intervals, the claim check, and a
self-contained HTML report."""

from __future__ import annotations

import json
from pathlib import Path

import click

from goodput_sim import jsonio
from goodput_sim.cli import force_option, main, writable_file, writing
from goodput_sim.errors import InputError


@main.command("report")
@click.argument("results", type=click.Path(path_type=Path))
@click.option(
    "-o",
    "--output",
    type=click.Path(path_type=Path),
    default=None,
    help="Also write a self-contained HTML report (figures, tables, claim check, manifests).",
)
@click.option(
    "--format", "fmt", type=click.Choice(["text", "json"]), default="text", show_default=True
)
@click.option(
    "--jobs",
    default=None,
    help="Comma-separated job names whose GPUs and batch the HTML report traces "
    "(default: goodput's three longest jobs).",
)
@force_option
def report_cmd(results: Path, output: Path | None, fmt: str, jobs: str | None, force: bool) -> None:
    """Per load: each policy's mean average JCT with a 95% bootstrap interval (across the
    workloads and seeds of a sweep, or the jobs of a comparison), p95 JCT, makespan and
    utilisation; then goodput's reduction against each baseline beside the paper's 37-50%."""
    from goodput_sim.api import baselines
    from goodput_sim.results.report import (
        claim_note,
        claim_table,
        load_results,
        policy_table,
        report_text,
    )

    if output is not None and output.suffix.lower() not in (".html", ".htm"):
        raise InputError("--output", f"expected an .html file, got {output.name!r}")
    if output is not None:
        writable_file(output, force=force)
    data = load_results(results)
    if fmt == "json":
        claim = claim_table(data, baselines)
        body = {
            "kind": data.kind,
            "caption": data.caption(),
            "policies": json.loads(policy_table(data).to_json(orient="records")),
            "claim": json.loads(claim.to_json(orient="records")) if len(claim) else [],
            "claim_note": claim_note(data, baselines),
        }
        click.echo(jsonio.dumps(body))
    else:
        click.echo(report_text(data, baselines))
    if output is not None:
        from goodput_sim.results.html_report import write_html

        chosen = [j.strip() for j in jobs.split(",") if j.strip()] if jobs else None
        click.echo(f"drawing the figures of {output} ...", err=True)  # seconds, not silence
        with writing(output):
            write_html(data, output, baselines, chosen)
        click.echo(f"\nwrote {output}", err=fmt == "json")
