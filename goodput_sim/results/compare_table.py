"""The columns of ``goodput-sim compare``'s table, listed once: the terminal table and the HTML
report both draw their headers and cells from :data:`COLUMNS`, so that they cannot drift apart.

A table is drawn from a summary frame, one row per policy (its index) and the columns of
:func:`goodput_sim.results.metrics.run_summary` plus ``wall_seconds``: ``Comparison.summary``
for a comparison just run, :func:`saved_summary` for saved results."""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING

import pandas as pd

if TYPE_CHECKING:
    from goodput_sim.results.report import Results

NAME_HEADER, NAME_WIDTH = "policy", 11


def _missing(value: object) -> bool:
    return value is None or (isinstance(value, float) and math.isnan(value))


def _hours(value: float) -> str:
    return "-" if _missing(value) else f"{value / 3600:.2f}h"


def _number(spec: str) -> Callable[[float], str]:
    return lambda value: "-" if _missing(value) else format(value, spec)


def _count(value: float) -> str:
    return "-" if _missing(value) else str(int(value))


def _seconds(value: float) -> str:
    return "-" if _missing(value) else f"{value:.1f}s"


@dataclass(frozen=True)
class Column:
    """One column: its header, the summary key it shows, its width in the terminal, how a
    value is written, and when it is shown (``always``; ``changing``: the cluster changed
    size, autoscaled or failing; ``priced``: the cluster has prices; ``failing``: nodes
    failed)."""

    header: str
    key: str
    width: int
    cell: Callable[[float], str]
    shown: str = "always"


COLUMNS = (
    Column("avg JCT", "avg_jct", 9, _hours),
    Column("median", "median_jct", 9, _hours),
    Column("p95", "p95_jct", 9, _hours),
    Column("p99", "p99_jct", 9, _hours),
    Column("makespan", "makespan", 9, _hours),
    Column("GPU util", "gpu_utilization", 8, _number(".1%")),
    Column("GPU-h/job", "gpu_hours_per_job", 9, _number(".2f")),
    Column("ex/GPU-s", "examples_per_gpu_second", 9, _number(".1f")),
    Column("unfinished", "unfinished", 10, _count),
    Column("node-h", "node_hours", 7, _number(".1f"), "changing"),
    Column("GPU use", "provisioned_gpu_utilization", 7, _number(".1%"), "changing"),
    Column("cost", "cost", 9, _number(".2f"), "priced"),
    Column("failures", "node_failures", 8, _count, "failing"),
    Column("lost GPU-h", "lost_gpu_hours", 10, _number(".1f"), "failing"),
    Column("avg w/o fail", "avg_jct_without_failures", 12, _hours, "failing"),
    Column("wall", "wall_seconds", 7, _seconds),
)
"""The compare table's columns after the policy's name, in order."""


def shown_columns(summary: pd.DataFrame, autoscaled: bool) -> list[Column]:
    """The columns a summary's table shows: failure columns when a failure-free twin was run
    (``avg_jct_without_failures``), node-hours when the cluster changed size (failing, or
    ``autoscaled``), cost when a run was priced."""
    failing = "avg_jct_without_failures" in summary
    shown = {
        "always": True,
        "changing": failing or autoscaled,
        "priced": "cost" in summary and bool(summary["cost"].notna().any()),
        "failing": failing,
    }
    return [c for c in COLUMNS if shown[c.shown]]


def table_cells(summary: pd.DataFrame, autoscaled: bool) -> tuple[list[str], list[list[str]]]:
    """The headers (the policy's first) and each policy's row of cells, as text."""
    columns = shown_columns(summary, autoscaled)
    rows = [
        [str(name), *(c.cell(_value(row, c.key)) for c in columns)]
        for name, row in summary.iterrows()
    ]
    return [NAME_HEADER, *(c.header for c in columns)], rows


def _value(row: pd.Series, key: str) -> float:
    value = row.get(key, float("nan"))
    return float("nan") if _missing(value) else value


def table_lines(summary: pd.DataFrame, autoscaled: bool, name_width: int = NAME_WIDTH) -> list[str]:
    """The table for a terminal: the header line, then a line per policy."""
    columns = shown_columns(summary, autoscaled)
    headers, rows = table_cells(summary, autoscaled)
    widths = [c.width for c in columns]

    def line(cells: list[str]) -> str:
        name, *rest = cells
        return f"{name:<{name_width}}" + "".join(
            f" {cell:>{w}}" for cell, w in zip(rest, widths, strict=True)
        )

    return [line(headers), *(line(row) for row in rows)]


def saved_summary(results: Results) -> tuple[pd.DataFrame, bool]:
    """A comparison's summary frame read back from its runs' manifests (their ``summary`` and
    ``wall_seconds``), one row per label, and whether any run was autoscaled."""
    rows = {}
    autoscaled = False
    for label, manifest in results.manifests.items():
        summary = {k: (float("nan") if v is None else v) for k, v in manifest["summary"].items()}
        wall = manifest.get("wall_seconds")
        rows[label] = {**summary, "wall_seconds": float("nan") if wall is None else wall}
        autoscaled |= (manifest.get("config") or {}).get("autoscale") is not None
    return pd.DataFrame.from_dict(rows, orient="index"), autoscaled
