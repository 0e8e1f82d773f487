"""Render the notebooks into the documentation: run each of ``notebooks/*.ipynb`` top to bottom
(as ``make test`` does) and write it as a Markdown page with its figures as PNG files under
``docs/notebooks/``, so readers see the figures without running anything and the site builds
without running them. ``make docs-notebooks`` runs it; the pages are committed.

The notebooks stay stored without outputs. Each page records the SHA-256 of the notebook it was
rendered from, and ``tests/test_docs.py`` fails when a notebook changed without its page being
rendered again. Output is deterministic for a given environment: figures and text are taken in
cell order, stderr (progress bars, warnings) is left out, and nothing records a time.
"""

from __future__ import annotations

import argparse
import base64
import hashlib
import shutil
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SOURCE = ROOT / "notebooks"
TARGET = ROOT / "docs" / "notebooks"
CELL_SECONDS = 600
DIGEST = "<!-- rendered from notebooks/{name} (sha256 {digest}) by `make docs-notebooks` -->"


def digest(path: Path) -> str:
    """SHA-256 of a notebook file: stored without outputs, its bytes are its source."""
    return hashlib.sha256(path.read_bytes()).hexdigest()


def execute(path: Path):
    """The notebook run top to bottom in a scratch folder, as the test suite runs it."""
    import nbformat
    from nbclient import NotebookClient

    notebook = nbformat.read(path, as_version=4)
    with tempfile.TemporaryDirectory() as scratch:
        client = NotebookClient(
            notebook,
            timeout=CELL_SECONDS,
            kernel_name="python3",
            resources={"metadata": {"path": scratch}},
        )
        client.execute()
    return notebook


def _fence(language: str, text: str) -> str:
    return f"```{language}\n{text.rstrip()}\n```"


def to_markdown(path: Path, notebook, figures: Path) -> str:
    """The page: markdown cells as they are, code cells as Python blocks, outputs as text
    blocks and figures; images are written into ``figures``."""
    note = (
        f"*This page is the notebook `notebooks/{path.name}`, run top to bottom and rendered by "
        "`make docs-notebooks`; see [the notebooks](index.md) to run it yourself.*"
    )
    parts = [DIGEST.format(name=path.name, digest=digest(path))]
    count = 0
    for index, cell in enumerate(notebook.cells):
        source = cell.source.strip()
        if cell.cell_type == "markdown":
            parts.append(source)
            if index == 0 and source.startswith("# "):
                parts.append(note)
            continue
        if cell.cell_type != "code":
            continue
        if index == 0:
            parts.append(note)
        parts.append(_fence("python", source))
        for output in cell.get("outputs", []):
            kind = output.output_type
            if kind == "error":
                raise RuntimeError(f"{path.name}: cell {index} failed: {output.ename}")
            if kind == "stream":
                if output.name == "stdout" and output.text.strip():
                    parts.append(_fence("text", output.text))
                continue
            data = output.get("data", {})
            if "image/png" in data:
                count += 1
                figures.mkdir(parents=True, exist_ok=True)
                name = f"figure-{count}.png"
                (figures / name).write_bytes(base64.b64decode(data["image/png"]))
                parts.append(f"![{path.stem}, figure {count}]({figures.name}/{name})")
            elif "text/markdown" in data:
                parts.append(data["text/markdown"].strip())
            elif "text/plain" in data:
                parts.append(_fence("text", data["text/plain"]))
    return "\n\n".join(parts) + "\n"


def title(path: Path) -> str:
    import nbformat

    notebook = nbformat.read(path, as_version=4)
    for cell in notebook.cells:
        if cell.cell_type == "markdown" and cell.source.startswith("# "):
            return cell.source.splitlines()[0][2:].strip()
    return path.stem


INDEX = """# Notebooks

The notebooks in `notebooks/` walk through the models and experiments with figures. Each page
below is a notebook run top to bottom and rendered with its outputs, so you can read it without
running anything. `make test` runs every notebook, and they are stored without outputs.

{rows}

## Running them yourself

The notebooks use the project's own environment (`.venv`, made by `make demo` or `make test`,
which installs their kernel). Open them in any Jupyter front end with that environment's
Python, for example:

```shell
.venv/bin/python -m pip install jupyterlab
.venv/bin/jupyter lab notebooks/
```

Editors with notebook support (such as VS Code) open them directly once `.venv/bin/python` is
chosen as the kernel. After editing a notebook, `make docs-notebooks` renders these pages again.
"""


def render(paths: list[Path]) -> None:
    everything = sorted(SOURCE.glob("*.ipynb"))
    if set(paths) == set(everything) and TARGET.exists():
        shutil.rmtree(TARGET)  # the folder is wholly generated: nothing stale survives
    TARGET.mkdir(parents=True, exist_ok=True)
    for path in paths:
        print(f"running {path.name}", flush=True)
        figures = TARGET / path.stem
        if figures.exists():
            shutil.rmtree(figures)
        page = to_markdown(path, execute(path), figures)
        (TARGET / f"{path.stem}.md").write_text(page)
    rows = "\n".join(f"* [{title(p)}]({p.stem}.md) (`notebooks/{p.name}`)" for p in everything)
    (TARGET / "index.md").write_text(INDEX.format(rows=rows))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("names", nargs="*", help="notebook names (default: all)")
    args = parser.parse_args(argv)
    everything = sorted(SOURCE.glob("*.ipynb"))
    chosen = [p for p in everything if not args.names or p.stem in args.names]
    unknown = set(args.names) - {p.stem for p in everything}
    if unknown:
        print(f"no notebook named {', '.join(sorted(unknown))}", file=sys.stderr)
        return 2
    render(chosen)
    return 0


if __name__ == "__main__":
    sys.exit(main())
