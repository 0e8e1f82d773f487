"""The README walks a new user through the tool: its ``bash`` blocks and its Python block run
in order on a temporary copy, each command without a refusal or a traceback (lines marked
``# slow`` are skipped), so the README cannot drift from the tool (issue 22). Its links into
the documentation point at pages that exist, and it stays short enough to read in five
minutes (issue 50)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from doc_blocks import ROOT, blocks, commands, in_a_fresh_folder, run_blocks

README = ROOT / "README.md"


def test_the_readme_has_a_walkthrough():
    found = blocks(README)
    languages = [lang for lang, _ in found]
    assert languages.count("bash") >= 1 and languages.count("python") == 1
    words = {c[1] for lang, text in found if lang == "bash" for c in commands(text)}
    assert {"run", "compare", "sweep", "report", "plot"} <= words


def test_the_readme_runs_in_order(tmp_path, monkeypatch):
    in_a_fresh_folder(tmp_path, monkeypatch)
    run_blocks("README.md", blocks(README))
    assert len(list(Path("results").glob("goodput-small-*"))) == 2  # two runs, two folders


def test_the_readme_is_short_and_its_links_resolve():
    text = README.read_text()
    assert len(text.splitlines()) <= 250
    targets = re.findall(r"\]\(([^)#\s]+)(?:#[^)]*)?\)", text)
    local = [t for t in targets if "://" not in t]
    assert any(t.startswith("docs/") for t in local)
    missing = [t for t in local if not (ROOT / t).exists()]
    assert not missing, missing


@pytest.mark.parametrize(
    "line",
    [
        "goodput-sim sweep x.yaml  # slow",
        "goodput-sim workload philly  # needs the artifact",
        "goodput-sim workload philly -o all.csv  # the whole log; needs the artifact",
        "  ",
    ],
)
def test_marked_and_blank_lines_are_skipped(line):
    assert commands(line) == []


def test_other_comments_are_dropped_and_the_command_kept():
    assert commands("goodput-sim report sweep   # slower than most") == [
        ["goodput-sim", "report", "sweep"]
    ]
