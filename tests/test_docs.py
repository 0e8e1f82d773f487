"""The documentation site builds with ``mkdocs build --strict`` (every link, anchor and page in
the navigation resolves; the API reference renders from the docstrings; the performance page's
tables are generated from ``benchmarks/results``), its pages' ``bash`` blocks (and the user
guide's ``python`` blocks) run in order as the README's do, and the rendered notebooks are those
of the notebooks as they are now (issue 50)."""

from __future__ import annotations

import importlib.util
import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
from doc_blocks import ROOT, blocks, commands, in_a_fresh_folder, run_blocks

DOCS = ROOT / "docs"
# Pages whose blocks are not run here: the extending pages' examples need a plug-in installed
# (their own tests install one), and the rendered notebooks' code ran when they were rendered.
NOT_RUN = ("extending/", "notebooks/")
PAGES = sorted(
    p
    for p in DOCS.rglob("*.md")
    if blocks(p) and not p.relative_to(DOCS).as_posix().startswith(NOT_RUN)
)

_spec = importlib.util.spec_from_file_location("render_notebooks", DOCS / "render_notebooks.py")
render_notebooks = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(render_notebooks)


def _page_id(path: Path) -> str:
    return path.relative_to(DOCS).as_posix()


def test_the_site_builds_strict(tmp_path):
    if importlib.util.find_spec("mkdocs") is None:
        pytest.skip("mkdocs is not installed: install the dev extra (pip install -e '.[dev]')")
    site = tmp_path / "site"
    result = subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--strict", "--site-dir", str(site)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        env={**os.environ, "NO_MKDOCS_2_WARNING": "1"},
        timeout=600,
    )
    assert result.returncode == 0, result.stdout + result.stderr
    performance = (site / "performance" / "index.html").read_text()
    scale = json.loads((ROOT / "benchmarks" / "results" / "scale.json").read_text())
    assert f"{scale['peak_rss_mib']:,.0f}" in performance  # generated, not copied
    assert "<!-- benchmarks:" not in performance
    assert (site / "images" / "scale_policy_time.png").is_file()
    api = (site / "reference" / "api" / "index.html").read_text()
    assert "compare" in api and "SimResult" in api


def test_the_docs_have_commands_that_run():
    assert len(PAGES) >= 8, [_page_id(p) for p in PAGES]
    words = {
        c[1] for p in PAGES for lang, text in blocks(p) if lang == "bash" for c in commands(text)
    }
    assert {"run", "compare", "sweep", "report", "plot", "workload", "profiles", "toy"} <= words


@pytest.mark.parametrize("page", PAGES, ids=_page_id)
def test_a_pages_blocks_run_in_order(page, tmp_path, monkeypatch):
    """Python blocks run on the user guide's pages, where they are whole examples; design pages
    may quote excerpts of code."""
    in_a_fresh_folder(tmp_path, monkeypatch)
    name = _page_id(page)
    run_blocks(name, blocks(page), python=name.startswith("guide/"))


def test_every_notebook_is_rendered_from_its_current_source():
    rn = render_notebooks
    notebooks = sorted(rn.SOURCE.glob("*.ipynb"))
    pages = {p.stem for p in rn.TARGET.glob("*.md")} - {"index"}
    assert pages == {p.stem for p in notebooks}, "run `make docs-notebooks`"
    for path in notebooks:
        page = (rn.TARGET / f"{path.stem}.md").read_text()
        assert page.startswith(rn.DIGEST.format(name=path.name, digest=rn.digest(path))), (
            f"{path.name} changed since its page was rendered: run `make docs-notebooks`"
        )
        figures = re.findall(r"\]\(([^)]+\.png)\)", page)
        assert figures, f"{path.name}: the rendered page shows no figure"
        assert all((rn.TARGET / f).is_file() for f in figures)
