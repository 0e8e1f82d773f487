"""`goodput-sim workload ...`: derive Philly statistics, generate and check workload CSVs."""

from __future__ import annotations

import math
from pathlib import Path

import click

from goodput_sim.cli import force_option, main, writable_file
from goodput_sim.cli.numbers import Float, Int
from goodput_sim.errors import InputError
from goodput_sim.inputs import workload as wl
from goodput_sim.results.saved import MAX_SEED


@main.group("workload")
def workload() -> None:
    """Derive Philly statistics, generate workloads and validate workload CSVs."""


@workload.command("stats")
@click.argument("philly_csv", type=click.Path(path_type=Path))
@click.option(
    "-o",
    "--output",
    type=click.Path(path_type=Path),
    required=True,
    help="Statistics YAML to write (for `workload generate --stats`).",
)
@force_option
def stats_cmd(philly_csv: Path, output: Path, force: bool) -> None:
    """Derive arrival and job-size statistics from the raw Philly trace (philly.csv)."""
    writable_file(output, force=force)
    stats = wl.derive_philly_stats(philly_csv)
    wl.write_philly_stats(stats, output)
    window = stats["window"]
    fractions = stats["gpu_time_buckets"]["window"]["fractions"]
    mix = " / ".join(f"{b} {100 * f:.1f}%" for b, f in fractions.items())
    hours = stats["provenance"]["window_hours"]
    click.echo(f"wrote {output}: {window['rows']} jobs in the {hours}-hour window; {mix}")


@workload.command("generate")
@click.option(
    "--preset",
    type=click.Choice(sorted(wl.PRESETS)),
    default="default",
    show_default=True,
    help="Named defaults; the options below override them.",
)
@click.option("--jobs", type=Int(1, wl.MAX_GENERATED_JOBS), help="Number of jobs.")
@click.option(
    "--load",
    type=Float(0.01, 100.0),
    default=1.0,
    show_default=True,
    help="Arrival rate relative to the preset's, in the same window (jobs x load).",
)
@click.option(
    "--hours",
    type=Int(1, wl.MAX_GENERATED_HOURS),
    help="Arrival span in hours (within one day's pattern).",
)
@click.option(
    "--days",
    type=Int(1, wl.MAX_GENERATED_HOURS // 24),
    help="Arrival span in days (full 24-hour pattern per day).",
)
@click.option("--seed", type=Int(0, MAX_SEED), help="Random seed.")
@click.option(
    "--realistic",
    is_flag=True,
    default=None,
    help="Philly GPU requests and batch = M0 x GPUs instead of TunedJobs.",
)
@click.option(
    "--stats",
    "stats_path",
    type=click.Path(path_type=Path),
    help="Philly statistics YAML [default: bundled traces/philly_stats.yaml].",
)
@click.option(
    "-o", "--output", type=click.Path(path_type=Path), required=True, help="Workload CSV to write."
)
@force_option
def generate_cmd(
    preset: str,
    jobs: int | None,
    load: float,
    hours: int | None,
    days: int | None,
    seed: int | None,
    realistic: bool | None,
    stats_path: Path | None,
    output: Path,
    force: bool,
) -> None:
    """Generate a workload CSV from Philly statistics; ``--load`` scales the arrival rate in the
    same window (load 1.0 is the preset, as the Pollux paper's 0.5x-2x load experiment)."""
    if not math.isfinite(load):
        raise InputError("--load", f"{load} is not a number in [0.01, 100]")
    writable_file(output, force=force)
    if hours is not None and days is not None:
        raise InputError(None, "give --hours or --days, not both", "--hours/--days")
    base = wl.PRESETS[preset]
    if hours is None and days is None:  # span from the preset unless one is given
        hours, days = base.hours, base.days
    stats = wl.load_philly_stats(stats_path or wl.bundled_path("philly_stats.yaml"))
    df = wl.generate_workload(
        stats,
        num_jobs=max(1, round(load * (base.num_jobs if jobs is None else jobs))),
        hours=base.hours if hours is None else hours,
        seed=base.seed if seed is None else seed,
        days=days,
        realistic=base.realistic if realistic is None else realistic,
    )
    wl.write_workload(df, output)
    click.echo(f"wrote {output}: {wl.summarize_workload(df)}")


@workload.command("check")
@click.argument("file", type=click.Path(path_type=Path))
@click.option("--max-gpus", type=Int(), help="Reject jobs asking for more GPUs than this.")
def check_cmd(file: Path, max_gpus: int | None) -> None:
    """Validate a workload CSV and print a one-line summary (jobs, span, mix)."""
    df = wl.load_workload(file, applications=wl.TUNED_CONFIGURATIONS, max_gpus=max_gpus)
    click.echo(f"{file}: {wl.summarize_workload(df)}")


@workload.command("philly")
@click.argument("path", required=False, type=click.Path(path_type=Path))
@click.option("--start", help="First submission day (e.g. 2017-10-02) [default: the log's first].")
@click.option("--days", type=Float(), help="Days of submissions to keep [default: all].")
@click.option(
    "--realistic", is_flag=True, help="The log's GPU counts, batch = M0 x GPUs (not TunedJobs)."
)
@click.option("--max-gpus", type=Int(1), help="With --realistic, cap GPU counts.")
@click.option("--seed", type=Int(0), default=0, show_default=True, help="Seed of the draws.")
@click.option(
    "-o", "--output", type=click.Path(path_type=Path), required=True, help="Workload CSV to write."
)
@force_option
def philly_cmd(
    path: Path | None,
    start: str | None,
    days: float | None,
    realistic: bool,
    max_gpus: int | None,
    seed: int,
    output: Path,
    force: bool,
) -> None:
    """Replay the real Philly log: its jobs' arrivals (seconds after --start), GPUs and
    durations, mapped to applications by the generator's gpu-time rule. PATH is the Pollux
    artifact's philly.csv (the default, when present beside the checkout) or a cluster_job_log
    JSON file of the public Philly release."""
    from goodput_sim.inputs import philly

    writable_file(output, force=force)
    if path is None:
        path = philly.reference_log()
        if path is None:
            raise InputError(
                None,
                "give the log's PATH (the default, the Pollux artifact's traces/philly.csv at "
                f"../{philly.REFERENCE_LOG} beside a source checkout, is not there)",
                "PATH",
            )
    df = philly.philly_workload(
        philly.read_philly_log(path), start, days, realistic, seed, max_gpus
    )
    output.parent.mkdir(parents=True, exist_ok=True)
    df.to_csv(output, index=False)
    click.echo(f"wrote {output}: {wl.summarize_workload(df)}")


@workload.command("categorize")
@click.argument("file", type=click.Path(path_type=Path))
@click.option(
    "--rigid",
    type=Float(0, 1),
    default=0.0,
    show_default=True,
    help="Share of jobs made rigid (their GPUs and batch fixed).",
)
@click.option(
    "--scale-gpus",
    "scale_gpus",
    type=Float(0, 1),
    default=0.0,
    show_default=True,
    help="Share of jobs made strong-scaling (batch fixed, GPUs chosen up to their request).",
)
@click.option("--seed", type=Int(0), default=0, show_default=True, help="Seed of the draws.")
@click.option(
    "-o", "--output", type=click.Path(path_type=Path), required=True, help="Workload CSV to write."
)
@force_option
def categorize_cmd(
    file: Path, rigid: float, scale_gpus: float, seed: int, output: Path, force: bool
) -> None:
    """Give each job of a workload a category, drawn i.i.d. with the given shares (the rest
    adaptive), as the Sia artifact made its limited-adaptivity workloads."""
    writable_file(output, force=force)
    df = wl.categorize(wl.load_workload(file), {"rigid": rigid, "scale-gpus": scale_gpus}, seed)
    wl.write_workload(df, output)
    counts = df[wl.CATEGORY_COLUMN].value_counts().sort_index()
    click.echo(f"wrote {output}: " + " ".join(f"{k}={v}" for k, v in counts.items()))
