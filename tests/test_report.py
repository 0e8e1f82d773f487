"""``goodput-sim report``: statistics with bootstrap intervals, the claim check against baselines
only, and a self-contained HTML report checked in a real headless browser."""

from __future__ import annotations

import html
import json
import re
import shutil
import subprocess
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from click.testing import CliRunner

from goodput_sim.api import baselines, bundled_workload
from goodput_sim.cli import main
from goodput_sim.experiments.sweep import sweep
from goodput_sim.results.report import claim_table, load_results, policy_table, report_text


@pytest.fixture(scope="module")
def small_csv(tmp_path_factory) -> Path:
    path = tmp_path_factory.mktemp("w") / "small.csv"
    pd.read_csv(bundled_workload()).iloc[:40].to_csv(path, index=False)
    return path


@pytest.fixture(scope="module")
def comparison(small_csv, tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("cmp") / "cmp"
    result = CliRunner().invoke(
        main,
        [
            "compare",
            "--policies",
            "fifo,tiresias,goodput",
            "--workload",
            str(small_csv),
            "--out",
            str(out),
        ],
    )
    assert result.exit_code == 0, result.output
    return out


@pytest.fixture(scope="module")
def load_sweep(small_csv, tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("sweep")
    sweep(
        ["tiresias", "goodput"], [small_csv], out, seeds=(0, 1, 2), loads=(0.5, 1.0), progress=False
    )
    return out


def test_sweep_statistics_pool_workloads_and_seeds_per_load(load_sweep):
    results = load_results(load_sweep)
    table = policy_table(results)
    assert list(table["load"]) == [0.5, 0.5, 1.0, 1.0] and set(table["runs"]) == {3}
    runs = pd.read_csv(load_sweep / "summary.csv")
    for row in table.itertuples():
        mine = runs[(runs["load"] == row.load) & (runs["policy"] == row.policy)]["avg_jct"]
        assert row.avg_jct_s == pytest.approx(mine.mean())
        # 3 runs per cell: a bootstrap of 3 values is only the values, so no interval
        assert row.n == 3 and np.isnan(row.ci_low_s) and np.isnan(row.ci_high_s)
    claim = claim_table(results, baselines)
    assert list(claim["baseline"]) == ["tiresias", "tiresias"] and set(claim["pairs"]) == {3}
    assert claim["ci_low"].isna().all()
    text = report_text(results, baselines)
    assert "n=3: too few for an interval" in text and "[" not in text.split("claim check")[1]
    for row in claim.itertuples():
        pair = runs[runs["load"] == row.load].pivot_table(
            index="seed", columns="policy", values="avg_jct"
        )
        expected = 1 - pair["goodput"].mean() / pair["tiresias"].mean()
        assert row.reduction == pytest.approx(expected)


def test_report_is_deterministic_and_has_json(load_sweep):
    first = CliRunner().invoke(main, ["report", str(load_sweep), "--format", "json"])
    second = CliRunner().invoke(main, ["report", str(load_sweep), "--format", "json"])
    assert first.exit_code == 0, first.output
    assert first.output == second.output
    body = json.loads(first.output)
    assert body["kind"] == "sweep" and len(body["policies"]) == 4 and len(body["claim"]) == 2


def test_the_claim_check_never_sets_goodput_against_its_own_variants(load_sweep, tmp_path):
    """A saved sweep of goodput and its genetic variant (rows relabelled from a real sweep):
    nothing to compare; and a sweep without goodput says so."""
    runs = pd.read_csv(load_sweep / "summary.csv")
    variant = runs.replace({"policy": {"tiresias": "goodput-ga"}})
    (tmp_path / "ga").mkdir()
    variant.to_csv(tmp_path / "ga" / "summary.csv", index=False)
    text = CliRunner().invoke(main, ["report", str(tmp_path / "ga")]).output
    assert "no baseline in the results to set goodput against" in text
    assert claim_table(load_results(tmp_path / "ga"), baselines).empty
    (tmp_path / "none").mkdir()
    runs[runs["policy"] == "tiresias"].to_csv(tmp_path / "none" / "summary.csv", index=False)
    text = CliRunner().invoke(main, ["report", str(tmp_path / "none")]).output
    assert "needs the goodput policy" in text


def test_a_comparison_report_bootstraps_over_jobs(comparison):
    results = load_results(comparison)
    assert results.kind == "comparison" and results.labels == ["fifo", "tiresias", "goodput"]
    jobs = pd.read_csv(comparison / "goodput" / "jobs.csv")
    row = policy_table(results).set_index("policy").loc["goodput"]
    assert row.avg_jct_s == pytest.approx(jobs["jct"].mean())
    assert row.ci_low_s < row.avg_jct_s < row.ci_high_s
    claim = claim_table(results, baselines)
    assert list(claim["baseline"]) == ["fifo", "tiresias"] and set(claim["pairs"]) == {40}


def test_report_errors_are_one_line(tmp_path):
    empty = tmp_path / "empty"
    empty.mkdir()
    result = CliRunner().invoke(main, ["report", str(empty)])
    assert result.exit_code == 2 and "holds no results" in result.output
    result = CliRunner().invoke(main, ["report", str(empty), "-o", str(tmp_path / "r.pdf")])
    assert result.exit_code == 2 and "expected an .html file" in result.output


def _chromium() -> str:
    for name in ("chromium", "chromium-browser", "google-chrome"):
        if found := shutil.which(name):
            return found
    pytest.skip("no Chromium on this machine (.ci/run installs Debian's chromium where it can)")


def _rendered(page: Path, tmp_path: Path) -> dict[str, str]:
    """Open ``page`` in headless Chromium; the ``<body>`` data attributes its script set."""
    command = [
        _chromium(),
        "--headless",
        "--no-sandbox",
        "--disable-gpu",
        "--disable-quic",
        "--no-first-run",
        "--disable-background-networking",
        "--disable-component-update",
        "--disable-sync",
        f"--user-data-dir={tmp_path / 'profile'}",
        "--virtual-time-budget=5000",
        "--dump-dom",
        page.resolve().as_uri(),
    ]
    dom = subprocess.run(command, capture_output=True, text=True, timeout=120).stdout
    body = re.search(r"<body([^>]*)>", dom)
    assert body, dom[:500]
    return dict(re.findall(r'data-([a-z-]+)="([^"]*)"', body.group(1)))


def _self_contained(page: Path) -> None:
    text = page.read_text()
    assert not re.search(r'(src|href)="(?!#|data:)', text)  # nothing fetched from anywhere
    assert not re.search(r"url\((?!#)", text)


def test_the_html_report_renders_every_figure_and_table_in_a_browser(comparison, tmp_path):
    page = tmp_path / "report.html"
    result = CliRunner().invoke(main, ["report", str(comparison), "-o", str(page)])
    assert result.exit_code == 0, result.output
    _self_contained(page)
    text = page.read_text()
    for title in (
        "JCT CDF",
        "Average job completion time",
        "Utilisation and queue",
        "GPUs per job over time",
        "Claim check",
        "goodput/manifest.json",
    ):
        assert title in text
    seen = _rendered(page, tmp_path)
    # CDF, bars, applications, utilisation, a timeline per policy (3), the jobs' traces
    assert int(seen["figures"]) == 8 and seen["figures-rendered"] == seen["figures"], seen
    # compare's table, the table with intervals, the claim check
    assert int(seen["tables"]) == 3 and seen["tables-rendered"] == seen["tables"], seen
    assert seen["load-errors"] == "0"


def test_the_sweep_html_report_renders_in_a_browser(load_sweep, tmp_path):
    page = tmp_path / "sweep.html"
    assert CliRunner().invoke(main, ["report", str(load_sweep), "-o", str(page)]).exit_code == 0
    _self_contained(page)
    assert "Average JCT against load" in page.read_text()
    seen = _rendered(page, tmp_path)
    assert int(seen["figures"]) == 3 and seen["figures-rendered"] == "3", seen
    assert seen["load-errors"] == "0"


def test_a_broken_figure_is_caught_by_the_browser_check(comparison, tmp_path):
    """The check can fail: a figure whose SVG draws nothing is not counted as rendered."""
    page = tmp_path / "report.html"
    CliRunner().invoke(main, ["report", str(comparison), "-o", str(page)])
    text = page.read_text()
    start = text.index("<figure><svg")
    end = text.index("</svg>", start) + len("</svg>")
    broken = text[:start] + '<figure><svg width="0" height="0"></svg>' + text[end:]
    page.write_text(broken.replace("</body>", '<img src="missing.png"></body>'))
    seen = _rendered(page, tmp_path)
    assert int(seen["figures-rendered"]) == int(seen["figures"]) - 1
    assert int(seen["load-errors"]) >= 1


def test_bootstrap_intervals_cover_known_means():
    from goodput_sim.results.stats import reduction_ci

    rng = np.random.default_rng(1)
    base = rng.uniform(1, 3, 400)
    reduction, low, high = reduction_ci(0.6 * base, base, np.random.default_rng(0))
    assert reduction == pytest.approx(0.4) and low <= 0.4 <= high


def test_report_keeps_unlike_runs_apart_and_never_pairs_them(small_csv, tmp_path):
    """Runs of one policy with other settings, seeds or agents are separate rows, each labelled
    by what differs; a claim check pairs only runs that differ in nothing but the policy, and
    says what differs when it refuses (issue 22, friction 2)."""
    head = ["run", "--workload", str(small_csv), "--horizon", "20000"]
    made = {
        "a": ["--policy", "goodput", "--param", "p=-0.5"],
        "b": ["--policy", "goodput", "--seed", "3"],
        "c": ["--policy", "tiresias"],
        "d": ["--policy", "tiresias", "--agent", "goodput"],
        "e": ["--policy", "tiresias"],  # the same run as c
    }
    for name, args in made.items():
        done = CliRunner().invoke(main, [*head, *args, "--out", str(tmp_path / "all" / name)])
        assert done.exit_code == 0, done.output
    results = load_results(tmp_path / "all")
    assert results.labels == [
        "goodput p=-0.5 seed=0",
        "goodput p=default seed=3",
        "tiresias agent=fixed seed=0 [c]",
        "tiresias agent=goodput seed=0",
        "tiresias agent=fixed seed=0 [e]",
    ]
    table = policy_table(results).set_index("policy")
    for name, label in zip("abcde", results.labels, strict=True):
        jobs = pd.read_csv(tmp_path / "all" / name / "jobs.csv")
        assert table.loc[label, "avg_jct_s"] == pytest.approx(jobs["jct"].mean())
        assert results.jobs[label]["jct"].equals(jobs["jct"])
    claim = claim_table(results, baselines).set_index(["policy", "baseline"])
    assert len(claim) == 6
    for (mine, _), row in claim.iterrows():
        if "seed=3" in mine:
            assert row.pairs == 0 and row.verdict == "not paired: the runs differ in seed"
        else:
            assert row.pairs == 40 and np.isfinite(row.reduction)
    text = CliRunner().invoke(main, ["report", str(tmp_path / "all")]).output
    assert "goodput p=default seed=3 vs tiresias agent=goodput seed=0" in text
    assert text.count("not paired: the runs differ in seed") == 3


def test_a_sweep_report_keeps_cells_with_other_settings_apart(small_csv, tmp_path):
    """A sweep over two intervals and a setting reports each (policy, interval, setting) cell
    on its own row instead of pooling them, and pairs only within a cell."""
    sweep(
        ["fifo", "goodput"],
        [small_csv],
        tmp_path,
        intervals=(60, 120),
        settings={"restart_delay": [30, 60]},
        progress=False,
    )
    results = load_results(tmp_path)
    assert len(results.labels) == 8 and "goodput interval=120.0 restart_delay=60" in results.labels
    assert set(policy_table(results)["runs"]) == {1}
    claim = claim_table(results, baselines)
    assert len(claim) == 4 and (claim["pairs"] == 1).all()
    for row in claim.itertuples():
        assert row.baseline == row.policy.replace("goodput", "fifo")


def test_both_report_formats_word_verdicts_alike(comparison, tmp_path):
    results = load_results(comparison)
    verdicts = set(claim_table(results, baselines)["verdict"])
    assert verdicts
    from goodput_sim.results.html_report import write_html

    write_html(results, tmp_path / "r.html", baselines)
    page, text = (tmp_path / "r.html").read_text(), report_text(results, baselines)
    for verdict in verdicts:
        assert verdict in text and html.escape(verdict) in page


def test_intervals_depend_on_the_runs_not_on_their_folder_or_neighbours(comparison, tmp_path):
    """The same runs in a folder of another name, beside other runs or fewer, get the same
    intervals: each bootstrap is seeded by its own sample, not by where it sits."""
    other = tmp_path / "elsewhere"
    shutil.copytree(comparison, other)
    shutil.rmtree(other / "tiresias")
    summary = pd.read_csv(other / "summary.csv")
    summary[summary["policy"] != "tiresias"].to_csv(other / "summary.csv", index=False)
    columns = ["n", "avg_jct_s", "ci_low_s", "ci_high_s"]
    before = policy_table(load_results(comparison)).set_index("policy")[columns]
    after = policy_table(load_results(other)).set_index("policy")[columns]
    pd.testing.assert_frame_equal(after, before.loc[["fifo", "goodput"]])
    claim = ["baseline", "reduction", "ci_low", "ci_high"]
    before = (
        claim_table(load_results(comparison), baselines)[claim].set_index("baseline").loc[["fifo"]]
    )
    after = claim_table(load_results(other), baselines)[claim].set_index("baseline")
    pd.testing.assert_frame_equal(after, before)
