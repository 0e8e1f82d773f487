"""Where numba caches the compiled kernels: beside the package when its folder is writable,
else in ``NUMBA_CACHE_DIR`` when set, else in a per-user cache folder, so a read-only
installation still runs the elastic policies. The kernel modules call
:func:`use_writable_cache` before they define their kernels; it imports nothing of the package."""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

PACKAGE = Path(__file__).resolve().parent
KERNEL_FOLDERS = (PACKAGE / "policies", PACKAGE / "models")
"""The folders of the kernels' source files: numba caches beside them when it can."""


def _writable(folder: Path) -> bool:
    """Whether ``folder`` exists or can be made, and takes a file (numba's own test)."""
    try:
        folder.mkdir(parents=True, exist_ok=True)
        tempfile.TemporaryFile(dir=folder).close()
    except OSError:
        return False
    return True


def user_cache_folder() -> Path | None:
    """A writable per-user folder for the kernels' cache: ``$XDG_CACHE_HOME/goodput-sim/numba``
    (``~/.cache`` by default), else one in the temporary folder named after the user; None when
    neither can be written."""
    home = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    uid = os.getuid() if hasattr(os, "getuid") else "user"
    temporary = Path(tempfile.gettempdir()) / f"goodput-sim-{uid}" / "numba"
    for folder in (Path(home) / "goodput-sim" / "numba", temporary):
        if folder == temporary:
            try:
                folder.parent.mkdir(mode=0o700, exist_ok=True)
                if hasattr(os, "getuid") and folder.parent.stat().st_uid != os.getuid():
                    continue  # someone else's folder: not ours to load code from
            except OSError:
                continue
        if _writable(folder):
            return folder
    return None


def use_writable_cache() -> None:
    """Point numba at a writable cache folder when the package's own folder is read-only and
    ``NUMBA_CACHE_DIR`` is not set (otherwise numba raises "no locator available" as the kernels
    are defined). Called by the kernel modules before they define their kernels; the setting is
    exported, so worker processes use the same folder."""
    from numba.core import config

    if config.CACHE_DIR or all(_writable(f / "__pycache__") for f in KERNEL_FOLDERS):
        return
    folder = user_cache_folder()
    if folder is not None:
        config.CACHE_DIR = os.environ["NUMBA_CACHE_DIR"] = str(folder)
