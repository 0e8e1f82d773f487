"""The figure kinds ``goodput-sim plot`` draws from saved results
(:mod:`goodput_sim.results.report`), each by name, so the command, the tests and notebooks
draw the same figure."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

from goodput_sim.errors import InputError

if TYPE_CHECKING:  # the kinds below are read by the CLI at start-up, without matplotlib
    from matplotlib.figure import Figure

    from goodput_sim.results.report import Results

RUN_KINDS = ("cdf", "bars", "apps", "types", "utilization", "nodes", "timeline", "jobs")
SWEEP_KINDS = ("load", "bars")


def draw(
    data: Results,
    kind: str,
    policy: str | None = None,
    jobs: list[str] | None = None,
    load: float | None = None,
    started: Callable[[], None] | None = None,
) -> Figure:
    """The ``kind`` figure of ``data``: ``policy`` picks the run a timeline or jobs figure
    shows (default: the first), ``jobs`` the jobs (default: the three longest), ``load`` the
    load of a sweep's bars. One-line errors for what the results cannot show, all raised
    before ``started`` is called and the drawing begins."""
    from goodput_sim.results import plots
    from goodput_sim.results.report import policy_table

    allowed = SWEEP_KINDS if data.kind == "sweep" else RUN_KINDS
    if kind not in allowed:
        raise InputError("--kind", f"{kind} does not apply to a {data.kind}; use {allowed}")
    table = policy_table(data) if kind in ("load", "bars") else None
    if kind == "bars" and data.kind == "sweep":
        loads = sorted(float(x) for x in table["load"].unique())
        listed = ", ".join(f"{x:g}" for x in loads)
        if load is not None and load not in loads:
            raise InputError("--load", f"no runs at load {load:g}; loads: {listed}")
        if load is None and len(loads) > 1:
            raise InputError(
                "--kind", f"bars draws one load; pick one with --load (loads: {listed})"
            )
        table = table[table["load"] == (loads[0] if load is None else load)]
    summaries = {n: m["summary"] for n, m in data.manifests.items()}
    if kind == "types" and not all("type_moves" in s for s in summaries.values()):
        raise InputError("--kind", "types needs runs on profiles by GPU type")
    over_time = kind in ("utilization", "nodes", "timeline", "jobs")
    if over_time and not data.rounds:
        raise InputError(data.folder, "has no rounds.csv to draw over time")
    name = policy or next(iter(data.rounds), None)
    if name not in data.rounds:  # a policy's name stands for its one run ("fifo (stopped early)")
        labels = data.runs.loc[data.runs["policy"] == name, "label"].tolist()
        name = labels[0] if len(labels) == 1 and labels[0] in data.rounds else name
    if kind in ("timeline", "jobs") and name not in data.rounds:
        raise InputError("--policy", f"no results of {name!r}; found {sorted(data.rounds)}")
    chosen = _jobs(data, name, jobs) if kind == "jobs" else []
    if started is not None:
        started()
    caption = data.caption()
    if kind == "load":
        return plots.jct_against_load(table, caption)
    if kind == "bars":
        return plots.interval_bars(table, caption=caption)
    if kind == "cdf":
        return plots.jct_cdf(data.jobs, caption=caption)
    if kind == "apps":
        return plots.jct_by_application(data.jobs, caption)
    if kind == "types":
        return plots.gpu_hours_by_type(summaries, caption)
    cluster = next(iter(data.clusters.values()))  # read from the manifest's groups, checked
    if kind == "utilization":
        return plots.utilization_over_time(data.rounds, cluster.total_gpus, caption)
    if kind == "nodes":
        return plots.cluster_size_over_time(data.rounds, cluster.gpus_per_node, caption)
    alone = data.caption(policies=False)
    if kind == "timeline":
        return plots.allocation_timeline(data.rounds[name], name, alone)
    return plots.job_traces(data.rounds[name], chosen, f"{name}, {alone}")


def _jobs(data: Results, policy: str, chosen: list[str] | None) -> list[str]:
    """The jobs a jobs figure draws: those chosen, checked, or the three longest."""
    from goodput_sim.results.html_report import longest_jobs

    names = list(data.jobs[policy]["name"])
    chosen = chosen or longest_jobs(data.jobs[policy])  # as the HTML report picks
    unknown = sorted(set(chosen) - set(names))
    if unknown:
        shown = ", ".join(names[:10]) + (", ..." if len(names) > 10 else "")
        raise InputError("--jobs", f"unknown job(s) {', '.join(unknown)}; the run has {shown}")
    return chosen
