"""Cost against JCT for autoscaling: fixed clusters of several sizes against autoscaling rules,
from the ``summary.csv`` of a sweep whose experiment file has ``variants`` (e.g.
``configs/experiment-cost-jct.yaml``).

A run is *fixed* when its settings hold no ``min_nodes`` (its size is its cluster's nodes) and
*autoscaled* otherwise (its rule is its ``autoscaler`` setting). A *sample* is one (workload,
load, interval, agent, params, seed): the report expects one run per (policy, variant, sample).
It gives, per policy and variant, mean node-hours and mean average JCT with 95% bootstrap
intervals over the samples; each rule against each fixed size, paired by sample (ratio of
means, paired bootstrap); and each rule against the fixed clusters *at equal node-hours*: the
fixed clusters' average JCT interpolated linearly in node-hours at the rule's own node-hours,
for each (policy, sample) where two fixed sizes bracket it. Fewer than :data:`MIN_SAMPLES`
samples get no interval. Every interval has its own generator, seeded from
:data:`BOOTSTRAP_SEED` and the statistic's name, so outputs are the same bytes for the same
summary and an interval does not move when other rows are added.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd

from goodput_sim.errors import InputError
from goodput_sim.experiments.intervals import (
    SAMPLE,
    change_interval,
    figure_path,
    format_change,
    format_interval,
    format_value,
    markdown_table,
    mean_interval,
    read_summary,
    refuse_repeats,
    sample_name,
    settings_of,
)
from goodput_sim.results.stats import LEVEL

NEEDED = ("policy", "variant", "cluster", "settings", "node_hours", "avg_jct", *SAMPLE)


@dataclass
class CostJctReport:
    """The three tables of the report, and the price of a node-hour (None when no run had
    one)."""

    table: pd.DataFrame
    paired: pd.DataFrame
    equal: pd.DataFrame
    price: float | None

    def markdown(self) -> str:
        """The tables as markdown, with a line on what each interval is."""
        return markdown(self)


# ------------------------------------------------------------------------------- reading
def read_runs(folder: Path) -> pd.DataFrame:
    """The sweep's runs from ``folder/summary.csv``, each marked ``fixed`` (with its ``nodes``)
    or autoscaled (with its ``rule``); one-line errors for a folder that is not such a sweep."""
    hint = "; the report needs a sweep of an experiment file with variants"
    path, runs = read_summary(folder, NEEDED, {"variant": hint})
    settings = [settings_of(path, text) for text in runs["settings"]]
    runs = runs.assign(
        fixed=[s.get("min_nodes") is None for s in settings],
        nodes=[_nodes(path, text) for text in runs["cluster"]],
        rule=[
            None if s.get("min_nodes") is None else str(s.get("autoscaler", "utility"))
            for s in settings
        ],
        shape=[
            str(c) if s.get("min_nodes") is None else f"{s['min_nodes']}-{s.get('max_nodes')} nodes"
            for c, s in zip(runs["cluster"], settings, strict=True)
        ],
        sample=[sample_name(row) for row in runs[list(SAMPLE)].itertuples(index=False)],
    )
    advice = ": sweep other axes in experiments of their own"
    refuse_repeats(path, runs, ["policy", "variant", "sample"], advice=advice)
    for variant, part in runs.groupby("variant", sort=False):
        if part["fixed"].nunique() > 1 or part["nodes"][part["fixed"]].nunique() > 1:
            raise InputError(path, f"variant {variant} mixes clusters or fixed and autoscaled runs")
    return runs


def _nodes(path: Path, text: object) -> int:
    """Nodes of a ``cluster`` cell: ``NODESxGPUS`` groups joined by ``+``."""
    try:
        return sum(int(group.split("x")[0]) for group in str(text).split("+"))
    except ValueError:
        raise InputError(path, f"cluster {text!r} is not NODESxGPUS groups") from None


def node_price(runs: pd.DataFrame) -> float | None:
    """The price of a node-hour the sweep's priced runs used (cost / node-hours), or None when
    no run was priced or their prices differ."""
    if "cost" not in runs.columns:
        return None
    priced = runs[np.isfinite(runs["cost"].astype(float)) & (runs["node_hours"] > 0)]
    if priced.empty:
        return None
    prices = (priced["cost"] / priced["node_hours"]).to_numpy(dtype=float)
    price = float(np.median(prices))
    return price if np.allclose(prices, price, rtol=1e-6, atol=0.0) else None


def interpolate(node_hours: np.ndarray, jct: np.ndarray, at: float) -> float:
    """The fixed clusters' average JCT at ``at`` node-hours: linear between the two fixed
    points (node-hours, JCT) that bracket it, taken in order of node-hours; NaN when ``at``
    lies outside them (no extrapolation) or fewer than two points are known."""
    x, y = np.asarray(node_hours, dtype=float), np.asarray(jct, dtype=float)
    keep = np.isfinite(x) & np.isfinite(y)
    x, y = x[keep], y[keep]
    if len(x) < 2 or not math.isfinite(at) or not x.min() <= at <= x.max():
        return math.nan
    order = np.argsort(x, kind="stable")
    return float(np.interp(at, x[order], y[order]))


def _order(runs: pd.DataFrame) -> tuple[list[str], list[str], list[str]]:
    """Policies in order of appearance; fixed variants by size, then rules as they appear."""
    policies = list(dict.fromkeys(runs["policy"]))
    fixed = runs[runs["fixed"]].drop_duplicates("variant").sort_values("nodes", kind="stable")
    rules = list(dict.fromkeys(runs.loc[~runs["fixed"], "variant"]))
    return policies, list(fixed["variant"]), rules


def summary_table(runs: pd.DataFrame, price: float | None = None) -> pd.DataFrame:
    """Per policy and variant: samples, mean node-hours and mean average JCT with their
    intervals, cost at ``price`` (every run, fixed ones too) and unfinished jobs."""
    policies, fixed, rules = _order(runs)
    rows = []
    for policy in policies:
        for variant in [*fixed, *rules]:
            part = runs[(runs["policy"] == policy) & (runs["variant"] == variant)]
            if part.empty:
                continue
            first = part.iloc[0]
            hours = mean_interval(part["node_hours"], "node_hours", policy, variant)
            jct = mean_interval(part["avg_jct"], "avg_jct", policy, variant)
            rows.append(
                {
                    "policy": policy,
                    "variant": variant,
                    "kind": "fixed" if first["fixed"] else "autoscaled",
                    "nodes": int(first["nodes"]) if first["fixed"] else math.nan,
                    "rule": first["rule"] if not first["fixed"] else "",
                    "cluster": first["shape"],
                    "n": len(part),
                    "node_hours_n": hours[3],
                    "avg_jct_n": jct[3],
                    "node_hours": hours[0],
                    "node_hours_ci_low": hours[1],
                    "node_hours_ci_high": hours[2],
                    "avg_jct_s": jct[0],
                    "avg_jct_ci_low_s": jct[1],
                    "avg_jct_ci_high_s": jct[2],
                    "cost": hours[0] * price if price is not None else math.nan,
                    "unfinished": int(part["unfinished"].sum()) if "unfinished" in part else 0,
                }
            )
    return pd.DataFrame(rows)


def paired_table(runs: pd.DataFrame) -> pd.DataFrame:
    """Each rule against each fixed size under each policy, paired by sample: average-JCT and
    node-hours change (ratio of means - 1) with paired intervals."""
    policies, fixed, rules = _order(runs)
    rows = []
    for policy in policies:
        mine = runs[runs["policy"] == policy]
        for rule in rules:
            ours = mine[mine["variant"] == rule].set_index("sample")
            for base in fixed:
                theirs = mine[mine["variant"] == base].set_index("sample")
                common = sorted(set(ours.index) & set(theirs.index))
                if not common or ours.empty:
                    continue
                a, b = ours.loc[common], theirs.loc[common]
                jct = change_interval(a["avg_jct"], b["avg_jct"], "jct", policy, rule, base)
                hours = change_interval(
                    a["node_hours"], b["node_hours"], "node_hours", policy, rule, base
                )
                rows.append(
                    {
                        "policy": policy,
                        "rule": rule,
                        "versus": base,
                        "n": jct[0],
                        "jct_change": jct[1],
                        "jct_change_ci_low": jct[2],
                        "jct_change_ci_high": jct[3],
                        "node_hours_n": hours[0],
                        "node_hours_change": hours[1],
                        "node_hours_change_ci_low": hours[2],
                        "node_hours_change_ci_high": hours[3],
                    }
                )
    return pd.DataFrame(rows)


def equal_node_hours_pairs(runs: pd.DataFrame) -> pd.DataFrame:
    """One row per (policy, rule, sample): the rule's node-hours and JCT, the fixed clusters'
    JCT interpolated at those node-hours (NaN outside their bracket) and where it fell."""
    policies, fixed, rules = _order(runs)
    rows = []
    for policy in policies:
        mine = runs[(runs["policy"] == policy)]
        curves = mine[mine["variant"].isin(fixed)].groupby("sample", sort=True)
        known = {sample: part for sample, part in curves}
        for rule in rules:
            ours = mine[mine["variant"] == rule].sort_values("sample", kind="stable")
            for row in ours.itertuples(index=False):
                curve = known.get(row.sample)
                if curve is None or len(curve) < 2:
                    where, value = "no fixed pair", math.nan
                else:
                    x = curve["node_hours"].to_numpy(dtype=float)
                    y = curve["avg_jct"].to_numpy(dtype=float)
                    value = interpolate(x, y, row.node_hours)
                    if math.isfinite(value):
                        where = "inside"
                    else:
                        where = "below" if row.node_hours < np.nanmin(x) else "above"
                rows.append(
                    {
                        "policy": policy,
                        "rule": rule,
                        "sample": row.sample,
                        "node_hours": row.node_hours,
                        "avg_jct_s": row.avg_jct,
                        "fixed_avg_jct_s": value,
                        "bracket": where,
                    }
                )
    return pd.DataFrame(
        rows,
        columns=[
            "policy",
            "rule",
            "sample",
            "node_hours",
            "avg_jct_s",
            "fixed_avg_jct_s",
            "bracket",
        ],
    )


def equal_table(pairs: pd.DataFrame) -> pd.DataFrame:
    """Per policy and rule: the JCT change against the fixed clusters at equal node-hours over
    the samples inside the bracket, with its paired interval, and how many fell outside."""
    rows = []
    for (policy, rule), part in pairs.groupby(["policy", "rule"], sort=False):
        inside = part[part["bracket"] == "inside"]
        n, change, low, high = change_interval(
            inside["avg_jct_s"], inside["fixed_avg_jct_s"], "equal", policy, rule
        )
        rows.append(
            {
                "policy": policy,
                "rule": rule,
                "samples": len(part),
                "n": n,
                "below": int((part["bracket"] == "below").sum()),
                "above": int((part["bracket"] == "above").sum()),
                "no_fixed_pair": int((part["bracket"] == "no fixed pair").sum()),
                "jct_change": change,
                "jct_change_ci_low": low,
                "jct_change_ci_high": high,
            }
        )
    return pd.DataFrame(rows)


def cost_jct_report(runs: pd.DataFrame) -> tuple[CostJctReport, pd.DataFrame]:
    """The report of the marked runs, and the per-sample rows behind the equal-node-hours
    comparison."""
    price = node_price(runs)
    pairs = equal_node_hours_pairs(runs)
    report = CostJctReport(
        summary_table(runs, price), paired_table(runs), equal_table(pairs), price
    )
    return report, pairs


# ------------------------------------------------------------------------------- writing
def markdown(report: CostJctReport) -> str:
    """The report's tables as markdown (what is printed and written to cost_jct.md)."""
    level = f"{LEVEL:.0%}"
    priced = report.price is not None
    head = ["policy", "cluster", "node-hours", "avg JCT (s)"]
    head += [f"cost at {report.price:g}/node-h"] if priced else []
    lines = markdown_table(
        f"### Node-hours and average JCT per policy and cluster (mean over workload x seed "
        f"samples, {level} bootstrap interval, n samples)",
        [*head, "unfinished jobs"],
    )
    for r in report.table.itertuples(index=False):
        name = r.cluster if r.kind == "fixed" else f"{r.rule} rule, {r.cluster}"
        cells = [
            r.policy,
            f"{r.variant} ({name})",
            format_interval(
                r.node_hours, r.node_hours_ci_low, r.node_hours_ci_high, r.node_hours_n, 1
            ),
            format_interval(r.avg_jct_s, r.avg_jct_ci_low_s, r.avg_jct_ci_high_s, r.avg_jct_n, 1),
        ]
        cells += [format_value(r.cost, 1)] if priced else []
        lines.append("| " + " | ".join([*cells, str(r.unfinished)]) + " |")
    if not report.paired.empty:
        lines += [
            "",
            *markdown_table(
                f"### Each rule against each fixed cluster, paired by (workload, seed): change "
                f"of the mean, {level} paired bootstrap interval, n pairs",
                ["policy", "rule", "versus", "avg JCT change", "node-hours change"],
            ),
        ]
        for r in report.paired.itertuples(index=False):
            jct = format_change(r.jct_change, r.jct_change_ci_low, r.jct_change_ci_high, r.n)
            hours = format_change(
                r.node_hours_change,
                r.node_hours_change_ci_low,
                r.node_hours_change_ci_high,
                r.node_hours_n,
            )
            lines.append(f"| {r.policy} | {r.rule} | {r.versus} | {jct} | {hours} |")
    if not report.equal.empty:
        lines += [
            "",
            *markdown_table(
                "### At equal node-hours: each rule's avg JCT against the fixed clusters' avg "
                "JCT interpolated linearly in node-hours at the rule's node-hours (same workload "
                f"and seed; only where two fixed sizes bracket it), {level} paired bootstrap "
                "interval",
                ["policy", "rule", "avg JCT change at equal node-hours", "outside the bracket"],
            ),
        ]
        for r in report.equal.itertuples(index=False):
            jct = format_change(r.jct_change, r.jct_change_ci_low, r.jct_change_ci_high, r.n)
            outside = f"{r.below + r.above} of {r.samples} ({r.below} below, {r.above} above)"
            if r.no_fixed_pair:
                outside += f"; {r.no_fixed_pair} with fewer than two fixed sizes"
            lines.append(f"| {r.policy} | {r.rule} | {jct} | {outside} |")
    if priced:
        lines += [
            "",
            f"Cost is node-hours x {report.price:g} per node-hour (the sweep's node_price), "
            "fixed clusters included.",
        ]
    return "\n".join(lines) + "\n"


def cost_jct_figure(report: CostJctReport, path: Path | None = None):
    """Node-hours (x) against average JCT (y, hours), one panel per policy: the fixed sizes as
    a line with interval bars in both directions, each rule as a point with 2-D interval bars
    (no bars below :data:`MIN_SAMPLES` samples)."""
    from goodput_sim.results.plots import PALETTE, legend_outside, new_figure, save_figure

    table = report.table
    policies = list(dict.fromkeys(table["policy"]))
    fig = new_figure(5.2 * len(policies), 4.4)
    axes = fig.subplots(1, len(policies), squeeze=False)[0]
    rules = list(dict.fromkeys(table.loc[table["kind"] == "autoscaled", "variant"]))
    for ax, policy in zip(axes, policies, strict=True):
        mine = table[table["policy"] == policy]
        fixed = mine[mine["kind"] == "fixed"].sort_values("nodes", kind="stable")
        if len(fixed):
            x, y = fixed["node_hours"].to_numpy(float), fixed["avg_jct_s"].to_numpy(float) / 3600
            ax.errorbar(
                x,
                y,
                xerr=_bars(fixed, "node_hours", "node_hours_ci_low", "node_hours_ci_high", 1),
                yerr=_bars(fixed, "avg_jct_s", "avg_jct_ci_low_s", "avg_jct_ci_high_s", 3600),
                color="#555555",
                marker="o",
                capsize=3,
                label="fixed clusters",
            )
            for shape, xi, yi in zip(fixed["cluster"], x, y, strict=True):
                ax.annotate(
                    shape,
                    (xi, yi),
                    xytext=(4, 4),
                    textcoords="offset points",
                    fontsize="small",
                )
        for k, rule in enumerate(rules):
            point = mine[mine["variant"] == rule]
            if point.empty:
                continue
            ax.errorbar(
                point["node_hours"].to_numpy(float),
                point["avg_jct_s"].to_numpy(float) / 3600,
                xerr=_bars(point, "node_hours", "node_hours_ci_low", "node_hours_ci_high", 1),
                yerr=_bars(point, "avg_jct_s", "avg_jct_ci_low_s", "avg_jct_ci_high_s", 3600),
                color=PALETTE[k % len(PALETTE)],
                marker="s",
                linestyle="none",
                capsize=3,
                label=f"{rule} rule",
            )
        n = sorted(set(mine["n"]))
        ax.set_title(f"{policy} (n = {'/'.join(str(v) for v in n)} samples)", fontsize="medium")
        ax.set_xlabel("node-hours provisioned")
        ax.set_ylabel("average JCT (hours)")
        ax.grid(True, alpha=0.3)
    legend_outside(axes[-1])  # one legend: every panel draws the same series
    fig.suptitle(
        f"Cost against JCT: means with {LEVEL:.0%} bootstrap intervals over workload x seed "
        "samples\n(unpaired spread across samples; the paired comparisons are in the table)",
        fontsize="medium",
    )
    fig.tight_layout()
    if path is not None:
        if path.suffix.lower() == ".pdf":
            fig.savefig(path, metadata={"CreationDate": None, "Producer": None, "Creator": None})
        else:
            save_figure(fig, path)
    return fig


def _bars(part: pd.DataFrame, mean: str, low: str, high: str, scale: float) -> np.ndarray | None:
    """Error-bar lengths (2 x n) from interval columns; None when no row has an interval."""
    m = part[mean].to_numpy(float) / scale
    lo, hi = part[low].to_numpy(float) / scale, part[high].to_numpy(float) / scale
    if not np.isfinite(lo).any():
        return None
    return np.nan_to_num(np.stack([m - lo, hi - m]), nan=0.0)


def write_cost_jct(
    folder: Path, out: Path | None = None, figures: tuple[str, ...] = ("cost_jct.png",)
) -> tuple[CostJctReport, list[Path]]:
    """Read ``folder/summary.csv`` and write the report into ``out`` (default
    ``folder/report``): cost_jct_table.csv, cost_jct_paired.csv, cost_jct_equal.csv (with
    cost_jct_equal_pairs.csv, one row per rule and sample), cost_jct.md and the figures named
    in ``figures`` (PNG, PDF or SVG by suffix; a bare name is put in ``out``)."""
    folder = Path(folder)
    out = Path(out) if out is not None else folder / "report"
    targets = [figure_path(name, out) for name in figures]
    runs = read_runs(folder)
    if out.exists() and not out.is_dir():
        raise InputError(out, "is a file, expected a folder for the report")
    report, pairs = cost_jct_report(runs)
    out.mkdir(parents=True, exist_ok=True)
    options = {"index": False, "float_format": "%.6f", "lineterminator": "\n"}
    report.table.to_csv(out / "cost_jct_table.csv", **options)
    report.paired.to_csv(out / "cost_jct_paired.csv", **options)
    report.equal.to_csv(out / "cost_jct_equal.csv", **options)
    pairs.to_csv(out / "cost_jct_equal_pairs.csv", **options)
    (out / "cost_jct.md").write_text(report.markdown())
    written = []
    for target in targets:
        target.parent.mkdir(parents=True, exist_ok=True)
        cost_jct_figure(report, target)
        written.append(target)
    return report, written
