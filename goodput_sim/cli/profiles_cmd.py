"""`goodput-sim profiles fit|check|show`: make, check and list application profiles."""

from __future__ import annotations

import json
from pathlib import Path

import click
import yaml

from goodput_sim.api import progress_bar
from goodput_sim.cli import main
from goodput_sim.errors import InputError
from goodput_sim.profiles import load_profiles
from goodput_sim.profiles.fit import check_profile, fit_profile, fit_typed_profile
from goodput_sim.profiles.measured import load_measured_profiles
from goodput_sim.profiles.typed import is_typed_measurement_folder, load_typed_measured_profiles

FORMAT = click.option(
    "--format",
    "fmt",
    type=click.Choice(["table", "json"]),
    default="table",
    show_default=True,
    help="Output format.",
)


@main.group("profiles")
def profiles() -> None:
    """Application profiles: fit them from measurements, check them, list them."""


@profiles.command("fit")
@click.argument("folder", type=click.Path(path_type=Path))
@click.option(
    "-o",
    "--out",
    type=click.Path(path_type=Path),
    required=True,
    help="Output folder for <app>.yaml (the bundled ones are in traces/profiles/).",
)
@click.option("--force", is_flag=True, help="Replace profiles already in --out.")
@click.option("--quiet", is_flag=True, help="No progress bar.")
def fit(folder: Path, out: Path, force: bool, quiet: bool) -> None:
    """Fit one parametric YAML profile per application in measurement FOLDER; a folder
    measured per GPU type (placements-<type>.csv, the Sia artifact's layout) gives one profile
    per application with a section per type."""
    typed = folder.is_dir() and is_typed_measurement_folder(folder)
    measured_profiles = (
        load_typed_measured_profiles(folder) if typed else load_measured_profiles(folder)
    )
    clashes = [n for n in measured_profiles if (out / f"{n}.yaml").exists()]
    if clashes and not force:
        raise InputError(
            "--out", f"{out} already holds {clashes[0]}.yaml; pass --force to replace profiles"
        )
    out.mkdir(parents=True, exist_ok=True)
    with progress_bar(not quiet, len(measured_profiles), "fitting", "profile") as bar:
        for name, measured in measured_profiles.items():
            fit = fit_typed_profile if typed else fit_profile
            data = fit(measured, source=f"{folder.name}/{name}")
            path = out / f"{name}.yaml"
            path.write_text(
                yaml.safe_dump(data, sort_keys=False, default_flow_style=None, width=100)
            )
            errors = data["provenance"]["fit_error"]
            for label, err in errors.items() if typed else [("", errors)]:
                click.echo(
                    f"{path}{f' [{label}]' if label else ''}: step time median "
                    f"{err['step_time_median']:.1%}, p90 {err['step_time_p90']:.1%}; "
                    f"efficiency median {err['efficiency_median']:.1%}"
                )
            bar.update()


@profiles.command("check")
@click.argument("folder", type=click.Path(path_type=Path))
@click.option(
    "--profiles",
    "profiles_path",
    type=click.Path(path_type=Path),
    default=None,
    help="Parametric profiles to check (default: the bundled traces/profiles/).",
)
@FORMAT
def check(folder: Path, profiles_path: Path | None, fmt: str) -> None:
    """Compare parametric profiles with every measurement in FOLDER."""
    measured = load_measured_profiles(folder)
    fitted = load_profiles(profiles_path)
    results = {}
    for name, truth in measured.items():
        if name not in fitted:
            click.echo(f"warning: no profile for {name!r}; skipped", err=True)
            continue
        results[name] = vars(check_profile(fitted[name], truth))
    if fmt == "json":
        click.echo(json.dumps(results, indent=2, sort_keys=True))
        return
    click.echo(f"{'application':<12} {'step med':>9} {'step p90':>9} {'eff med':>9} {'eff p90':>9}")
    for name, r in results.items():
        click.echo(
            f"{name:<12} {r['step_time_median']:>9.1%} {r['step_time_p90']:>9.1%} "
            f"{r['efficiency_median']:>9.1%} {r['efficiency_p90']:>9.1%}"
        )


PROFILE_COLUMNS = (
    "M0: the batch the job asks for (examples per step); max B: the largest total batch; "
    "local b: per-GPU batch range;\nepochs: passes over the data to finish; progress: the "
    "training to finish, in steps at batch M0 (epochs x dataset size / M0; a larger batch "
    "gets less per example)"
)


@profiles.command("show")
@click.option(
    "--profiles",
    "profiles_path",
    type=click.Path(path_type=Path),
    default=None,
    help="Profiles folder (YAML or measurements; default: bundled).",
)
def show(profiles_path: Path | None) -> None:
    """List profiles with their limits and total training progress."""
    click.echo(
        f"{'application':<12} {'M0':>6} {'max B':>7} {'local b':>11} {'epochs':>7} {'progress':>10}"
    )
    for name, p in sorted(load_profiles(profiles_path).items()):
        lim = p.limits
        click.echo(
            f"{name:<12} {lim.init_batch_size:>6} {lim.max_batch_size:>7} "
            f"{lim.min_local_bsz:>5}-{lim.max_local_bsz:<5} {lim.max_epochs:>7} "
            f"{p.total_progress:>10.0f}"
        )
    click.echo(PROFILE_COLUMNS)
