"""`goodput-sim toy ...`: print the scalar toy models from :mod:`goodput_sim.toy`.

JSON output (``--format json``), stable keys:

* ``toy counterexample`` -> ``{"rows": [{"batch", "updates", "final_loss", "seconds",
  "examples", "examples_per_second"}, ...]}``
* ``toy recurrence`` -> ``{"rows": [{"sigma", "batch", "status", "updates", "seconds",
  "examples", "floor"}, ...], "fastest": [{"sigma", "batch", "seconds"}, ...]}``; ``status`` is
  ``reached``, ``unreachable`` or ``not_reached_within_limit``; ``updates``, ``seconds`` and
  ``examples`` are null unless reached; a ``fastest`` entry has null batch/seconds if no batch
  reached the target for that sigma.
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Sequence
from pathlib import Path

import click

from goodput_sim import toy
from goodput_sim.cli import main, profiles_option

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
    """Seed 002: each application's noise scale at the start and end of training, and the
    critical batch of its whole run (S = S_min (1 + B_crit/B))."""
    from goodput_sim.models.critical import critical_batch_report
    from goodput_sim.profiles import load_profiles

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
        "fit rms",
    ]
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
            f"{r['b_crit']:.4g}",
            f"{r['fit_rms_log_error']:.1%}",
        ]
        for r in rows
    ]
    click.echo(_table(headers, cells))
    click.echo(
        "\nB_noise = M0 * grad_var / grad_sqr at batch M0, first and last epoch; S_min, E_min,"
        "\nB_crit fitted to the steps and examples to finish at 12 fixed batches."
    )


@toy_group.command("tail-weighted")
@click.option("--steps", type=click.IntRange(2, 100_000), default=64, show_default=True)
@click.option("--static-batch", type=click.IntRange(1), default=16, show_default=True)
@click.option("--low", type=click.IntRange(1), default=8, show_default=True)
@click.option("--high", type=click.IntRange(1), default=64, show_default=True)
@_FORMAT
def tail_weighted_cmd(steps: int, static_batch: int, low: int, high: int, fmt: str) -> None:
    """Seed 004: the tail-weighted schedule under the static batch's example budget, per
    learning-rate schedule, with constant noise."""
    from goodput_sim.errors import InputError
    from goodput_sim.models.tail import tail_weighted_report

    if not low <= static_batch <= high:
        raise InputError("--static-batch", f"must lie within [--low, --high] = [{low}, {high}]")
    rows = tail_weighted_report(steps, static_batch, low, high)
    if fmt == "json":
        setting = {"steps": steps, "static_batch": static_batch, "low": low, "high": high}
        click.echo(json.dumps({"setting": setting, "rows": rows}, indent=2))
        return
    headers = [
        "schedule",
        "B_1",
        "B_tau",
        "range",
        "objective",
        "integer",
        "static",
        "vs static",
        "int/cont",
    ]
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
