"""The kernels' cache: a read-only package folder falls back to a writable per-user folder;
compiling is said once on stderr; every signature a run uses is one the install step compiles."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from goodput_sim import numba_cache

# Numba's cache folders made read-only, except below ALLOWED, as for a read-only installation
# whose HOME is read-only too (file permissions cannot show it to root, who may write anyway).
READ_ONLY = textwrap.dedent(
    """
    import os, sys
    from pathlib import Path
    from numba.core import caching

    allowed = os.environ["ALLOWED"]
    def ensure_cache_path(self):
        if not str(self.get_cache_path()).startswith(allowed):
            raise OSError("read-only")
        os.makedirs(self.get_cache_path(), exist_ok=True)
    caching._CacheLocator.ensure_cache_path = ensure_cache_path

    from goodput_sim import kernel_cache, numba_cache
    package = numba_cache._writable
    numba_cache._writable = lambda f: str(f).startswith(allowed) and package(f)
    """
)


def _child(tmp_path: Path, code: str) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if k != "NUMBA_CACHE_DIR"}
    (tmp_path / "tmp").mkdir()  # the only writable place: HOME and the package are not
    env.update(
        ALLOWED=str(tmp_path / "tmp"), TMPDIR=str(tmp_path / "tmp"), XDG_CACHE_HOME=str(tmp_path)
    )
    return subprocess.run(
        [sys.executable, "-c", READ_ONLY + textwrap.dedent(code)],
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
    )


def test_read_only_package_without_fallback_has_no_locator(tmp_path):
    """The failure the fallback prevents: numba finds nowhere to cache."""
    done = _child(
        tmp_path,
        """
        numba_cache.use_writable_cache = lambda: None
        from goodput_sim.models import fit_kernels
        """,
    )
    assert done.returncode != 0
    assert "no locator available" in done.stderr


def test_read_only_package_and_home_cache_in_a_temporary_user_folder(tmp_path):
    done = _child(
        tmp_path,
        """
        import numpy as np
        from goodput_sim.models import fit_kernels
        out = np.zeros(2)
        fit_kernels.log_errors(np.ones(2), np.ones(2), 1.0, 1.0, out)
        print(os.environ["NUMBA_CACHE_DIR"])
        """,
    )
    assert done.returncode == 0, done.stderr
    folder = tmp_path / "tmp" / f"goodput-sim-{os.getuid()}" / "numba"
    assert done.stdout.strip() == str(folder)
    assert any(folder.rglob("*.nbi")), "the kernel's index is cached in the user's folder"


def test_user_cache_folder_is_the_temporary_one_when_home_is_not_writable(tmp_path, monkeypatch):
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "home-cache"))
    monkeypatch.setattr(numba_cache.tempfile, "tempdir", str(tmp_path / "tmp"))
    (tmp_path / "tmp").mkdir()
    real = numba_cache._writable
    monkeypatch.setattr(numba_cache, "_writable", lambda f: "home-cache" not in str(f) and real(f))
    folder = numba_cache.user_cache_folder()
    assert folder == tmp_path / "tmp" / f"goodput-sim-{os.getuid()}" / "numba"
    assert (folder.parent.stat().st_mode & 0o777) == 0o700


# Runs one policy briefly, then prints each kernel signature it used that ``warm`` does not
# compile (one line per kernel).
SIGNATURES_USED = textwrap.dedent(
    """
    import sys
    from goodput_sim import kernel_cache
    from goodput_sim.api import run

    policy = sys.argv[1]
    run(policy, horizon=4 * 3600, params={"fit": "artifact"} if policy == "sia" else None)
    for dispatcher, sigs in kernel_cache.signatures().items():
        unlisted = set(dispatcher.signatures) - set(sigs)
        if unlisted:
            print(dispatcher.__name__, unlisted)
    """
)


@pytest.mark.parametrize("policy", ["goodput", "throughput", "sia"])
def test_install_step_covers_the_signatures_a_run_uses(policy):
    """A run calls the kernels only with signatures ``warm`` compiles, so after the install
    step no run compiles (sia: its artifact fit's kernels). In a process of its own: kernels
    that other tests call with other signatures must not count."""
    done = subprocess.run(
        [sys.executable, "-c", SIGNATURES_USED, policy],
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout == "", done.stdout
