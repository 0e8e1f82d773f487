"""One self-contained HTML report of saved results (``goodput-sim report DIR -o report.html``,
and ``goodput-sim demo``'s ``report.html``): compare's table (the same columns as the terminal
prints, :mod:`goodput_sim.results.compare_table`), the statistics with intervals, the claim
check, inline SVG figures (every policy's allocation timeline among them; a note under a figure
names the policies whose curves coincide) and the manifests, in a single file that opens
offline. The same results give the same bytes. A few lines of script count, once the page has
loaded, the figures and tables the browser drew and any resource that failed, and show the
count at the foot of the page."""

from __future__ import annotations

import html
import json
from pathlib import Path

import pandas as pd

from goodput_sim import __version__
from goodput_sim.results import plots
from goodput_sim.results.compare_table import saved_summary, table_cells
from goodput_sim.results.metrics import PAPER_CLAIM, REFERENCE_POLICY
from goodput_sim.results.report import (
    Baselines,
    Results,
    claim_note,
    claim_table,
    interval_text,
    policy_table,
    statistic_text,
)

_STYLE = """
body { font: 15px/1.45 system-ui, sans-serif; margin: 2em auto; max-width: 1000px; color: #222; }
h1 { font-size: 1.5em; } h2 { font-size: 1.2em; margin-top: 1.8em; }
table { border-collapse: collapse; margin: 0.6em 0; }
th, td { border-bottom: 1px solid #ddd; padding: 0.25em 0.7em; text-align: right; }
th:first-child, td:first-child, td.text { text-align: left; }
figure { margin: 1.2em 0; } figure svg { width: 100%; height: auto; }
figcaption { color: #555; font-size: 0.9em; }
figcaption .coincide { color: #222; margin: 0.3em 0 0; }
pre { background: #f6f6f6; padding: 0.8em; overflow-x: auto; font-size: 0.8em; }
#self-check { color: #555; font-size: 0.85em; margin-top: 2em; }
"""

_SCRIPT_HEAD = """
window.reportErrors = 0;
window.addEventListener("error", function () { window.reportErrors += 1; }, true);
"""

_SCRIPT_FOOT = """
window.addEventListener("load", function () {
  var figures = Array.prototype.slice.call(document.querySelectorAll("figure svg"));
  var drawn = figures.filter(function (svg) {
    var box = svg.getBoundingClientRect();
    return box.width > 0 && box.height > 0 && svg.querySelector("path, use, rect") !== null;
  });
  var tables = Array.prototype.slice.call(document.querySelectorAll("table"));
  var shown = tables.filter(function (t) {
    return t.rows.length > 1 && t.getBoundingClientRect().height > 0;
  });
  var body = document.body.dataset;
  body.figures = figures.length; body.figuresRendered = drawn.length;
  body.tables = tables.length; body.tablesRendered = shown.length;
  body.loadErrors = window.reportErrors;
  document.getElementById("self-check").textContent = "Rendered " + drawn.length + " of " +
    figures.length + " figures and " + shown.length + " of " + tables.length + " tables; " +
    window.reportErrors + " resources failed to load.";
});
"""


def write_html(
    results: Results,
    path: Path,
    baselines: Baselines,
    jobs: list[str] | None = None,
    name: str | None = None,
) -> Path:
    """Write the report of ``results`` to ``path`` (``baselines``: which policies the claim check
    sets goodput against, ``api.baselines``; ``jobs``: whose GPUs and batch to trace in a
    comparison; default the three longest jobs of goodput or the first policy; ``name``: the
    results' name in the title, by default their folder's)."""
    caption = results.caption()
    table = policy_table(results)
    name = html.escape(name or results.folder.name)
    compared = [] if results.kind == "sweep" else ["<h2>Comparison</h2>", _compare_html(results)]
    parts = [
        f"<h1>goodput-sim report: {name}</h1>",
        f"<p>{html.escape(caption)}. goodput-sim {__version__}. Times in hours unless said.</p>",
        *compared,
        "<h2>Average JCT per policy</h2>",
        _policy_html(results, table),
        "<h2>Claim check</h2>",
        _claim_html(results, baselines),
        "<h2>Figures</h2>",
        *(_figure(*drawn) for drawn in _figures(results, table, caption, jobs)),
        "<h2>Manifest</h2>",
        _manifest_html(results),
        '<p id="self-check">Rendering check runs when the page has loaded.</p>',
    ]
    page = (
        "<!DOCTYPE html>\n<html lang='en'><head><meta charset='utf-8'>"
        f"<title>goodput-sim report: {name}</title>"
        f"<style>{_STYLE}</style><script>{_SCRIPT_HEAD}</script></head>\n<body>\n"
        + "\n".join(parts)
        + f"\n<script>{_SCRIPT_FOOT}</script>\n</body></html>\n"
    )
    path.write_text(page, encoding="utf-8")
    return path


def _table(frame: pd.DataFrame, text_columns: tuple[str, ...] = ()) -> str:
    head = "".join(f"<th>{html.escape(str(c))}</th>" for c in frame.columns)
    rows = []
    for values in frame.itertuples(index=False):
        cells = []
        for column, value in zip(frame.columns, values, strict=True):
            css = ' class="text"' if column in text_columns else ""
            cells.append(f"<td{css}>{html.escape(str(value))}</td>")
        rows.append("<tr>" + "".join(cells) + "</tr>")
    return f"<table><thead><tr>{head}</tr></thead><tbody>{''.join(rows)}</tbody></table>"


def _hours(seconds: float) -> str:
    return "-" if pd.isna(seconds) else f"{seconds / 3600:.2f}"


def _compare_html(results: Results) -> str:
    """compare's table (the columns ``goodput-sim compare`` prints, from each run's manifest)."""
    summary, autoscaled = saved_summary(results)
    headers, rows = table_cells(summary, autoscaled)
    note = (
        "<p>The table <code>goodput-sim compare</code> prints: JCT statistics over finished jobs "
        "(h: hours), the cluster's GPU utilisation over the makespan, GPU-hours per job, examples "
        "per GPU-second (geometric mean over applications), where they apply the node-hours, "
        "the use of the GPUs provisioned, cost and node failures, and each run's wall-clock "
        "time.</p>"
    )
    return note + _table(pd.DataFrame(rows, columns=headers), (headers[0],))


def _policy_html(results: Results, table: pd.DataFrame) -> str:
    over = "runs (workloads x seeds)" if results.kind == "sweep" else "jobs"
    shown = pd.DataFrame(
        {
            "load": table["load"].map("{:g}".format),
            "policy": table["policy"],
            "runs": table["runs"],
            "avg JCT (h)": table["avg_jct_s"].map(_hours),
            "95% CI (h)": [
                interval_text(lo / 3600, hi / 3600, n, "{:.2f}")
                for lo, hi, n in zip(table["ci_low_s"], table["ci_high_s"], table["n"], strict=True)
            ],
            "p95 JCT (h)": table["p95_jct_s"].map(_hours),
            "makespan (h)": table["makespan_s"].map(_hours),
            "GPU utilisation": table["gpu_utilization"].map("{:.1%}".format),
            "unfinished jobs": table["unfinished"],
            "worst rho": table["ftf_rho_max"].map(lambda v: statistic_text(v, ".2f")),
            "jobs with rho > 1": table["ftf_unfair_fraction"].map(
                lambda v: statistic_text(v, ".0%")
            ),
        }
    )
    note = (
        f"<p>Means over {over}; 95% percentile-bootstrap intervals over the same. rho is "
        "finish-time fairness: a job's JCT over its JCT alone on an equal share of the cluster "
        "(1/N of its GPUs, N the jobs active on average over its life).</p>"
    )
    return note + _table(shown, ("policy",))


def _claim_html(results: Results, baselines: Baselines) -> str:
    note = claim_note(results, baselines)
    if note:
        return f"<p>{html.escape(note)}</p>"
    low, high = PAPER_CLAIM
    claim = claim_table(results, baselines)
    shown = pd.DataFrame(
        {
            "load": claim["load"].map("{:g}".format),
            "policy": claim["policy"],
            "vs": claim["baseline"],
            "pairs": claim["pairs"],
            "avg-JCT reduction": claim["reduction"]
            .astype(float)
            .map(lambda x: statistic_text(x, ".1%")),
            "95% CI": [
                "" if v.startswith("not paired") else interval_text(a, b, n, "{:.1%}")
                for a, b, n, v in zip(
                    claim["ci_low"], claim["ci_high"], claim["pairs"], claim["verdict"], strict=True
                )
            ],
            "against the paper": claim["verdict"],
        }
    )
    return (
        f"<p>Goodput's reduction of average JCT against each baseline (never against its own "
        f"variants), paired on the same runs or jobs; the Pollux paper reports "
        f"{low:.0%}-{high:.0%}.</p>" + _table(shown, ("policy", "vs", "against the paper"))
    )


def _figures(results: Results, table: pd.DataFrame, caption: str, jobs: list[str] | None):
    """(figure, caption, notes) for the results' kind (``table``: their ``policy_table``;
    ``notes``: which policies' curves coincide)."""
    if results.kind == "sweep":
        if table["load"].nunique() > 1:
            notes = [c.text("means and intervals") for c in plots.load_coincidences(table)]
            yield plots.jct_against_load(table, caption), "Mean average JCT against load.", notes
        for load, part in table.groupby("load"):
            fig = plots.interval_bars(part, caption=f"load {load:g}")
            yield fig, f"Average JCT per policy at load {load:g}, 95% CI over runs.", []
        return
    notes = [c.text("JCTs") for c in plots.cdf_coincidences(results.jobs)]
    yield plots.jct_cdf(results.jobs, caption=caption), "JCT CDF over all jobs.", notes
    yield (
        plots.interval_bars(table, caption=caption),
        "Average JCT per policy, 95% bootstrap CI over jobs.",
        [],
    )
    yield plots.jct_by_application(results.jobs, caption), "Average JCT by application.", []
    summaries = {name: m.get("summary", {}) for name, m in results.manifests.items()}
    if all("type_moves" in s for s in summaries.values()):
        fig = plots.gpu_hours_by_type(summaries, caption)
        yield fig, "GPU-hours by GPU type per policy.", []
    if results.rounds:
        total = next(iter(results.clusters.values())).total_gpus
        notes = [
            c.text("GPUs in use and queue, round by round")
            for c in plots.utilization_coincidences(results.rounds)
        ]
        yield (
            plots.utilization_over_time(results.rounds, total, caption),
            "GPU utilisation and queue length over time.",
            notes,
        )
        alone = results.caption(policies=False)
        most = max(
            (max(plots.timeline_segments(r)[3], default=1) for r in results.rounds.values()),
            default=1,
        )
        for label, rounds in results.rounds.items():
            yield (
                plots.allocation_timeline(rounds, label, alone, most),
                f"Allocation timeline of {label} (colours on one scale for every policy).",
                [],
            )
        focus = (
            REFERENCE_POLICY if REFERENCE_POLICY in results.rounds else next(iter(results.rounds))
        )
        chosen = jobs or longest_jobs(results.jobs[focus])
        yield (
            plots.job_traces(results.rounds[focus], chosen, f"{focus}, {alone}"),
            f"GPUs and batch size over time of {', '.join(chosen)} under {focus}.",
            [],
        )


def longest_jobs(jobs: pd.DataFrame, count: int = 3) -> list[str]:
    """The jobs that spent the longest in the cluster (arrival to finish or last round)."""
    done = jobs[jobs["finished"].astype(bool)]
    return list(done.sort_values("jct", ascending=False)["name"].head(count))


COINCIDE_NOTE = (
    "The curve drawn last hides the others; their markers are staggered so that each shows."
)


def _figure(fig, text: str, notes: list[str]) -> str:
    """A figure, its caption and a paragraph per group of policies whose curves coincide."""
    said = "".join(
        f'<p class="coincide">{html.escape(note)}. {COINCIDE_NOTE}</p>' for note in notes
    )
    return (
        f"<figure>{plots.svg_text(fig)}<figcaption>{html.escape(text)}{said}</figcaption></figure>"
    )


def _manifest_html(results: Results) -> str:
    if results.kind == "sweep":
        record = results.folder / "sweep.json"
        blocks = {"sweep.json": json.loads(record.read_text()) if record.is_file() else {}}
    else:
        blocks = {f"{name}/manifest.json": m for name, m in results.manifests.items()}
    return "\n".join(
        f"<details><summary>{html.escape(name)}</summary>"
        f"<pre>{html.escape(json.dumps(data, indent=2, sort_keys=True))}</pre></details>"
        for name, data in blocks.items()
    )
