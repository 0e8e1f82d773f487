"""Every notebook runs headless top to bottom on the project's own kernel, is stored without
outputs, and shows at least one figure."""

from __future__ import annotations

import json
import shutil
import sys
from pathlib import Path

import nbformat
import pytest
from nbclient import NotebookClient

NOTEBOOKS = sorted((Path(__file__).resolve().parents[1] / "notebooks").glob("*.ipynb"))
CELL_SECONDS = 600  # a hang guard, 10x more than any cell takes on a loaded 2-core machine


def _execute(path: Path, cwd: Path) -> nbformat.NotebookNode:
    notebook = nbformat.read(path, as_version=4)
    client = NotebookClient(
        notebook,
        timeout=CELL_SECONDS,
        kernel_name="python3",
        resources={"metadata": {"path": str(cwd)}},
    )
    client.execute()
    return notebook


def test_the_kernel_is_the_projects_python(tmp_path):
    path = tmp_path / "probe.ipynb"
    nbformat.write(
        nbformat.v4.new_notebook(
            cells=[nbformat.v4.new_code_cell("import sys; print(sys.prefix)")]
        ),
        path,
    )
    output = _execute(path, tmp_path).cells[0].outputs[0]["text"].strip()
    assert output == sys.prefix


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.name)
def test_notebook_is_stored_without_outputs(path):
    for cell in json.loads(path.read_text())["cells"]:
        if cell["cell_type"] == "code":
            assert cell["outputs"] == [] and cell["execution_count"] is None, path.name


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.name)
def test_notebook_runs_and_shows_a_figure(path, tmp_path):
    shutil.copy(path, tmp_path / path.name)
    notebook = _execute(tmp_path / path.name, tmp_path)
    images = [
        output
        for cell in notebook.cells
        if cell.cell_type == "code"
        for output in cell.outputs
        if "image/png" in output.get("data", {})
    ]
    assert images, f"{path.name}: no figure cell produced an image"
    errors = [o for c in notebook.cells for o in c.get("outputs", []) if o.output_type == "error"]
    assert not errors


def test_tour_seed_cells_reproduce_the_seed():
    cells = json.loads((NOTEBOOKS[0].with_name("tour.ipynb")).read_text())["cells"]
    namespace: dict = {}
    for cell in [c for c in cells if c["cell_type"] == "code"][:2]:
        exec(compile("".join(cell["source"]), "tour", "exec"), namespace)
    best = {sigma: batch for sigma, (batch, _) in namespace["best"].items()}
    assert best == {0.0: 16, 0.2: 32, 0.8: 512}
