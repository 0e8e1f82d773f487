"""A new user's first hour (issue 22): the Python API takes what the CLI takes and returns what
a results folder holds; the catalogue and the packaging say nothing misleading."""

from __future__ import annotations

import json
import tomllib
from pathlib import Path

import pandas as pd
import pytest
from click.testing import CliRunner

from goodput_sim import api
from goodput_sim.cli import main
from goodput_sim.errors import InputError
from goodput_sim.inputs.workload import load_workload

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="module")
def small() -> pd.DataFrame:
    return load_workload(api.bundled_workload()).iloc[:12]


def test_a_dataframe_missing_a_column_is_one_clean_error(small):
    with pytest.raises(InputError, match="missing column.*batch_size; expected name, time"):
        api.run("fifo", small.drop(columns="batch_size"), cluster="4x4")


def test_the_api_takes_engine_settings_by_the_cli_names(small):
    slow = api.run("fifo", small, cluster="4x4", interval=120)
    assert slow.config["interval"] == 120
    assert slow.config == api.run("fifo", small, cluster="4x4", interval=120.0).config
    with pytest.raises(InputError, match="unknown setting 'intervall'"):
        api.run("fifo", small, cluster="4x4", intervall=120)
    with pytest.raises(InputError, match="interval"):
        api.run("fifo", small, cluster="4x4", interval=-5)
    with pytest.raises(InputError, match="not both"):
        api.run(
            "fifo",
            small,
            cluster="4x4",
            config=api.SimConfig(),
            interval=120,
        )
    failing = api.compare(["fifo"], small, cluster="4x4", mtbf=12.0)
    assert failing.results["fifo"].config["failures"]["mtbf_hours"] == 12.0


def test_results_carry_their_summary_and_manifest(small, tmp_path):
    result = api.run("tiresias", small, cluster="4x4")
    assert result.summary["jobs"] == 12 and result.summary["avg_jct"] > 0
    assert result.manifest["summary"] is result.summary
    assert result.manifest["policy"]["name"] == "tiresias"
    api.write_run(result, tmp_path / "r", {"workload": None}, 0, figure=False)
    written = json.loads((tmp_path / "r" / "manifest.json").read_text())
    for key in ("goodput_sim_version", "policy", "agent", "cluster", "complete", "units"):
        assert json.loads(json.dumps(result.manifest[key])) == written[key]


def test_the_catalogue_lists_no_policy_as_its_own_alias():
    result = CliRunner().invoke(main, ["policies"])
    assert result.exit_code == 0
    assert "gavel (aliases: gavel)" not in result.output
    assert "sia (aliases: sia)" not in result.output
    assert "  goodput (aliases: pollux): " in result.output


def test_packaging_uses_the_spdx_licence_and_ignores_reports():
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())
    assert project["project"]["license"] == "Apache-2.0"  # a table warns on every install
    assert "/report.html" in (ROOT / ".gitignore").read_text().splitlines()


def test_default_results_folders_never_block_a_different_run(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    small = tmp_path / "small.csv"
    load_workload(api.bundled_workload()).iloc[:6].to_csv(small, index=False)
    runner = CliRunner()

    def run(*args):
        result = runner.invoke(
            main, ["run", "--workload", str(small), "--quiet", "--no-plot", *args]
        )
        assert result.exit_code == 0, result.output
        return result.output.split("-> ")[1].splitlines()[0].strip()

    plain = run("--policy", "goodput")
    tuned = run("--policy", "goodput", "--param", "p=-0.5")
    seeded = run("--policy", "goodput", "--seed", "3")
    again = run("--policy", "goodput")
    assert len({plain, tuned, seeded, again}) == 4
    assert again == plain + "-2"  # the same run again is numbered, not refused
    assert Path(plain).name.startswith("goodput-small-")
    named = runner.invoke(
        main, ["run", "--workload", str(small), "--policy", "fifo", "--out", plain]
    )
    assert named.exit_code != 0 and "--force" in named.output  # a named folder is still guarded
    twice = [
        runner.invoke(main, ["compare", "--workload", str(small), "--policies", "fifo,goodput"])
        for _ in range(2)
    ]
    assert all(r.exit_code == 0 for r in twice), twice[-1].output


def test_the_readme_quotes_the_agent_effect_as_measured():
    """The README's Tiresias-with-the-goodput-agent sentence comes from these two runs."""
    import re

    text = (ROOT / "README.md").read_text()
    quoted = re.search(r"Tiresias's average JCT from (\d+) s to (\d+) s", text)
    assert quoted, "the README no longer quotes the agent's effect"
    plain = api.run("tiresias").jobs["jct"].mean()
    adapted = api.run("tiresias", agent="goodput").jobs["jct"].mean()
    assert (int(quoted[1]), int(quoted[2])) == (round(plain), round(adapted))


def test_one_overwrite_rule_for_every_output(small, tmp_path):
    """An output a command is told to write is never replaced silently: it exists, the command
    refuses in one line and leaves it as it was; --force replaces it; missing parent folders
    are made. A default output (plot's own figure in the results folder) is redrawn."""
    runner = CliRunner()
    csv = tmp_path / "small.csv"
    small.to_csv(csv, index=False)
    results = tmp_path / "run"
    assert (
        runner.invoke(
            main, ["run", "--policy", "fifo", "--workload", str(csv), "--out", str(results)]
        ).exit_code
        == 0
    )
    commands = {
        "generate": ["workload", "generate", "--jobs", "5", "-o"],
        "categorize": ["workload", "categorize", str(csv), "--rigid", "0.5", "-o"],
        "report": ["report", str(results), "-o"],
        "plot": ["plot", str(results), "-o"],
    }
    suffix = {"report": ".html", "plot": ".svg"}
    for name, args in commands.items():
        target = tmp_path / "new" / name / f"out{suffix.get(name, '.csv')}"
        first = runner.invoke(main, [*args, str(target)])
        assert first.exit_code == 0 and target.is_file(), (name, first.output)
        target.write_text("kept")
        again = runner.invoke(main, [*args, str(target)])
        assert again.exit_code == 2, (name, again.output)
        assert again.output.strip().splitlines() == [
            f"error: --output: {target} exists; pass --force to replace it"
        ]
        assert target.read_text() == "kept"
        forced = runner.invoke(main, [*args, str(target), "--force"])
        assert forced.exit_code == 0 and target.read_text() != "kept", name
    for _ in range(2):  # the default figure is the results' own, redrawn each time
        assert runner.invoke(main, ["plot", str(results)]).exit_code == 0


def test_slow_outputs_say_what_they_are_doing(small, tmp_path):
    csv = tmp_path / "small.csv"
    small.to_csv(csv, index=False)
    results = tmp_path / "run"
    runner = CliRunner()
    assert (
        runner.invoke(
            main, ["run", "--policy", "fifo", "--workload", str(csv), "--out", str(results)]
        ).exit_code
        == 0
    )
    drawn = runner.invoke(main, ["plot", str(results), "--kind", "timeline"])
    assert drawn.stderr.startswith("drawing the timeline figure of ")
    written = runner.invoke(main, ["report", str(results), "-o", str(tmp_path / "r.html")])
    assert written.stderr.startswith("drawing the figures of ")


def test_profiles_show_explains_its_columns():
    text = CliRunner().invoke(main, ["profiles", "show"]).output
    for column in ("M0:", "max B:", "local b:", "epochs:", "progress:"):
        assert column in text


def test_a_bad_top_level_option_is_one_line():
    bad = CliRunner().invoke(main, ["--bogus"])
    assert bad.exit_code == 2 and bad.output == "error: No such option '--bogus'.\n"
    bare = CliRunner().invoke(main, [])  # no arguments at all: the help, as before
    assert "Usage: " in bare.output and "Commands:" in bare.output
