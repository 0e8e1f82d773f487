"""`goodput-sim toy ...`: print the scalar toy models from :mod:`goodput_sim.models.toy`.

JSON output (``--format json``), stable keys:

* ``toy counterexample`` -> ``{"rows": [{"batch", "updates", "final_loss", "seconds",
  "examples", "examples_per_second"}, ...]}``
* ``toy recurrence`` -> ``{"rows": [{"sigma", "batch", "status", "updates", "seconds",
  "examples", "floor"}, ...], "fastest": [{"sigma", "batch", "seconds"}, ...]}``; ``status`` is
  ``reached``, ``unreachable`` or ``not_reached_within_limit``; ``updates``, ``seconds`` and
  ``examples`` are null unless reached; a ``fastest`` entry has null batch/seconds if no batch
  reached the target for that sigma.
* ``toy critical-batch`` -> ``{"rows": [{"application", "init_batch_size", "max_batch_size",
  "noise_scale_start", "noise_scale_end", "growth", "s_min", "e_min", "b_crit",
  "fit_rms_log_error", "b_crit_over_max", "b_crit_extrapolated", "b_crit_iterations",
  "b_crit_iterations_extrapolated", "iterations_fit_rms_log_error",
  "b_crit_iterations_profile_batches"}, ...]}``; ``*_extrapolated`` is true when that B_crit
  exceeds ``max_batch_size``; ``b_crit_iterations_profile_batches`` is null for a profile that
  tabulates no batch sizes.
* ``toy tail-weighted`` -> ``{"setting": {"steps", "static_batch", "low", "high"}, "rows":
  [{"schedule", "first_batch", "last_batch", "min_batch", "max_batch", "objective",
  "integer_objective", "static_objective", "reduction_vs_static",
  "integer_over_continuous"}, ...]}``; with ``--seed-setting`` ->
  ``{"setting", "row", "published", "target_integer_reduction", "distance", "integer_miss",
  "matches", "verdict"}`` (:func:`goodput_sim.models.tail.stage1_report`).
"""

from __future__ import annotations

import dataclasses
import json
import textwrap
from collections.abc import Sequence
from pathlib import Path

import click

from goodput_sim.cli import main, profiles_option
from goodput_sim.cli.numbers import Int
from goodput_sim.models import toy

_FORMAT = click.option(
    "--format",
    "fmt",
    type=click.Choice(["table", "json"]),
    default="table",
    show_default=True,
    help="Aligned text table or JSON.",
)


def _table(headers: Sequence[str], rows: Sequence[Sequence[str]], text_last: bool = False) -> str:
    """Plain-text columns fitted to the longest cell; numbers right-aligned, text last left."""
    widths = [max(len(c) for c in col) for col in zip(headers, *rows, strict=True)]

    def fmt(line: Sequence[str]) -> str:
        cells = [c.rjust(w) for c, w in zip(line, widths, strict=True)]
        if text_last:
            cells[-1] = line[-1].ljust(widths[-1])
        return "  ".join(cells).rstrip()

    return "\n".join(fmt(line) for line in [headers, *rows])


@main.group("toy")
def toy_group() -> None:
    """Scalar toy models: higher throughput versus time to a fixed loss target."""


@toy_group.command("counterexample")
@_FORMAT
def counterexample_cmd(fmt: str) -> None:
    """Identical examples: a bigger batch wins examples/s but loses time to target."""
    rows = toy.counterexample()
    if fmt == "json":
        click.echo(json.dumps({"rows": [dataclasses.asdict(r) for r in rows]}, indent=2))
        return
    headers = ["batch", "updates", "final_loss", "seconds", "examples", "examples/s"]
    cells = [
        [
            str(r.batch),
            str(r.updates),
            f"{r.final_loss:.3e}",
            f"{r.seconds:.3f}",
            str(r.examples),
            f"{r.examples_per_second:.0f}",
        ]
        for r in rows
    ]
    click.echo(_table(headers, cells))


def _status_text(row: toy.RecurrenceRow) -> str:
    """Human-readable status; unreachable rows name the floor that blocks the target."""
    if row.status == "unreachable":
        return f"unreachable (floor {row.floor:.3g} >= target)"
    return row.status.replace("_", " ")


@toy_group.command("recurrence")
@_FORMAT
def recurrence_cmd(fmt: str) -> None:
    """Noisy gradients: the fastest batch to expected loss 1e-4 grows with the noise sigma."""
    rows = toy.noisy_recurrence()
    fastest = toy.fastest_per_sigma(rows)
    if fmt == "json":
        best = [
            {"sigma": s, "batch": r.batch if r else None, "seconds": r.seconds if r else None}
            for s, r in fastest.items()
        ]
        payload = {"rows": [dataclasses.asdict(r) for r in rows], "fastest": best}
        click.echo(json.dumps(payload, indent=2))
        return
    headers = ["sigma", "batch", "updates", "seconds", "examples", "floor", "status"]
    cells = [
        [
            f"{r.sigma:g}",
            str(r.batch),
            "-" if r.updates is None else str(r.updates),
            "-" if r.seconds is None else f"{r.seconds:.4f}",
            "-" if r.examples is None else str(r.examples),
            f"{r.floor:.3g}",
            _status_text(r),
        ]
        for r in rows
    ]
    click.echo(_table(headers, cells, text_last=True))
    click.echo("\nfastest per sigma:")
    for sigma, r in fastest.items():
        best_text = (
            "no batch reached the target"
            if r is None
            else (f"batch {r.batch} in {r.seconds:.4f} s")
        )
        click.echo(f"  sigma {sigma:g}: {best_text}")


@toy_group.command("critical-batch")
@profiles_option
@_FORMAT
def critical_batch_cmd(profiles: Path | None, fmt: str) -> None:
    """Each application's noise scale at the start and end of training, and the
    critical batch of its whole run (S = S_min (1 + B_crit/B))."""
    from goodput_sim.profiles import load_profiles
    from goodput_sim.profiles.critical import critical_batch_report

    rows = critical_batch_report(load_profiles(profiles))
    if fmt == "json":
        click.echo(json.dumps({"rows": rows}, indent=2))
        return
    headers = [
        "application",
        "M0",
        "max B",
        "B_noise start",
        "end",
        "growth",
        "S_min",
        "E_min",
        "B_crit",
        "/max B",
        "fit rms",
        "B_crit iter",
        "iter rms",
        "at own B",
    ]

    def marked(value: float, extrapolated: bool) -> str:
        return f"{value:.4g}" + ("*" if extrapolated else " ")

    cells = [
        [
            r["application"],
            str(r["init_batch_size"]),
            str(r["max_batch_size"]),
            f"{r['noise_scale_start']:.4g}",
            f"{r['noise_scale_end']:.4g}",
            f"{r['growth']:.3g}x",
            f"{r['s_min']:.4g}",
            f"{r['e_min']:.4g}",
            marked(r["b_crit"], r["b_crit_extrapolated"]),
            f"{r['b_crit_over_max']:.3g}x",
            f"{r['fit_rms_log_error']:.1%}",
            marked(r["b_crit_iterations"], r["b_crit_iterations_extrapolated"]),
            f"{r['iterations_fit_rms_log_error']:.1%}",
            "-"
            if r["b_crit_iterations_profile_batches"] is None
            else marked(
                r["b_crit_iterations_profile_batches"],
                r["b_crit_iterations_profile_batches"] > r["max_batch_size"],
            ),
        ]
        for r in rows
    ]
    click.echo(_table(headers, cells))
    click.echo(
        "\n* B_crit beyond max B, the largest batch the profile holds: an extrapolation (the"
        "\n  fitted batches never reach the bend of the curve); /max B is B_crit over max B."
        "\nB_noise = M0 * grad_var / grad_sqr at batch M0, first and last epoch; S_min, E_min,"
        "\nB_crit fitted to the steps and examples to finish at 12 fixed batches. The fit is"
        "\nclose by construction: the simulator's steps per epoch are S_e (1 + B_noise_e/B), the"
        "\nfitted curve exactly when the statistics do not depend on B, so a small rms is no"
        "\nevidence for the law. B_crit iter: the same fit to the profile's own iteration"
        "\ncounts at the last epoch (measured profiles: the measurement files) at the same 12"
        "\nbatches, where counts between measured batches are interpolated linearly in B (up to"
        "\n12% too many steps halfway between doublings); at own B: at the profile's own"
        "\ntabulated batches only. Bundled profiles derive their counts from the same gain, so"
        "\ntheir B_crit iter equals B_crit. Far past max B a fit finds no bend and is"
        "\nill-determined: it can move by orders of magnitude with the batches used."
    )


_TAIL_COLUMNS = ["B_1", "B_tau", "range", "objective", "integer", "static", "vs static", "int/cont"]


@toy_group.command("tail-weighted")
@click.option("--steps", type=Int(2, 100_000), default=64, show_default=True)
@click.option("--static-batch", type=Int(1), default=16, show_default=True)
@click.option("--low", type=Int(1), default=8, show_default=True)
@click.option("--high", type=Int(1), default=64, show_default=True)
@click.option(
    "--seed-setting",
    is_flag=True,
    help="Instead: the closest setting found to the published stage-1 toy of the tail-weighted "
    "schedule (arXiv:2607.27731), beside its figures.",
)
@_FORMAT
@click.pass_context
def tail_weighted_cmd(
    ctx: click.Context,
    steps: int,
    static_batch: int,
    low: int,
    high: int,
    seed_setting: bool,
    fmt: str,
) -> None:
    """The tail-weighted schedule (arXiv:2607.27731) under the static batch's example budget, per
    learning-rate schedule, with constant noise."""
    from goodput_sim.errors import InputError
    from goodput_sim.models.tail import tail_weighted_report

    if seed_setting:
        given = [
            f"--{name.replace('_', '-')}"
            for name in ("steps", "static_batch", "low", "high")
            if ctx.get_parameter_source(name) is not click.core.ParameterSource.DEFAULT
        ]
        if given:
            raise InputError("--seed-setting", f"fixes its own setting; drop {', '.join(given)}")
        _print_seed_setting(fmt)
        return
    if not low <= static_batch <= high:
        raise InputError("--static-batch", f"must lie within [--low, --high] = [{low}, {high}]")
    rows = tail_weighted_report(steps, static_batch, low, high)
    if fmt == "json":
        setting = {"steps": steps, "static_batch": static_batch, "low": low, "high": high}
        click.echo(json.dumps({"setting": setting, "rows": rows}, indent=2))
        return
    headers = ["schedule", *_TAIL_COLUMNS]
    cells = [
        [
            r["schedule"],
            str(r["first_batch"]),
            str(r["last_batch"]),
            f"{r['min_batch']}-{r['max_batch']}",
            f"{r['objective']:.5g}",
            f"{r['integer_objective']:.5g}",
            f"{r['static_objective']:.5g}",
            f"{-r['reduction_vs_static']:+.2%}",
            f"{r['integer_over_continuous']:.5f}",
        ]
        for r in rows
    ]
    click.echo(_table(headers, cells))
    click.echo(
        f"\n{steps} steps, budget {steps * static_batch} examples (static batch {static_batch}),"
        f" batches in [{low}, {high}], constant noise; objective = sum_t c_t s_t / B_t."
    )


def _noise_text(setting: dict) -> str:
    """The stage-1 setting's noise schedule in words."""
    shape, end = setting["noise_shape"], setting.get("noise_end", 1.0)
    if shape == "exponential":
        return f"{end:g} + {1 - end:g} exp(-t/{setting['noise_time_constant']:g})"
    if shape == "constant":
        return "constant"
    return f"{shape} from 1 to {end:g}"


def _print_seed_setting(fmt: str) -> None:
    """``toy tail-weighted --seed-setting``: our closest stage-1 row beside the seed's."""
    from goodput_sim.models.tail_stage1 import stage1_report

    report = stage1_report()
    if fmt == "json":
        click.echo(json.dumps(report, indent=2))
        return
    setting, ours, pub = report["setting"], report["row"], report["published"]
    headers = ["", *_TAIL_COLUMNS]
    cells = [
        [
            "published",
            str(pub["first_batch"]),
            str(pub["last_batch"]),
            f"{pub['min_batch']}-{pub['max_batch']}",
            "-",
            f"{pub['integer_objective']:.6g}",
            f"{pub['static_objective']:.6g}",
            f"{-report['target_integer_reduction']:+.3%}",
            f"{pub['integer_over_continuous']:.5f}",
        ],
        [
            f"ours: {ours['schedule']}",
            str(ours["first_batch"]),
            str(ours["last_batch"]),
            f"{ours['min_batch']}-{ours['max_batch']}",
            f"{ours['objective']:.6g}",
            f"{ours['integer_objective']:.6g}",
            f"{ours['static_objective']:.6g}",
            f"{-ours['integer_reduction_vs_static']:+.3%}",
            f"{ours['integer_over_continuous']:.5f}",
        ],
    ]
    click.echo(_table(headers, cells))
    steps, static = setting["steps"], setting["static_batch"]
    rate = f"{setting['lr_schedule']} decaying to {setting['lr_floor']:g} of the base rate"
    note = (
        f"{steps} steps, budget {steps * static} examples (static batch {static}), batches in"
        f" [{setting['low']}, {setting['high']}]; learning rate {rate}; noise"
        f" {_noise_text(setting)}, t = 0..{steps - 1}. vs static: integer objective against"
        f" static; the seed prints {pub['integer_reduction_vs_static']:.2%}, its two objectives"
        " give the figure above. Objectives are in units of the base rate x the first step's"
        " noise (the seed's in its own), so compare ratios. Continuous against static (ours):"
        f" {-ours['reduction_vs_static']:+.3%}."
    )
    lines = ["", textwrap.fill(note, 96), textwrap.fill(report["verdict"], 96)]
    click.echo("\n".join(lines))
