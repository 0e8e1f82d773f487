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

import click

from goodput_sim import toy
from goodput_sim.cli import main

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
