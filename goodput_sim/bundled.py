"""The data shipped with the package, and the one place that knows where it lives.

The repository keeps its data in two top-level folders: ``traces/`` (the parametric and
per-GPU-type profiles, the default workloads, the Philly statistics) and ``configs/`` (cluster
and experiment files). A wheel or an sdist install carries them inside the package, as
``goodput_sim/traces`` and ``goodput_sim/configs`` (``pyproject.toml`` maps the folders there
at build time), and they are found with :mod:`importlib.resources`. Run from a source checkout
(an editable install, or ``PYTHONPATH`` pointing at one), the package has no such folders and
the checkout's own are used: the same files, where a user of the repository edits them.

Names are written as in the repository, ``traces/profiles`` or
``configs/cluster-sia-default.yaml``; results manifests record a bundled input as
``bundled:<name>`` (:func:`marked`), never as the folder it happened to be installed in.
"""

from __future__ import annotations

import functools
from importlib import resources
from pathlib import Path

from goodput_sim.errors import InputError

FOLDERS = ("traces", "configs")
"""The repository's data folders the package carries."""

MARKER = "bundled:"
"""The prefix of a bundled input's name in a results manifest."""


def path(name: str) -> Path:
    """The bundled file or folder ``name`` (``traces/philly_stats.yaml``, ``traces/profiles``,
    ``configs/cluster-16x4.yaml``...), wherever the package is installed. The path may not
    exist: a caller that reads it says which file is missing."""
    folder, _, rest = name.strip("/").partition("/")
    if folder not in FOLDERS or ".." in rest.split("/"):
        raise InputError(name, f"is not a bundled name (expected one below {' or '.join(FOLDERS)})")
    root = _root(folder)
    return root.joinpath(*rest.split("/")) if rest else root


def marked(file: str | Path) -> str | None:
    """``bundled:<name>`` when ``file`` is (or lies below) one of the bundled folders, else None:
    how a manifest names a bundled input so the record holds wherever the package moves."""
    target = Path(file).resolve()
    for folder in FOLDERS:
        try:
            root = _root(folder).resolve()
        except InputError:
            continue
        if target == root or root in target.parents:
            rest = target.relative_to(root).as_posix()
            return MARKER + (folder if rest == "." else f"{folder}/{rest}")
    return None


def unmarked(text: str) -> Path | None:
    """The bundled file a manifest's ``bundled:<name>`` stands for; None for any other text."""
    if not text.startswith(MARKER):
        return None
    return path(text[len(MARKER) :])


def source_checkout() -> Path | None:
    """The source checkout the package is run from (the folder holding ``pyproject.toml`` and
    the ``goodput_sim`` package), or None for an installed package."""
    package = resources.files(__package__)
    if not isinstance(package, Path):
        return None
    root = package.parent
    return root if (root / "pyproject.toml").is_file() else None


@functools.cache
def _root(folder: str) -> Path:
    """The bundled ``folder``: inside the installed package, else beside it in a checkout."""
    inside = resources.files(__package__) / folder
    if isinstance(inside, Path) and inside.is_dir():
        return inside
    checkout = source_checkout()
    if checkout is not None and (checkout / folder).is_dir():
        return checkout / folder
    raise InputError(
        f"{__package__}/{folder}",
        "the package's bundled data is missing (an install that is not a plain folder on disk, "
        "or one built without its data): reinstall goodput-sim from its wheel or sdist",
    )
