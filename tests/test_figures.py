"""Every figure kind, drawn from real saved results, has a clean layout (matplotlib's own
geometry: no text over text or over an axes, no value label across an error bar); each policy
keeps its colour whatever else a figure shows; titles say what one figure shows (issue 22)."""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import pytest
from click.testing import CliRunner
from conftest import bundled_slices
from figure_layout import layout_problems

from goodput_sim.cli import main
from goodput_sim.experiments.sweep import sweep
from goodput_sim.results import plots
from goodput_sim.results.figures import RUN_KINDS, draw
from goodput_sim.results.report import load_results

ROOT = Path(__file__).resolve().parents[1]


def _invoke(*args) -> None:
    result = CliRunner().invoke(main, [str(a) for a in args])
    assert result.exit_code == 0, result.output


@pytest.fixture(scope="module")
def saved(tmp_path_factory) -> dict[str, Path]:
    """A comparison, an autoscaled run with failures, a typed comparison and a sweep over
    two loads, all of 20-job workloads."""
    root = tmp_path_factory.mktemp("figures")
    (small,) = bundled_slices(root, 1, 20)
    typed = root / "typed.csv"
    pd.read_csv(ROOT / "traces" / "workloads" / "heterogeneous.csv").iloc[:20].to_csv(typed)
    out = {k: root / k for k in ("comparison", "autoscaled", "typed", "sweep")}
    policies = "fifo,tiresias,optimus,throughput,goodput"
    _invoke("compare", "--policies", policies, "--workload", small, "--out", out["comparison"])
    _invoke(
        "run", "--policy", "goodput", "--workload", small, "--min-nodes", "2", "--max-nodes",
        "8", "--mtbf", "2", "--out", out["autoscaled"],
    )  # fmt: skip
    _invoke(
        "compare", "--policies", "tiresias,sia", "--workload", typed, "--quiet", "--cluster",
        ROOT / "configs" / "cluster-sia-default.yaml", "--profiles",
        ROOT / "traces" / "profiles-sia", "--out", out["typed"],
    )  # fmt: skip
    sweep(["fifo", "goodput"], [small], out["sweep"], loads=(0.5, 1.0), progress=False)
    return out


CASES = [
    *(("comparison", kind) for kind in RUN_KINDS if kind not in ("types", "nodes")),
    ("autoscaled", "nodes"),
    ("autoscaled", "timeline"),
    ("typed", "types"),
    ("typed", "cdf"),
    ("sweep", "load"),
]


@pytest.mark.parametrize(("folder", "kind"), CASES)
def test_no_text_overlaps(saved, folder, kind):
    fig = draw(load_results(saved[folder]), kind)
    assert layout_problems(fig) == []


def test_sweep_bars_per_load_are_clean(saved):
    results = load_results(saved["sweep"])
    for load in (0.5, 1.0):
        assert layout_problems(draw(results, "bars", load=load)) == []


def test_the_overlap_check_catches_overlaps():
    """The check fails where it must: two labels on one spot, a value label across its error
    bar, a legend over the data."""
    fig = plots.new_figure()
    ax = fig.subplots()
    ax.text(0.5, 0.5, "first")
    ax.text(0.5, 0.5, "second")
    assert any("overlaps text" in p for p in layout_problems(fig))
    fig = plots.new_figure()
    ax = fig.subplots()
    ax.bar([0], [1.0], yerr=[[0.5], [0.5]])
    ax.annotate("1.00", (0, 1.0), ha="center", va="center")
    assert any("crosses an error bar" in p for p in layout_problems(fig))
    fig = plots.new_figure()
    ax = fig.subplots()
    ax.plot([0, 1], [0, 1], label="line")
    ax.legend(loc="center")
    assert "a legend covers an axes" in layout_problems(fig)
    fig = plots.new_figure(3, 1.2)  # too short for its two y-labels: they overlap
    top, bottom = fig.subplots(2, 1, sharex=True)
    top.set_ylabel("a long label for a short axes")
    bottom.set_ylabel("another long label here")
    assert layout_problems(fig)


def test_every_policy_keeps_its_colour():
    alone = plots.policy_colors(["tiresias"])
    together = plots.policy_colors(["goodput", "fifo", "sia", "tiresias"])
    assert alone["tiresias"] == together["tiresias"] == plots.POLICY_COLORS["tiresias"]
    assert len(set(plots.POLICY_COLORS.values())) == len(plots.POLICY_COLORS)
    variants = plots.policy_colors(["goodput p=-1", "goodput p=0", "mine"])
    assert variants["goodput p=-1"] == plots.POLICY_COLORS["goodput"]
    assert variants["goodput p=0"] not in plots.POLICY_COLORS.values()
    assert variants["mine"] == "#999999"


def test_titles_say_what_one_figure_shows(saved):
    comparison = load_results(saved["comparison"])
    title = draw(comparison, "timeline", policy="goodput").axes[0].get_title()
    assert "goodput" in title and "tiresias" not in title and "fifo" not in title
    assert "tiresias" in draw(comparison, "cdf").axes[0].get_title()
    timeline = draw(comparison, "timeline")
    assert any(ax.get_ylabel() == "GPUs held" for ax in timeline.axes)  # the colour bar
    autoscaled = draw(load_results(saved["autoscaled"]), "nodes").axes[0].get_title()
    assert "2-8x4 GPUs" in autoscaled.replace("\n", " ")


def test_plot_picks_a_sweeps_load(saved, tmp_path):
    """``plot --kind bars`` on a sweep of several loads asks for ``--load`` (listing them) and
    draws the one given."""
    runner = CliRunner()
    args = ["plot", str(saved["sweep"]), "--kind", "bars", "-o"]
    vague = runner.invoke(main, [*args, str(tmp_path / "a.svg")])
    assert vague.exit_code == 2 and "pick one with --load (loads: 0.5, 1)" in vague.output
    wrong = runner.invoke(main, [*args, str(tmp_path / "b.svg"), "--load", "3"])
    assert wrong.exit_code == 2 and "no runs at load 3" in wrong.output
    drawn = runner.invoke(main, [*args, str(tmp_path / "c.svg"), "--load", "0.5"])
    assert drawn.exit_code == 0 and (tmp_path / "c.svg").is_file()
    assert "load 0.5" in (tmp_path / "c.svg").read_text()
