"""`goodput-sim experiment ...`: named experiments with their reports."""

from __future__ import annotations

import math
from pathlib import Path

import click

from goodput_sim import jsonio
from goodput_sim.cli import main, profiles_option
from goodput_sim.errors import InputError


@main.group("experiment")
def experiment_group() -> None:
    """Named experiments: a grid of runs and a report with confidence intervals."""


def _names(text: str, known, option: str) -> tuple[str, ...]:
    names = tuple(n.strip() for n in text.split(",") if n.strip())
    unknown = [n for n in names if n not in known]
    if not names or unknown:
        raise InputError(option, f"expected names from {', '.join(known)}, got {text!r}")
    return names


def _hours(seconds: float) -> str:
    return "-" if math.isnan(seconds) else f"{seconds / 3600:.2f}"


@experiment_group.command("batch-rules")
@click.option(
    "--workloads",
    multiple=True,
    type=click.Path(path_type=Path),
    help="Workload CSVs or folders of them (repeatable; default: the bundled workload).",
)
@profiles_option
@click.option("--cluster", default="16x4", show_default=True, help="NODESxGPUS or a YAML file.")
@click.option("--agents", default=None, help="Comma-separated agent labels (default: all).")
@click.option("--schedulers", default=None, help="Comma-separated schedulers (default: all).")
@click.option("--workers", type=click.IntRange(1, 64), default=2, show_default=True)
@click.option(
    "--out",
    type=click.Path(path_type=Path),
    default=Path("results/batch-rules"),
    show_default=True,
)
@click.option(
    "--format", "fmt", type=click.Choice(["table", "json"]), default="table", show_default=True
)
def batch_rules_cmd(workloads, profiles, cluster, agents, schedulers, workers, out, fmt) -> None:
    """Batch agents x schedulers on a set of workloads: average JCT with 95% bootstrap
    intervals across workloads, GPU-hours, examples, and each agent against the fixed one."""
    from goodput_sim.api import bundled_workload
    from goodput_sim.experiments.batch_rules import AGENTS, SCHEDULERS, run_batch_rules

    files: list[Path] = []
    for path in workloads or (bundled_workload(),):
        files += sorted(path.glob("*.csv")) if path.is_dir() else [path]
    if not files:
        raise InputError("--workloads", "no workload CSV found")
    result = run_batch_rules(
        files,
        out,
        profiles,
        cluster,
        workers,
        _names(agents, list(AGENTS), "--agents") if agents else tuple(AGENTS),
        _names(schedulers, SCHEDULERS, "--schedulers") if schedulers else SCHEDULERS,
        progress=fmt == "table",
    )
    if fmt == "json":
        click.echo(jsonio.dumps(result.as_json(), sort_keys=False))
        return
    report = result.report
    click.echo(
        f"{len(result.workloads)} workload(s), cluster {cluster}; average JCT in hours with a 95% "
        "bootstrap interval across workloads"
    )
    click.echo(
        f"{'scheduler':<11} {'agent':<17} {'avg JCT':>8} {'95% CI':>13} {'GPU-h':>8} "
        f"{'examples':>10} {'vs fixed':>9} {'95% CI':>15}"
    )
    for row in report.itertuples():
        ci = f"{_hours(row.avg_jct_ci_low_s)}-{_hours(row.avg_jct_ci_high_s)}"
        ratio = getattr(row, "jct_vs_fixed", float("nan"))
        low = getattr(row, "jct_vs_fixed_ci_low", float("nan"))
        high = getattr(row, "jct_vs_fixed_ci_high", float("nan"))
        versus = "-" if math.isnan(ratio) else f"{ratio - 1:+.1%}"
        versus_ci = "-" if math.isnan(low) else f"{low - 1:+.1%}..{high - 1:+.1%}"
        click.echo(
            f"{row.scheduler:<11} {row.agent:<17} {_hours(row.avg_jct_s):>8} {ci:>13} "
            f"{row.gpu_hours:>8.1f} {row.examples:>10.3g} {versus:>9} {versus_ci:>15}"
        )
    click.echo(f"\nreport.csv, report.json, batch_rules.png and every run: {out}")
