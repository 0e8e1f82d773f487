"""The HTML report carries compare's columns, every policy's allocation timeline and a note
where curves coincide, and the same results give the same bytes; ``goodput-sim demo`` writes
the report and says where (issue 50)."""

from __future__ import annotations

import html
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from click.testing import CliRunner
from conftest import TWO_JOBS

from goodput_sim.cli import main
from goodput_sim.results import plots
from goodput_sim.results.report import load_results

ROOT = Path(__file__).resolve().parents[1]


def _invoke(*args) -> str:
    result = CliRunner().invoke(main, [str(a) for a in args])
    assert result.exit_code == 0, result.output
    return result.output


@pytest.fixture(scope="module")
def spot(tmp_path_factory) -> tuple[Path, str]:
    """fifo and goodput on two jobs, on a priced cluster whose nodes fail (so that every
    optional column of compare's table is shown): the results folder and compare's output."""
    root = tmp_path_factory.mktemp("spot")
    (root / "w.csv").write_text(TWO_JOBS)
    out = _invoke(
        "compare", "--policies", "fifo,goodput", "--workload", root / "w.csv", "--cluster",
        ROOT / "configs" / "cluster-racks-spot.yaml", "--mtbf", "50", "--quiet",
        "--out", root / "cmp",
    )  # fmt: skip
    return root / "cmp", out


def _page(results: Path, tmp_path: Path) -> str:
    _invoke("report", results, "-o", tmp_path / "r.html")
    return (tmp_path / "r.html").read_text()


def _compare_table(page: str) -> tuple[list[str], list[list[str]]]:
    """The headers and rows of the report's first table, under its Comparison heading."""
    section = page[page.index("<h2>Comparison</h2>") :]
    table = section[: section.index("</table>")]
    headers = [html.unescape(h) for h in re.findall(r"<th>(.*?)</th>", table)]
    body = table[table.index("<tbody>") :]
    rows = [
        [html.unescape(c) for c in re.findall(r"<td[^>]*>(.*?)</td>", row)]
        for row in re.findall(r"<tr>(.*?)</tr>", body)
    ]
    return headers, rows


def _words(line: str) -> str:
    return re.sub(r"\s+", " ", line).strip()


def test_the_report_has_the_columns_and_cells_of_compares_table(spot, tmp_path):
    folder, printed = spot
    headers, rows = _compare_table(_page(folder, tmp_path))
    lines = printed.splitlines()
    top = next(k for k, line in enumerate(lines) if line.startswith("policy "))
    assert _words(lines[top]) == " ".join(headers)  # the same names, in the same order
    for header in ("avg JCT", "p99", "GPU-h/job", "node-h", "cost", "avg w/o fail", "wall"):
        assert header in headers
    assert [r[0] for r in rows] == ["fifo", "goodput"]
    for k, row in enumerate(rows):  # the same cells, the wall time included
        assert _words(lines[top + 1 + k]) == " ".join(row)


def test_every_policy_has_its_allocation_timeline(spot, tmp_path):
    page = _page(spot[0], tmp_path)
    for policy in ("fifo", "goodput"):
        assert page.count(f"<figcaption>Allocation timeline of {policy} ") == 1
        assert page.count(f"GPUs per job over time, {policy}") == 1  # the figure's title
    assert page.count("<figure>") == 7  # CDF, bars, applications, utilisation, 2 timelines, jobs
    assert 'class="coincide"' not in page  # fifo and goodput differ


@pytest.fixture(scope="module")
def twins(saved_run, tmp_path_factory) -> Path:
    """One run twice: a comparison of two identical results."""
    root = tmp_path_factory.mktemp("twins") / "twins"
    for name in ("a", "b"):
        shutil.copytree(saved_run, root / name)
    return root


def test_curves_that_coincide_are_named_under_the_figure(twins, tmp_path):
    assert load_results(twins).labels == ["fifo [a]", "fifo [b]"]
    page = _page(twins, tmp_path)
    notes = re.findall(r'<p class="coincide">(.*?)</p>', page)
    assert [html.unescape(n).split(".")[0] for n in notes] == [
        "fifo [a] and fifo [b] coincide: identical JCTs",
        "fifo [a] and fifo [b] coincide: identical GPUs in use and queue, round by round",
    ]
    assert page.count("fifo [b] (same as fifo [a])") == 2  # the legends of both figures


def test_coinciding_curves_within_a_tolerance():
    base = np.array([1.0, 2.0, 3.0])
    found = plots.coinciding(
        {"a": (base,), "b": (base * (1 + 1e-5),), "c": (base * 1.01,), "d": (base,), "e": ([],)}
    )
    assert found == [plots.Coincidence(("a", "b", "d"), identical=False)]
    assert found[0].text("JCTs") == "a, b and d coincide: JCTs within 0.1%"
    assert plots.coinciding({"a": (base,), "d": (base.copy(),)})[0].identical
    assert plots.coinciding({"a": (base,), "s": (base[:2],)}) == []  # other shapes


def test_the_same_results_give_the_same_bytes(twins, tmp_path):
    """Two processes with different string hashing write byte-identical reports: no date, no
    random id, no order of a set."""
    pages = []
    for seed in ("1", "2"):
        page = tmp_path / f"r{seed}.html"
        env = {**os.environ, "PYTHONHASHSEED": seed}
        command = [sys.executable, "-m", "goodput_sim", "report", str(twins), "-o", str(page)]
        done = subprocess.run(command, env=env, capture_output=True, text=True, timeout=300)
        assert done.returncode == 0, done.stderr
        pages.append(page.read_bytes())
    assert pages[0] == pages[1]


def test_demo_writes_its_html_report_and_says_where(tmp_path, monkeypatch):
    """demo on two jobs and two policies (the full demo takes a minute): its results folder
    holds report.html, a report of its results, and the output's last line says where."""
    from goodput_sim.cli import sim_cmd

    (tmp_path / "w.csv").write_text(TWO_JOBS)
    monkeypatch.setattr(sim_cmd, "DEFAULT_POLICIES", ("fifo", "goodput"))
    monkeypatch.setattr(sim_cmd, "bundled_workload", lambda: tmp_path / "w.csv")
    out = tmp_path / "demo"
    result = CliRunner().invoke(main, ["demo", "--out", str(out), "--workers", "1", "--quiet"])
    assert result.exit_code == 0, result.output
    report = out / "report.html"
    said = [line for line in result.stdout.splitlines() if "report.html" in line]
    assert said == [f"HTML report: {report}"] == result.stdout.splitlines()[-1:]
    page = report.read_text()
    assert "<h1>goodput-sim report: demo</h1>" in page and "<h2>Comparison</h2>" in page
    assert load_results(out).labels == ["fifo", "goodput"]  # the report beside the runs
    assert sorted(p.name for p in tmp_path.iterdir()) == ["demo", "w.csv"]  # nothing staged left


def test_every_line_differs_from_the_others_in_more_than_colour():
    """Every policy, two variants of goodput and three plugins in one figure: each line has
    its own colour and its own line style and marker, and a policy keeps its style alone."""
    labels = [*plots.POLICY_COLORS, "goodput p=0", "goodput p=1", "mine", "yours", "theirs"]
    styles = plots.policy_styles(labels)
    assert len({(s.linestyle, s.marker) for s in styles.values()}) == len(labels)
    assert len({s.color for s in styles.values()}) == len(labels)
    assert plots.policy_styles(["fifo"])["fifo"] == styles["fifo"]
    assert styles["goodput p=0"].hatch and not styles["goodput"].hatch
