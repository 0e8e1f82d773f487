"""The notebooks stay in step with the API: every code cell compiles, the seed-model cells run."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

NOTEBOOKS = sorted((Path(__file__).resolve().parents[1] / "notebooks").glob("*.ipynb"))


def _code_cells(path: Path) -> list[str]:
    cells = json.loads(path.read_text())["cells"]
    return ["".join(c["source"]) for c in cells if c["cell_type"] == "code"]


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.name)
def test_code_cells_compile(path):
    cells = _code_cells(path)
    assert cells
    for index, source in enumerate(cells):
        compile(source, f"{path.name}[{index}]", "exec")


def test_tour_seed_cells_run():
    namespace: dict = {}
    for source in _code_cells(Path(NOTEBOOKS[0]).with_name("tour.ipynb"))[:2]:
        exec(compile(source, "tour", "exec"), namespace)
    best = {sigma: batch for sigma, (batch, _) in namespace["best"].items()}
    assert best == {0.0: 16, 0.2: 32, 0.8: 512}
