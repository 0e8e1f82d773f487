"""`goodput-sim experiment ...`: named experiments with their reports."""

from __future__ import annotations

import math
from pathlib import Path

import click

from goodput_sim import jsonio
from goodput_sim.cli import main, profiles_option
from goodput_sim.cli.numbers import Int
from goodput_sim.errors import InputError
from goodput_sim.plugins import did_you_mean
from goodput_sim.usertext import parse_float, parse_int

report_folder = click.option(
    "-o",
    "--out",
    type=click.Path(path_type=Path),
    default=None,
    help="Folder of the report [default: RESULTS/report].",
)
"""The ``-o/--out`` option of the reports drawn from a sweep's results."""


@main.group("experiment")
def experiment_group() -> None:
    """Named experiments: a grid of runs and a report with confidence intervals."""


def _names(text: str, known, option: str) -> tuple[str, ...]:
    names = tuple(n.strip() for n in text.split(",") if n.strip())
    unknown = [n for n in names if n not in known]
    if not names or unknown:
        hint = did_you_mean(unknown[0], known) if unknown else ""
        raise InputError(option, f"expected names from {', '.join(known)}, got {text!r}{hint}")
    return names


def _policies(text: str) -> tuple[str, ...]:
    """``--policies``: comma-separated names of registered policies (plugins' too) or aliases."""
    from goodput_sim.api import check_policies, parse_policies

    return tuple(check_policies(parse_policies(text)))


def _versus(row, key: str) -> str:
    """``+x% (lo..hi)`` of a report row's ratio to the fixed agent, ``-`` where absent."""
    ratio = getattr(row, f"{key}_vs_fixed", float("nan"))
    low = getattr(row, f"{key}_vs_fixed_ci_low", float("nan"))
    high = getattr(row, f"{key}_vs_fixed_ci_high", float("nan"))
    if math.isnan(ratio):
        return "-"
    interval = "(n<5)" if math.isnan(low) else f"({low - 1:+.1%}..{high - 1:+.1%})"
    return f"{ratio - 1:+.1%} {interval}"


def _seeds(text: str) -> tuple[int, ...]:
    """``--seeds``: comma-separated non-negative integers."""
    try:
        seeds = tuple(parse_int(s) for s in text.split(",") if s.strip())
    except ValueError:
        raise InputError("--seeds", f"expected comma-separated integers, got {text!r}") from None
    if not seeds or min(seeds) < 0:
        raise InputError("--seeds", f"expected non-negative integers, got {text!r}")
    return seeds


def _number(value: float) -> str:
    """A value to two decimals, ``-`` when it is not a number."""
    return "-" if math.isnan(value) else f"{value:.2f}"


def _hours(seconds: float) -> str:
    return "-" if math.isnan(seconds) else f"{seconds / 3600:.2f}"


workloads_option = click.option(
    "--workloads",
    multiple=True,
    type=click.Path(path_type=Path),
    help="Workload CSVs or folders of them (repeatable; default: the bundled workload).",
)
cluster_option = click.option(
    "--cluster", default="16x4", show_default=True, help="NODESxGPUS or a YAML file."
)


def _workload_files(workloads: tuple[Path, ...]) -> list[Path]:
    """``--workloads``: the CSVs given and those in the folders given (the bundled one if
    none)."""
    from goodput_sim.api import bundled_workload

    files: list[Path] = []
    for path in workloads or (bundled_workload(),):
        files += sorted(path.glob("*.csv")) if path.is_dir() else [path]
    if not files:
        raise InputError("--workloads", "no workload CSV found")
    return files


@experiment_group.command("batch-rules")
@workloads_option
@profiles_option
@cluster_option
@click.option("--agents", default=None, help="Comma-separated agent labels (default: all).")
@click.option("--schedulers", default=None, help="Comma-separated schedulers (default: all).")
@click.option("--workers", type=Int(1, 64), default=2, show_default=True)
@click.option(
    "--out",
    type=click.Path(path_type=Path),
    default=Path("results/batch-rules"),
    show_default=True,
)
@click.option(
    "--seeds",
    default="0,1,2",
    show_default=True,
    help="Comma-separated seeds: 0 replays each workload, others resample it.",
)
@click.option(
    "--progress",
    "models",
    default="noise,lr-aware",
    show_default=True,
    help="Comma-separated progress models to run under.",
)
@click.option(
    "--tail-geometry",
    "geometries",
    default="examples,steps",
    show_default=True,
    help="Comma-separated tail geometries (steps: the tail-weighted arms and the fixed batch "
    "again in seed 004's geometry, under lr-aware).",
)
@click.option(
    "--format", "fmt", type=click.Choice(["table", "json"]), default="table", show_default=True
)
def batch_rules_cmd(
    workloads, profiles, cluster, agents, schedulers, workers, out, seeds, models, geometries, fmt
) -> None:
    """Batch agents x schedulers on a set of workloads (replayed and resampled), under both
    progress models: average JCT with 95% bootstrap intervals, GPU-hours, and each agent
    against the fixed one in JCT and in seed 004's own objective (learning-rate-weighted
    noise; final loss at the static run's rate and with the rate tuned per arm), with paired
    intervals, on all jobs and on the jobs the agent changes; the tail-weighted arms also in
    seed 004's geometry (--tail-geometry)."""
    from goodput_sim.experiments.batch_rules import (
        AGENTS,
        GEOMETRIES,
        PROGRESS_MODELS,
        SCHEDULERS,
        run_batch_rules,
    )

    files = _workload_files(workloads)
    result = run_batch_rules(
        files,
        out,
        profiles,
        cluster,
        workers,
        _names(agents, list(AGENTS), "--agents") if agents else tuple(AGENTS),
        _names(schedulers, SCHEDULERS, "--schedulers") if schedulers else SCHEDULERS,
        progress=fmt == "table",
        seeds=_seeds(seeds),
        models=_names(models, list(PROGRESS_MODELS), "--progress"),
        geometries=_names(geometries, list(GEOMETRIES), "--tail-geometry"),
    )
    if fmt == "json":
        click.echo(jsonio.dumps(result.as_json(), sort_keys=False))
        return
    report = result.report
    click.echo(
        f"{len(result.workloads)} workload(s) x seeds {seeds}, cluster {cluster}. Against the "
        "fixed batch under the same scheduler (paired by workload and seed, 95% bootstrap "
        "interval): average JCT, and seed 004's objective per job relative to its static "
        "batch: LR-weighted noise (lr-noise) and final loss at the static run's rate (loss) "
        "and with the rate tuned per arm (tuned loss), on all jobs and on the jobs the agent "
        "changes (changed)."
    )
    keys = ("jct", "lr_noise", "final_loss", "final_loss_tuned", "final_loss_tuned_changed")
    heads = ("JCT", "lr-noise", "loss", "tuned loss", "changed: tuned loss")
    click.echo(
        f"{'progress':<9} {'geometry':<9} {'scheduler':<11} {'agent':<16} {'runs':>4} "
        f"{'avg JCT h':>9} " + " ".join(f"{h + ' vs fixed':>27}" for h in heads)
    )
    for row in report.itertuples():
        cells = " ".join(f"{_versus(row, key):>27}" for key in keys)
        click.echo(
            f"{row.progress:<9} {row.geometry:<9} {row.scheduler:<11} {row.agent:<16} "
            f"{row.runs:>4} {_hours(row.avg_jct_s):>9} {cells}"
        )
    click.echo(f"\nreport.csv, report.json, batch_rules.png and every run: {out}")


@experiment_group.command("limited-adaptivity")
@workloads_option
@profiles_option
@cluster_option
@click.option("--policies", default="sia,goodput,gavel", show_default=True)
@click.option(
    "--category",
    type=click.Choice(["rigid", "scale-gpus"]),
    default="rigid",
    show_default=True,
    help="The category given to a share of the jobs.",
)
@click.option("--shares", default="0,0.25,0.5,0.75,1", show_default=True)
@click.option("--seed", type=Int(0), default=0, show_default=True)
@click.option("--workers", type=Int(1, 64), default=2, show_default=True)
@click.option(
    "--out",
    type=click.Path(path_type=Path),
    default=Path("results/limited-adaptivity"),
    show_default=True,
)
def limited_adaptivity_cmd(
    workloads, profiles, cluster, policies, category, shares, seed, workers, out
) -> None:
    """Average JCT and makespan of each policy as a growing share of jobs is rigid (or
    strong-scaling), the Sia paper's limited-adaptivity experiment."""
    from goodput_sim.api import checked_output_path
    from goodput_sim.experiments.limited_adaptivity import run_limited_adaptivity

    out = checked_output_path(out, "--out")
    if out.exists() and not out.is_dir():
        raise InputError("--out", f"{out} is a file, expected a results folder")
    files = _workload_files(workloads)
    try:
        values = tuple(parse_float(s) for s in shares.split(",") if s.strip())
    except ValueError:
        values = ()
    if not values or any(not 0 <= v <= 1 for v in values):
        raise InputError("--shares", f"expected comma-separated shares in [0, 1], got {shares!r}")
    report = run_limited_adaptivity(
        files,
        out,
        profiles,
        cluster,
        _policies(policies),
        category,
        tuple(sorted(set(values))),
        seed,
        workers,
    )
    click.echo(
        f"{len(files)} workload(s), cluster {cluster}, {category} share drawn with seed {seed}"
    )
    wide = max([10, *(len(str(name)) for name in report["policy"])])
    click.echo(
        f"{'policy':<{wide}} {'share':>5} {'avg JCT h':>9} {'vs 0%':>7} {'makespan h':>10} "
        f"{'vs 0%':>7}"
    )
    for row in report.itertuples():  # '-': no finished job, or no share 0 to compare with
        click.echo(
            f"{row.policy:<{wide}} {row.share:>5.0%} {_number(row.avg_jct_h):>9} "
            f"{_number(row.avg_jct_h_vs_adaptive):>7} {_number(row.makespan_h):>10} "
            f"{_number(row.makespan_h_vs_adaptive):>7}"
        )
    click.echo(f"\nreport.csv and every run: {out}")


@experiment_group.command("cost-jct")
@click.argument("results", type=click.Path(path_type=Path))
@report_folder
@click.option(
    "--figure",
    "figures",
    multiple=True,
    default=("cost_jct.png",),
    show_default=True,
    help="Figure file (repeatable): .png, .pdf or .svg by suffix; a bare name goes in --out.",
)
def cost_jct_cmd(results: Path, out: Path | None, figures: tuple[str, ...]) -> None:
    """Fixed clusters against autoscaling rules from the sweep of an experiment file with
    variants (configs/experiment-cost-jct.yaml): node-hours and average JCT with 95% bootstrap
    intervals over workload x seed samples, each rule against each fixed size paired by
    (workload, seed), and against the fixed clusters at equal node-hours (interpolated)."""
    from goodput_sim.experiments.cost_jct import write_cost_jct

    report, written = write_cost_jct(results, out, figures)
    click.echo(report.markdown(), nl=False)
    where = out if out is not None else results / "report"
    click.echo(f"\ncost_jct_*.csv and cost_jct.md: {where}")
    for path in written:
        click.echo(f"figure: {path}")


@experiment_group.command("failures")
@click.argument("results", type=click.Path(path_type=Path))
@report_folder
@click.option(
    "--figure",
    default="failures.png",
    show_default=True,
    help="Figure file: .png, .pdf or .svg by suffix; a bare name goes in --out.",
)
def failures_cmd(results: Path, out: Path | None, figure: str) -> None:
    """What failures cost each policy, from the sweep of an experiment file over failure
    settings (configs/experiment-failures.yaml): average JCT per failure condition and its
    slowdown against the same workload x seed samples with nothing failing, with 95% paired
    bootstrap intervals, beside the work lost and the node failures per run."""
    from goodput_sim.experiments.failure_cost import markdown, write_failure_report

    table, written = write_failure_report(results, out, figure)
    click.echo(markdown(table), nl=False)
    where = out if out is not None else results / "report"
    click.echo(f"\nfailures.csv and failures.md: {where}")
    for path in written:
        click.echo(f"figure: {path}")


@experiment_group.command("pollux-sia")
@click.argument("results", type=click.Path(path_type=Path))
def pollux_sia_cmd(results: Path) -> None:
    """Type-blind goodput against sia, from the sweep of configs/experiment-pollux-sia.yaml:
    each goodput configuration's average JCT over sia's per workload, and over all of them
    (the ratio of the mean average JCTs), as Markdown."""
    from goodput_sim.experiments.pollux_sia import markdown, pollux_sia_report

    click.echo(markdown(pollux_sia_report(results)), nl=False)
