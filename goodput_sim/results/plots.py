"""Figures: JCT CDFs, average-JCT bars with intervals, JCT against load, JCT by application,
utilisation and queue over time, allocation timelines, per-job GPUs and batch, the batch-rules
comparison and the seeds' batch-size curves. Every axis names its unit.

Figures are built as :class:`matplotlib.figure.Figure` objects, without pyplot, so importing this
module sets no backend: files are written by the figure's own canvas, and a notebook shows the
returned figure inline (:class:`DisplayFigure` renders itself as PNG for IPython)."""

from __future__ import annotations

import io
import re
import textwrap
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd
from matplotlib.figure import Figure

# Okabe-Ito: distinguishable with the common forms of colour blindness.
PALETTE = ("#0072B2", "#E69F00", "#009E73", "#CC79A7", "#56B4E9", "#D55E00", "#F0E442", "#000000")
POLICY_COLORS = {
    "goodput": "#0072B2",
    "tiresias": "#E69F00",
    "sia": "#009E73",
    "gavel": "#CC79A7",
    "fifo": "#56B4E9",
    "optimus": "#D55E00",
    "throughput": "#000000",
    "goodput-ga": "#00446B",  # goodput's blue, darker: a variant of it
}
"""Each policy's colour in every figure, whatever else a figure shows, so figures agree."""

POLICY_MARKERS = {
    "goodput": "o",
    "tiresias": "s",
    "sia": "^",
    "gavel": "D",
    "fifo": "v",
    "optimus": "P",
    "throughput": "X",
    "goodput-ga": "*",
}
"""Each policy's marker on its lines, so that lines differ in shape as well as colour."""

SPARE_COLORS = ("#999999", "#882255", "#999933", "#332288", "#F0E442")
"""Colours of policies not in :data:`POLICY_COLORS` (plugins), by order: grey, then Paul Tol's
wine, olive and indigo (none near an Okabe-Ito colour), then yellow."""
SPARE_MARKERS = ("h", "<", ">", "p", "d", "8")
LINE_STYLES = ("-", "--", "-.", ":")
HATCHES = ("", "//", "..", "xx")


@dataclass(frozen=True)
class Style:
    """How a label is drawn: colour, line style and marker of a line, hatch of a bar."""

    color: str
    linestyle: str
    marker: str
    hatch: str


def policy_styles(labels: list[str]) -> dict[str, Style]:
    """A style per label. The colour and marker are its policy's (the label's first word); a
    policy's further variants in one figure get lighter tints of its colour, other line
    styles, hollow markers and hatches (a tint alone can come near another policy's colour:
    goodput's lighter blue near fifo's). Labels of unknown policies take the spare colours and
    markers by order, and other line styles once the colours repeat."""
    from matplotlib.colors import to_hex, to_rgb

    out: dict[str, Style] = {}
    seen: dict[str, int] = {}
    unknown = 0
    for label in labels:
        base = label.split(" ")[0]
        if base not in POLICY_COLORS:
            turn = unknown // len(SPARE_COLORS)
            out[label] = Style(
                SPARE_COLORS[unknown % len(SPARE_COLORS)],
                LINE_STYLES[turn % len(LINE_STYLES)],
                SPARE_MARKERS[unknown % len(SPARE_MARKERS)],
                HATCHES[turn % len(HATCHES)],
            )
            unknown += 1
            continue
        k = seen[base] = seen.get(base, -1) + 1
        mix = 1 - 0.6**k  # 0, 0.4, 0.64, ... of the way to white
        tint = tuple(c + (1 - c) * mix for c in to_rgb(POLICY_COLORS[base]))
        color = POLICY_COLORS[base] if k == 0 else to_hex(tint)
        out[label] = Style(
            color,
            LINE_STYLES[k % len(LINE_STYLES)],
            POLICY_MARKERS[base],
            HATCHES[k % len(HATCHES)],
        )
    return out


def policy_colors(labels: list[str]) -> dict[str, str]:
    """The colour of each label's :func:`policy_styles`."""
    return {label: style.color for label, style in policy_styles(labels).items()}


def _line(style: Style, points: int, index: int, count: int) -> dict:
    """Keyword arguments drawing a line of ``points`` points in ``style``, the ``index``-th of
    ``count``: about six markers, staggered between the lines so that lines that coincide
    still show each one's markers."""
    step = max(1, points // 6)
    return {
        "color": style.color,
        "linestyle": style.linestyle,
        "marker": style.marker,
        "fillstyle": "full" if style.linestyle == "-" else "none",  # a variant's: hollow
        "markersize": 5,
        "markevery": ((index * step) // max(count, 1), step),
    }


COINCIDE_RTOL = 1e-3
"""Curves whose every value agrees to this relative tolerance are drawn as one: they
coincide."""


@dataclass(frozen=True)
class Coincidence:
    """Labels whose curves coincide in one figure (the one drawn last hides the others), and
    whether their values are identical or only within :data:`COINCIDE_RTOL`."""

    labels: tuple[str, ...]
    identical: bool

    def text(self, values: str) -> str:
        """``fifo and tiresias coincide: identical JCTs`` (``values`` names what agrees)."""
        how = "identical " + values if self.identical else f"{values} within {COINCIDE_RTOL:.1%}"
        return f"{_names(self.labels)} coincide: {how}"


def _names(labels) -> str:
    labels = list(labels)
    return labels[0] if len(labels) == 1 else f"{', '.join(labels[:-1])} and {labels[-1]}"


def coinciding(curves: dict[str, tuple]) -> list[Coincidence]:
    """The groups of labels whose curves coincide: each of their arrays has the same shape and
    values equal to within :data:`COINCIDE_RTOL` of the group's first (NaN equal to NaN).
    Curves with nothing to draw (an empty first array) coincide with none."""
    groups: list[tuple[tuple[np.ndarray, ...], list[str], list[bool]]] = []
    for label, given in curves.items():
        arrays = tuple(np.asarray(a, dtype=float) for a in given)
        if not arrays[0].size:
            continue
        for first, labels, same in groups:
            if _close(first, arrays, COINCIDE_RTOL):
                labels.append(label)
                same[0] = same[0] and _close(first, arrays, 0.0)
                break
        else:
            groups.append((arrays, [label], [True]))
    return [Coincidence(tuple(labels), same[0]) for _, labels, same in groups if len(labels) > 1]


def _close(a: tuple[np.ndarray, ...], b: tuple[np.ndarray, ...], rtol: float) -> bool:
    return len(a) == len(b) and all(
        x.shape == y.shape and np.allclose(x, y, rtol=rtol, atol=0.0, equal_nan=True)
        for x, y in zip(a, b, strict=True)
    )


def _legend_suffixes(groups: list[Coincidence]) -> dict[str, str]:
    """`` (same as fifo)`` for each label after the first of a group that coincides."""
    out = {}
    for group in groups:
        word = "same as" if group.identical else "close to"
        for label in group.labels[1:]:
            out[label] = f" ({word} {group.labels[0]})"
    return out


def cdf_coincidences(jobs_by_policy: dict[str, pd.DataFrame]) -> list[Coincidence]:
    """Policies whose JCT CDFs (:func:`jct_cdf`) coincide: the same number of jobs and the
    same finished JCTs."""
    return coinciding(
        {
            name: (
                np.sort(jobs.loc[jobs["finished"].astype(bool), "jct"].to_numpy(float)),
                [len(jobs)],
            )
            for name, jobs in jobs_by_policy.items()
        }
    )


def utilization_coincidences(rounds_by_policy: dict[str, pd.DataFrame]) -> list[Coincidence]:
    """Policies whose curves of :func:`utilization_over_time` coincide: the same rounds, GPUs
    in use and queue."""
    return coinciding(
        {
            name: (rounds["time"], rounds["gpus_in_use"], rounds["queued"])
            for name, rounds in rounds_by_policy.items()
        }
    )


def load_coincidences(table: pd.DataFrame) -> list[Coincidence]:
    """Policies whose lines of :func:`jct_against_load` coincide: the same loads, means and
    intervals."""
    curves = {}
    for name, part in table.groupby("policy", sort=False):
        part = part.sort_values("load")
        curves[name] = (part["avg_jct_s"], part["load"], part["ci_low_s"], part["ci_high_s"])
    return coinciding(curves)


class DisplayFigure(Figure):
    """A figure that IPython shows inline as PNG, whatever the matplotlib backend."""

    def _repr_png_(self) -> bytes:
        buffer = io.BytesIO()
        self.savefig(buffer, format="png", dpi=100)
        return buffer.getvalue()


def new_figure(width: float = 6.4, height: float = 4.2) -> DisplayFigure:
    """An empty figure for the functions here and for notebooks."""
    return DisplayFigure(figsize=(width, height))


def _save(fig: Figure, path: Path | None) -> Figure:
    fig.tight_layout()
    if path is not None:
        fig.savefig(path, dpi=120, metadata={"Software": None})
    return fig


def svg_text(fig: Figure) -> str:
    """The figure as an inline ``<svg>`` element (no XML prologue; no date, so reproducible)."""
    from matplotlib import rc_context

    buffer = io.StringIO()
    with rc_context({"svg.hashsalt": "goodput-sim"}):  # element ids from content alone
        fig.savefig(buffer, format="svg", metadata={"Date": None})
    text = buffer.getvalue()
    text = re.sub(r"\s*<metadata>.*?</metadata>", "", text, flags=re.DOTALL)
    return text[text.index("<svg") :]


def save_figure(fig: Figure, path: Path) -> None:
    """Write a figure as PNG, SVG or PDF (by suffix), without the metadata that changes per
    run."""
    suffix = path.suffix.lower()
    metadata = {".png": {"Software": None}, ".pdf": {"CreationDate": None}}.get(
        suffix, {"Date": None}
    )
    fig.savefig(path, dpi=120, metadata=metadata)


def _log_scale(ax, which: str) -> None:
    """``ax``'s ``which`` ("x" or "y") axis on a log scale, labelled at 1, 2 and 5 per decade
    in plain numbers (0.02, 0.05, 0.1): short labels that stay apart, unlike matplotlib's
    2x10^-2 minor labels."""
    from matplotlib.ticker import FuncFormatter, LogLocator, NullFormatter

    ax.set(**{f"{which}scale": "log"})
    axis = ax.xaxis if which == "x" else ax.yaxis
    axis.set_major_locator(LogLocator(subs=(1.0, 2.0, 5.0), numticks=9))
    axis.set_major_formatter(FuncFormatter(lambda x, _: f"{x:g}"))
    axis.set_minor_formatter(NullFormatter())


def legend_outside(ax, source=None, **options) -> None:
    """The legend (of ``source``'s artists, by default ``ax``'s) right of ``ax``, where it
    covers no line, bar or interval."""
    handles, labels = (source or ax).get_legend_handles_labels()
    if handles:
        options = {"fontsize": "small", **options}
        ax.legend(handles, labels, loc="upper left", bbox_to_anchor=(1.01, 1.0), **options)


def _titled(ax, title: str, caption: str) -> None:
    """``title: caption``, wrapped to the width of a figure."""
    text = f"{title}: {caption}" if caption else title
    ax.set_title("\n".join(textwrap.wrap(text, 80)), fontsize="medium")


def jct_cdf(
    jobs_by_policy: dict[str, pd.DataFrame], path: Path | None = None, caption: str = ""
) -> Figure:
    """Empirical CDF of job completion time (hours, log scale) per policy, over all jobs: a
    policy that left jobs unfinished stops below 1, marked with a cross and counted in the
    legend, rather than dropping them silently. Policies whose curves coincide
    (:func:`cdf_coincidences`) say so in the legend."""
    fig = new_figure()
    ax = fig.subplots()
    styles = policy_styles(list(jobs_by_policy))
    same = _legend_suffixes(cdf_coincidences(jobs_by_policy))
    for k, (name, jobs) in enumerate(jobs_by_policy.items()):
        finished = jobs["finished"].astype(bool)
        jct = np.sort(jobs.loc[finished, "jct"].to_numpy(dtype=float)) / 3600.0
        unfinished = int((~finished).sum())
        label = name + (f" ({unfinished} unfinished)" if unfinished else "") + same.get(name, "")
        line = _line(styles[name], jct.size, k, len(jobs_by_policy))
        if jct.size:
            ax.step(jct, np.arange(1, jct.size + 1) / len(jobs), where="post", label=label, **line)
            if unfinished:
                ax.plot(
                    jct[-1], jct.size / len(jobs), marker="x", markersize=9, color=line["color"]
                )
    _log_scale(ax, "x")
    ax.set_xlabel("job completion time (hours)")
    ax.set_ylabel("fraction of jobs")
    ax.set_ylim(0, 1.02)
    ax.grid(True, which="both", alpha=0.3)
    legend_outside(ax)
    _titled(ax, "JCT CDF", caption)
    return _save(fig, path)


def avg_jct_bars(
    summaries: dict[str, dict],
    path: Path | None = None,
    caption: str = "",
    intervals: dict[str, tuple[float, float]] | None = None,
) -> Figure:
    """Average JCT per policy (hours), annotated, with 95% confidence intervals (seconds, per
    policy) when given."""
    names = list(summaries)
    values = np.array([summaries[n]["avg_jct"] for n in names], dtype=float) / 3600.0
    errors = None
    if intervals:
        bounds = np.array([intervals.get(n, (np.nan, np.nan)) for n in names], dtype=float) / 3600
        errors = np.nan_to_num(np.abs(np.stack([values - bounds[:, 0], bounds[:, 1] - values])))
    fig = new_figure(max(6.4, 1.1 * len(names) + 1.5))
    ax = fig.subplots()
    colors = policy_colors(names)
    x = np.arange(len(names))
    bars = ax.bar(x, values, color=[colors[n] for n in names], yerr=errors, capsize=4)
    tops = values + (errors[1] if errors is not None else 0.0)
    for bar, value, top in zip(bars, values, tops, strict=True):
        ax.annotate(  # above the interval's cap, never across it
            f"{value:.3g}",
            (bar.get_x() + bar.get_width() / 2, top),
            ha="center",
            va="bottom",
            xytext=(0, 3),
            textcoords="offset points",
            fontsize="small",
        )
    finite = np.asarray(tops, dtype=float)[np.isfinite(tops)]  # none: no run finished a job
    ax.set_ylim(0, 1.15 * max(float(finite.max()) if finite.size else 0.0, 1e-9))
    ax.set_xticks(x, ["\n".join(textwrap.wrap(n, 14)) for n in names])
    ax.set_ylabel("average JCT (hours)")
    ax.set_xlabel("policy")
    ci = ", 95% bootstrap CI" if intervals else ""
    _titled(ax, f"Average job completion time{ci}", caption)
    return _save(fig, path)


def interval_bars(table: pd.DataFrame, path: Path | None = None, caption: str = "") -> Figure:
    """:func:`avg_jct_bars` of one load's rows of the ``report`` policy table (columns policy,
    avg_jct_s, ci_low_s, ci_high_s), with their intervals."""
    summaries = {r.policy: {"avg_jct": r.avg_jct_s} for r in table.itertuples()}
    intervals = {r.policy: (r.ci_low_s, r.ci_high_s) for r in table.itertuples()}
    return avg_jct_bars(summaries, path, caption, intervals)


def jct_against_load(table: pd.DataFrame, caption: str = "") -> Figure:
    """Mean average JCT (hours) against load, one line per policy with its 95% interval (the
    ``report`` table: columns load, policy, avg_jct_s, ci_low_s, ci_high_s); lines that
    coincide (:func:`load_coincidences`) say so in the legend."""
    fig = new_figure(7.0, 4.4)
    ax = fig.subplots()
    names = list(dict.fromkeys(table["policy"]))
    styles = policy_styles(names)
    same = _legend_suffixes(load_coincidences(table))
    for k, (name, part) in enumerate(table.groupby("policy", sort=False)):
        part = part.sort_values("load")
        line = _line(styles[name], len(part), k, len(names))
        color = line["color"]
        line["markevery"] = 1  # a few loads: each one marked
        label = name + same.get(name, "")
        ax.plot(part["load"], part["avg_jct_s"] / 3600, label=label, **line)
        ax.fill_between(
            part["load"],
            part["ci_low_s"] / 3600,
            part["ci_high_s"] / 3600,
            color=color,
            alpha=0.18,
            linewidth=0,
        )
    ax.set_xlabel("load (arrival rate relative to 1.0x)")
    ax.set_ylabel("average JCT (hours)")
    ax.grid(True, alpha=0.3)
    legend_outside(ax)
    _titled(ax, "Average JCT against load, 95% bootstrap CI", caption)
    return _save(fig, None)


def batch_rules_figure(
    report: pd.DataFrame,
    path: Path | None = None,
    workloads: list[str] | None = None,
    cluster: str = "",
) -> Figure:
    """Each batch agent against the fixed batch under the same scheduler, a row per progress
    model and tail geometry: average JCT (left), seed 004's own objective (middle:
    learning-rate-weighted noise under ``noise``, final loss at the static run's rate under
    ``lr-aware``, log scale) and the final loss with the rate tuned per arm (right; a black
    mark: on the jobs the agent changed only), with 95% paired bootstrap intervals. Below 1
    the agent beats the fixed batch."""
    if "progress" not in report:
        report = report.assign(progress="noise")
    if "geometry" not in report:
        report = report.assign(geometry="examples")
    cases = list(dict.fromkeys(zip(report["progress"], report["geometry"], strict=True)))
    objective = {"noise": "lr_noise", "lr-aware": "final_loss"}
    names = {
        "jct": "average JCT",
        "lr_noise": "LR-weighted noise",
        "final_loss": "final loss",
        "final_loss_tuned": "final loss, tuned rate",
    }
    fig = new_figure(15.0, 3.6 * len(cases))
    axes = np.atleast_2d(fig.subplots(len(cases), 3, squeeze=False))
    everyone = [a for a in dict.fromkeys(report["agent"]) if a != "fixed"]
    colors = {agent: PALETTE[k % len(PALETTE)] for k, agent in enumerate(everyone)}
    for row, (model, geometry) in enumerate(cases):
        mine = report[(report["progress"] == model) & (report["geometry"] == geometry)]
        mine = mine[mine["agent"] != "fixed"]
        schedulers = list(dict.fromkeys(mine["scheduler"]))
        agents = list(dict.fromkeys(mine["agent"]))
        width = 0.8 / max(len(agents), 1)
        keys = ("jct", objective.get(model, "lr_noise"), "final_loss_tuned")
        for ax, key in zip(axes[row], keys, strict=True):
            if f"{key}_vs_fixed" not in mine:
                ax.set_visible(False)
                continue
            for k, agent in enumerate(agents):
                part = mine[mine["agent"] == agent].set_index("scheduler").reindex(schedulers)
                x = np.arange(len(schedulers)) + (k - (len(agents) - 1) / 2) * width
                mean, errors = _versus_fixed(part, key)
                base = 1.0 if key.startswith("final_loss") else 0.0  # ratios of loss: from 1
                ax.bar(
                    x,
                    mean - base,
                    width,
                    base,
                    yerr=errors,
                    capsize=2,
                    label=agent,
                    color=colors[agent],
                )
                if key == "final_loss_tuned" and f"{key}_changed_vs_fixed" in part:
                    mean, errors = _versus_fixed(part, f"{key}_changed")
                    label = "changed jobs only" if k == 0 else None
                    ax.errorbar(x, mean, errors, fmt="D", color="black", ms=3, label=label)
            ax.axhline(1.0, color="black", linewidth=0.8)
            low, high = _limits_about_one(mine, key)
            if key.startswith("final_loss") and high / low > 3:  # factors: a log scale
                _log_scale(ax, "y")
            elif key.startswith("final_loss"):  # percents: a range about 1
                ax.set_ylim(low, high)
            ax.set_xticks(np.arange(len(schedulers)), schedulers)
            ax.set_ylabel(f"{names.get(key, key)} / fixed's", fontsize="small")
            where = f"{model}, {geometry} geometry" if model == "lr-aware" else model
            ax.set_title(f"{where}: {names.get(key, key)}", fontsize="medium")
    legend_outside(axes[0][-1], axes[0][-1], title="batch agent", fontsize="x-small")
    count = len(workloads or [])
    on = f" on {cluster}" if cluster else ""
    fig.suptitle(f"Batch agents against the fixed batch: {count} workload(s){on}, 95% paired CI")
    return _save(fig, path)


def _versus_fixed(part: pd.DataFrame, key: str) -> tuple[np.ndarray, np.ndarray]:
    """(ratio to the fixed batch, its interval as error bars) of report rows."""
    mean = part[f"{key}_vs_fixed"].to_numpy(dtype=float)
    low = part[f"{key}_vs_fixed_ci_low"].to_numpy(dtype=float)
    high = part[f"{key}_vs_fixed_ci_high"].to_numpy(dtype=float)
    return mean, np.nan_to_num(np.stack([mean - low, high - mean]))


def _limits_about_one(rows: pd.DataFrame, key: str) -> tuple[float, float]:
    """A y range about 1 that holds every ratio of ``key`` to the fixed batch and its interval
    (changed jobs' too): ratios that differ from 1 by percents vanish on a range from 0."""
    columns = [c for c in rows if c.startswith(f"{key}_") and "_vs_fixed" in c]
    columns = [c for c in columns if key == "final_loss_tuned" or "tuned" not in c]
    values = rows[columns].to_numpy(dtype=float)
    values = values[np.isfinite(values)]
    low, high = (min(values.min(), 1.0), max(values.max(), 1.0)) if values.size else (0.9, 1.1)
    pad = 0.1 * (high - low) or 0.05
    return low - pad, high + pad


def critical_batch_figure(trajectories, path: Path | None = None) -> Figure:
    """The critical batch (gradient noise scale, examples, log scale) against the fraction of
    training progress, one line per application (seed 002)."""
    fig = new_figure()
    ax = fig.subplots()
    for k, t in enumerate(trajectories):
        ax.plot(t.progress, t.noise_scale, label=t.application, color=PALETTE[k % len(PALETTE)])
    _log_scale(ax, "y")
    ax.set_xlabel("fraction of training progress")
    ax.set_ylabel("critical batch B_noise (examples)")
    ax.set_title("Critical batch across training, bundled profiles (batch M0)")
    ax.grid(True, which="both", alpha=0.3)
    legend_outside(ax)
    return _save(fig, path)


def caption_of(manifests: dict[str, dict], policies: bool = True) -> str:
    """Workload, cluster and (unless ``policies`` is false, for a figure of one policy) the
    policies of saved runs, for a figure's title. An autoscaled cluster shows its node range."""
    first = next(iter(manifests.values()))
    workload = Path(str(first.get("inputs", {}).get("workload") or "?")).stem
    source = first.get("workload_source") or {}
    if source.get("kind") == "file":
        workload = Path(source["path"]).stem
    load = source.get("load", 1.0)
    text = f"{workload} at load {load:g}, {cluster_text(first)} GPUs"
    return f"{text}, {', '.join(manifests)}" if policies else text


def cluster_text(manifest: dict) -> str:
    """``16x4``, ``8x4+4x8`` per node group, or ``4-32x4`` when autoscaling bounds the nodes
    (a group's own bounds, else the run's)."""
    groups = manifest.get("cluster", {}).get("groups") or [{}]
    scaling = (manifest.get("config") or {}).get("autoscale") or {}
    parts = []
    for g in groups:
        low = g.get("min_nodes", scaling.get("min_nodes") if len(groups) == 1 else None)
        high = g.get("max_nodes", scaling.get("max_nodes") if len(groups) == 1 else None)
        nodes = g.get("nodes", "?")
        if scaling and (low is not None or high is not None):
            nodes = f"{0 if low is None else low}-{nodes if high is None else high}"
        parts.append(f"{nodes}x{g.get('gpus_per_node', '?')}")
    return "+".join(parts)


def jct_by_application(jobs_by_policy: dict[str, pd.DataFrame], caption: str = "") -> Figure:
    """Average JCT (hours) of finished jobs per application, one bar group per application."""
    apps = sorted(set().union(*(set(j["application"]) for j in jobs_by_policy.values())))
    fig = new_figure(8.0, 4.2)
    ax = fig.subplots()
    width = 0.8 / max(len(jobs_by_policy), 1)
    styles = policy_styles(list(jobs_by_policy))
    for k, (name, jobs) in enumerate(jobs_by_policy.items()):
        done = jobs[jobs["finished"].astype(bool)]
        means = done.groupby("application")["jct"].mean().reindex(apps) / 3600
        x = np.arange(len(apps)) + (k - (len(jobs_by_policy) - 1) / 2) * width
        style = styles[name]
        edge = "white" if style.hatch else None  # a hatch shows in the edge colour
        ax.bar(
            x,
            means.to_numpy(dtype=float),
            width,
            label=name,
            color=style.color,
            hatch=style.hatch or None,
            edgecolor=edge,
        )
    ax.set_xticks(np.arange(len(apps)), apps)
    ax.set_ylabel("average JCT of finished jobs (hours)")
    _titled(ax, "JCT by application", caption)
    legend_outside(ax)
    return _save(fig, None)


def utilization_over_time(
    rounds_by_policy: dict[str, pd.DataFrame], total_gpus: int, caption: str = ""
) -> Figure:
    """GPUs in use (fraction of the cluster) and queued jobs over time, per policy; policies
    whose curves coincide (:func:`utilization_coincidences`) say so in the legend."""
    from matplotlib.ticker import MaxNLocator

    fig = new_figure(8.0, 5.0)
    top, bottom = fig.subplots(2, 1, sharex=True)
    styles = policy_styles(list(rounds_by_policy))
    same = _legend_suffixes(utilization_coincidences(rounds_by_policy))
    for k, (name, rounds) in enumerate(rounds_by_policy.items()):
        hours = rounds["time"].to_numpy(dtype=float) / 3600
        line = _line(styles[name], len(hours), k, len(rounds_by_policy))
        label = name + same.get(name, "")
        top.step(hours, rounds["gpus_in_use"] / total_gpus, where="post", label=label, **line)
        bottom.step(hours, rounds["queued"], where="post", **line)
    top.set_ylabel("GPUs in use\n(fraction)")
    top.set_ylim(0, 1.05)
    legend_outside(top)
    bottom.set_ylabel("queued jobs")
    bottom.set_ylim(bottom=0)
    bottom.yaxis.set_major_locator(MaxNLocator(integer=True))
    bottom.set_xlabel("time (hours)")
    fig.align_ylabels([top, bottom])
    _titled(top, "Utilisation and queue", caption)
    return _save(fig, None)


def allocation_timeline(
    rounds: pd.DataFrame, policy: str, caption: str = "", most: int | None = None
) -> Figure:
    """GPUs held by each job over time, one lane per job (colour: GPU count, on a colour bar
    from 0 to ``most`` GPUs, by default the most this run gave one job; figures of several
    runs given one ``most`` share their colours). A job's consecutive rounds on the same GPU
    count are one bar, and all bars one collection, so that a long run draws quickly."""
    from matplotlib import colormaps
    from matplotlib.cm import ScalarMappable
    from matplotlib.collections import PolyCollection
    from matplotlib.colors import Normalize
    from matplotlib.ticker import MaxNLocator

    lanes, starts, ends, held = timeline_segments(rounds)
    jobs = max(lanes, default=-1) + 1
    fig = new_figure(9.0, max(3.0, min(12.0, 0.04 * jobs + 2)))
    ax = fig.subplots()
    top = most or max(held, default=1)
    scale = ScalarMappable(Normalize(0, top), colormaps["viridis"])
    boxes = [
        ((s, k - 0.45), (e, k - 0.45), (e, k + 0.45), (s, k + 0.45))
        for k, s, e in zip(lanes, starts, ends, strict=True)
    ]
    colors = scale.to_rgba(np.asarray(held, dtype=float))
    ax.add_collection(PolyCollection(boxes, facecolors=colors, linewidths=0))
    if boxes:  # else the default view: nothing was allocated
        ax.autoscale_view()
    bar = fig.colorbar(scale, ax=ax, label="GPUs held", pad=0.02)
    bar.locator = MaxNLocator(integer=True)
    bar.update_ticks()
    ax.set_xlabel("time (hours)")
    ax.set_ylabel("job (in order of first allocation)")
    ax.set_ylim(-1, max(jobs, 1))
    _titled(ax, f"GPUs per job over time, {policy}", caption)
    return _save(fig, None)


def timeline_segments(
    rounds: pd.DataFrame,
) -> tuple[list[int], list[float], list[float], list[int]]:
    """The bars of an allocation timeline: lane (jobs in order of first allocation), start and
    end (hours) and GPUs held, one bar per run of consecutive rounds on the same GPU count."""
    lanes: list[int] = []
    starts: list[float] = []
    ends: list[float] = []
    held: list[int] = []
    names: dict[str, int] = {}
    last: dict[int, int] = {}  # lane -> its latest bar
    times = rounds["time"].to_numpy(dtype=float)
    for i, text in enumerate(rounds["allocations"].fillna("")):
        end = times[i + 1] if i + 1 < len(times) else times[i] + 60.0
        for name, (gpus, _) in parse_allocations(text).items():
            lane = names.setdefault(name, len(names))
            k = last.get(lane)
            if k is not None and held[k] == gpus and ends[k] == times[i] / 3600:
                ends[k] = end / 3600
                continue
            last[lane] = len(lanes)
            lanes.append(lane)
            starts.append(times[i] / 3600)
            ends.append(end / 3600)
            held.append(gpus)
    return lanes, starts, ends, held


def parse_allocations(text: str) -> dict[str, tuple[int, int]]:
    """``rounds.csv`` allocations (``name=GPUs.per.node@batch;...``) as name -> (GPUs, batch)."""
    out = {}
    for entry in filter(None, str(text).split(";")):
        name, rest = entry.split("=")
        gpus, _, batch = rest.partition("@")
        out[name] = (sum(int(g) for g in gpus.split(".")), int(float(batch)) if batch else 0)
    return out


def job_traces(rounds: pd.DataFrame, names: list[str], caption: str = "") -> Figure:
    """GPUs and total batch size over time for the chosen jobs (zero while a job waits)."""
    times = rounds["time"].to_numpy(dtype=float) / 3600
    parsed = [parse_allocations(t) for t in rounds["allocations"].fillna("")]
    fig = new_figure(8.0, 5.0)
    top, bottom = fig.subplots(2, 1, sharex=True)
    for k, name in enumerate(names):
        gpus = np.array([p.get(name, (0, 0))[0] for p in parsed], dtype=float)
        batch = np.array([p.get(name, (0, np.nan))[1] for p in parsed], dtype=float)
        batch[gpus == 0] = np.nan
        held = np.flatnonzero(gpus)
        if held.size:  # from its first allocation to its last
            span = slice(held[0], held[-1] + 2)
            color = PALETTE[k % len(PALETTE)]
            top.step(times[span], gpus[span], where="post", label=name, color=color)
            bottom.step(times[span], batch[span], where="post", color=color)
    top.set_ylabel("GPUs")
    legend_outside(top)
    bottom.set_ylabel("total batch\n(examples)")
    _log_scale(bottom, "y")
    bottom.set_xlabel("time (hours)")
    fig.align_ylabels([top, bottom])
    _titled(top, "GPUs and batch size over time", caption)
    return _save(fig, None)


def cluster_size_over_time(
    rounds_by_policy: dict[str, pd.DataFrame], gpus_per_node: int, caption: str = ""
) -> Figure:
    """Nodes up (solid) and booting or under repair (dotted) over time, and the GPU
    utilisation of the nodes up, per policy: what autoscaling and failures did to the cluster.
    The GPUs up are each round's ``gpus_up`` where recorded (clusters of several node shapes),
    else nodes up x ``gpus_per_node`` (one node shape)."""
    fig = new_figure(8.0, 5.0)
    top, bottom = fig.subplots(2, 1, sharex=True)
    styles = policy_styles(list(rounds_by_policy))
    for k, (name, rounds) in enumerate(rounds_by_policy.items()):
        hours = rounds["time"].to_numpy(dtype=float) / 3600
        line = _line(styles[name], len(hours), k, len(rounds_by_policy))
        color = line["color"]
        up = rounds["nodes_up"].to_numpy(dtype=float)
        offline = (rounds["nodes_starting"] + rounds["nodes_down"]).to_numpy(dtype=float)
        top.step(hours, up, where="post", label=name, **line)
        if offline.any():
            top.step(hours, offline, where="post", color=color, linestyle=":")
        if "gpus_up" in rounds:
            gpus_up = rounds["gpus_up"].to_numpy(dtype=float)
        else:
            gpus_up = up * gpus_per_node
        with np.errstate(divide="ignore", invalid="ignore"):
            used = rounds["gpus_in_use"].to_numpy(dtype=float) / gpus_up
        bottom.step(hours, used, where="post", **line)
    top.set_ylabel("nodes up\n(dotted: booting\nor failed)")
    legend_outside(top)
    bottom.set_ylabel("GPUs in use\n(fraction of up)")
    bottom.set_ylim(0, 1.05)
    bottom.set_xlabel("time (hours)")
    fig.align_ylabels([top, bottom])
    _titled(top, "Cluster size and utilisation", caption)
    return _save(fig, None)


def gpu_hours_by_type(summaries: dict[str, dict], caption: str = "") -> Figure:
    """GPU-hours each policy used on each GPU type, stacked (runs on several GPU types)."""
    names = list(summaries)
    first = next(iter(summaries.values()))
    types = [
        k[len("gpu_hours_") :]
        for k in first
        if k.startswith("gpu_hours_")
        and k != "gpu_hours_per_job"
        and all(k in s for s in summaries.values())
    ]
    fig = new_figure(7.0, 4.2)
    ax = fig.subplots()
    bottom = np.zeros(len(names))
    for k, gpu_type in enumerate(types):
        values = np.array([summaries[n][f"gpu_hours_{gpu_type}"] for n in names], dtype=float)
        ax.bar(names, values, bottom=bottom, label=gpu_type, color=PALETTE[k % len(PALETTE)])
        bottom += values
    ax.set_ylabel("GPU-hours allocated")
    ax.set_xlabel("policy")
    legend_outside(ax, title="GPU type")
    _titled(ax, "GPU-hours by GPU type", caption)
    return _save(fig, None)
