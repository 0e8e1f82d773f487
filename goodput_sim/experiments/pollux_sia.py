"""Type-blind goodput (Pollux in the Sia paper) against sia, from the sweep of
``configs/experiment-pollux-sia.yaml``: each goodput configuration's average JCT over sia's on
the same workload, and over all its workloads as the ratio of the mean average JCTs (the guide's
figure of 1.29x reads the same way).

The configurations are the project's defaults, the Sia artifact's (Sia SPEC 5: virtual 4-GPU
nodes, at most 16 GPUs per job, a flat 30-s restart delay in the restart penalty) and each of
those options alone, so that the part of the gap each explains can be read off."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pandas as pd

from goodput_sim.errors import InputError
from goodput_sim.experiments.intervals import read_summary

ARTIFACT = {"virtual_node_gpus": 4, "max_gpus": 16, "restart_seconds": 30}
"""goodput's parameters for the artifact's type-blind Pollux (Sia SPEC 5.1-5.3)."""
CONFIGURATIONS: tuple[tuple[str, dict[str, Any]], ...] = (
    ("ours", {}),
    ("artifact (all three)", ARTIFACT),
    ("virtual 4-GPU nodes", {"virtual_node_gpus": 4}),
    ("at most 16 GPUs", {"max_gpus": 16}),
    ("flat 30-s restart", {"restart_seconds": 30}),
)
NEEDED = ("policy", "params", "workload", "avg_jct")


def _key(params: dict[str, Any]) -> str:
    """Parameters as comparable text, numbers as floats: 16, 16.0 and "16" (a sweep's
    ``params`` column holds the values as given) are one value."""
    return json.dumps({k: _number(v) for k, v in params.items()}, sort_keys=True)


def _number(value: Any) -> Any:
    if isinstance(value, bool):
        return value
    try:
        return float(value)
    except (TypeError, ValueError):
        return value


def configuration(params: dict[str, Any]) -> str:
    """A goodput run's configuration label: a named one, else its parameters."""
    names = {_key(p): label for label, p in CONFIGURATIONS}
    return names.get(_key(params), json.dumps(params, sort_keys=True))


def ratio_table(runs: pd.DataFrame) -> pd.DataFrame:
    """One row per goodput configuration (named ones first, in order): its average JCT over
    sia's per workload (columns by workload, in natural order), ``all`` the ratio of the mean
    average JCTs over the workloads it ran on, and ``workloads`` how many those are."""
    sia = runs[runs["policy"] == "sia"].set_index("workload")["avg_jct"]
    if sia.empty:
        raise InputError("results", "hold no sia run to set goodput against")
    if sia.index.has_duplicates:
        raise InputError("results", "hold several sia runs of one workload (one seed expected)")
    goodput = runs[runs["policy"] == "goodput"]
    labels = [configuration(json.loads(text)) for text in goodput["params"]]
    goodput = goodput.assign(configuration=labels)
    order = [label for label, _ in CONFIGURATIONS if label in set(labels)]
    order += sorted(set(labels) - set(order))
    workloads = sorted(sia.index, key=_natural)
    rows = []
    for label in order:
        mine = goodput[goodput["configuration"] == label].set_index("workload")["avg_jct"]
        if mine.index.has_duplicates:
            raise InputError("results", f"hold several goodput runs of one workload ({label})")
        both = [w for w in workloads if w in mine.index]
        row: dict[str, Any] = {"configuration": label}
        row.update({w: mine[w] / sia[w] if w in mine.index else float("nan") for w in workloads})
        row["all"] = mine[both].mean() / sia[both].mean() if both else float("nan")
        row["workloads"] = len(both)
        rows.append(row)
    return pd.DataFrame(rows, columns=["configuration", *workloads, "all", "workloads"])


def _natural(name: str) -> tuple:
    """``workload-2`` before ``workload-10``."""
    head, _, tail = name.rpartition("-")
    return (head, int(tail)) if tail.isdigit() else (name, 0)


def markdown(table: pd.DataFrame) -> str:
    """The table as Markdown, ratios to 2 decimals ('-' where a run is missing)."""
    workloads = [c for c in table.columns if c not in ("configuration", "all", "workloads")]
    short = [w.rpartition("-")[2] or w for w in workloads]
    lines = [
        "| goodput | " + " | ".join(short) + " | all |",
        "|---" * (len(workloads) + 2) + "|",
    ]
    for _, row in table.iterrows():
        cells = [_ratio(row[w]) for w in workloads]
        count = int(row["workloads"])
        total = _ratio(row["all"]) + ("" if count == len(workloads) else f" ({count})")
        lines.append(f"| {row['configuration']} | " + " | ".join(cells) + f" | {total} |")
    return "\n".join(lines) + "\n"


def _ratio(value: float) -> str:
    return "-" if pd.isna(value) else f"{value:.2f}"


def pollux_sia_report(folder: Path) -> pd.DataFrame:
    """The ratio table of the sweep in ``folder`` (its ``summary.csv``)."""
    _, runs = read_summary(folder, NEEDED)
    return ratio_table(runs)
