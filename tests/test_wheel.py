"""The package as users install it: an sdist built from the repository holds what building and
testing need, a wheel built from that sdist carries the bundled data, and installed into a fresh
virtual environment it runs from an empty folder (run, compare, workload generate, profiles
show, toy critical-batch, a replay and the Python API), with no checkout in sight.

Nothing is downloaded: the fresh environment gets the wheel alone (``--no-deps``) and sees the
dependencies of the environment running the tests through a ``.pth`` file naming its
site-packages folders (a plain folder line, so an editable install's finder there is not run).
The first goodput run of a fresh install compiles its numba kernels: most of this test's time.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tarfile
import tomllib
import zipfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
BUILD = "from setuptools import build_meta as b; import sys; print(b.build_{}(sys.argv[1]))"
NOT_COPIED = {".git", ".venv", "build", "dist", "results", "site", "report.html"}
"""Top-level entries of a checkout that are no part of a build (environments, outputs)."""


def _setuptools_version() -> tuple[int, ...]:
    try:
        from importlib.metadata import version

        return tuple(int(p) for p in version("setuptools").split(".")[:2])
    except Exception:  # not installed, or a version that is not numbers
        return (0,)


needs_build = pytest.mark.skipif(
    _setuptools_version() < (77,),
    reason="building the package needs setuptools>=77 (pip install -e '.[dev]')",
)


def _ignored(folder: str, names: list[str]) -> set[str]:
    top = Path(folder) == ROOT
    return {
        n
        for n in names
        if n in ("__pycache__", ".pytest_cache", ".ruff_cache", ".hypothesis")
        or n.endswith((".egg-info", ".pyc", ".partial"))
        or (top and n in NOT_COPIED)
    }


def _call(args: list, cwd: Path, env: dict | None = None) -> str:
    done = subprocess.run(
        [str(a) for a in args], cwd=cwd, env=env, capture_output=True, text=True, timeout=600
    )
    assert done.returncode == 0, f"{args} failed:\n{done.stdout[-3000:]}\n{done.stderr[-3000:]}"
    return done.stdout


@pytest.fixture(scope="module")
def built(tmp_path_factory) -> dict[str, Path]:
    """The sdist built from a copy of the repository, and the wheel built from that sdist."""
    tmp = tmp_path_factory.mktemp("package")
    source = tmp / "source"
    shutil.copytree(ROOT, source, ignore=_ignored)
    dist = tmp / "dist"
    sdist = dist / _call([sys.executable, "-c", BUILD.format("sdist"), dist], source).split()[-1]
    with tarfile.open(sdist) as archive:
        archive.extractall(tmp / "unpacked", filter="data")
    (unpacked,) = (tmp / "unpacked").iterdir()
    wheel = dist / _call([sys.executable, "-c", BUILD.format("wheel"), dist], unpacked).split()[-1]
    return {"source": source, "sdist": sdist, "wheel": wheel}


def _fresh_venv(folder: Path, *install: str | Path) -> tuple[Path, dict[str, str], Path]:
    """A virtual environment in ``folder`` with ``pip install --no-deps *install`` done (the
    dependencies: those of the environment running the tests), the environment variables to run
    it with (no PYTHONPATH), and an empty working folder."""
    venv = folder / "venv"
    _call([sys.executable, "-m", "venv", "--without-pip", venv], folder)
    python = venv / "bin" / "python"
    site = _call([python, "-c", "import sysconfig; print(sysconfig.get_path('purelib'))"], folder)
    ours = [p for p in sys.path if Path(p).name in ("site-packages", "dist-packages")]
    (Path(site.strip()) / "test-dependencies.pth").write_text("\n".join(ours) + "\n")
    pip = [sys.executable, "-m", "pip", "--python", python, "install", "--quiet", "--no-deps"]
    _call([*pip, "--no-index", "--no-build-isolation", *install], folder)
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "PYTHONHOME")}
    env |= {"MPLBACKEND": "Agg", "PYTHONNOUSERSITE": "1"}
    work = folder / "empty"
    work.mkdir()
    return venv, env, work


def _repository_files(*folders: str) -> set[str]:
    return {
        p.relative_to(ROOT).as_posix()
        for folder in folders
        for p in (ROOT / folder).rglob("*")
        if p.is_file() and "__pycache__" not in p.parts and p.suffix != ".pyc"
    }


def test_the_package_list_names_every_package_of_the_source():
    """pyproject lists the packages (the data folders are mapped into the package, which a
    package search would not find): a package added to the source must be listed too."""
    config = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]
    source = {
        ".".join(p.parent.relative_to(ROOT).parts)
        for p in (ROOT / "goodput_sim").rglob("__init__.py")
    }
    mapped = {"goodput_sim.traces": "traces", "goodput_sim.configs": "configs"}
    assert set(config["packages"]) == source | set(mapped)
    assert config["package-dir"] == mapped


@needs_build
def test_the_sdist_holds_what_building_and_testing_need(built):
    with tarfile.open(built["sdist"]) as archive:
        names = {n.split("/", 1)[1] for n in archive.getnames() if "/" in n}
    wanted = _repository_files("goodput_sim", "traces", "configs", "tests", "notebooks", "docs")
    wanted |= {"LICENSE", "CHANGELOG.md", "README.md", "Makefile", "pyproject.toml"}
    wanted |= {"benchmarks/run.py"}
    assert not wanted - names, f"missing from the sdist: {sorted(wanted - names)[:20]}"


@needs_build
def test_the_wheel_carries_the_bundled_data(built):
    with zipfile.ZipFile(built["wheel"]) as archive:
        names = set(archive.namelist())
    data = {f"goodput_sim/{name}" for name in _repository_files("traces", "configs")}
    assert not data - names, f"missing from the wheel: {sorted(data - names)}"
    assert not [n for n in names if n.startswith(("traces/", "configs/", "tests/"))]


@needs_build
def test_the_installed_wheel_runs_from_an_empty_folder(built, tmp_path):
    venv, env, work = _fresh_venv(tmp_path, built["wheel"])
    python = venv / "bin" / "python"

    def cli(*args) -> str:
        return _call([venv / "bin" / "goodput-sim", *args], work, env)

    quiet = ("--quiet",)
    assert "bert" in cli("profiles", "show")
    assert "B_crit" in cli("toy", "critical-batch")
    cli("run", "--policy", "fifo", "--out", "fifo", *quiet)  # the bundled workload and profiles
    assert "wrote small.csv" in cli("workload", "generate", "--jobs", "12", "-o", "small.csv")
    cli("run", "--policy", "goodput", "--workload", "small.csv", "--out", "goodput", *quiet)
    # demo's comparison (all five policies) on a small workload: demo itself takes minutes
    assert "claim check" in cli("compare", "--workload", "small.csv", "--out", "compare", *quiet)
    cli("run", "--manifest", "fifo/manifest.json", "--out", "again", *quiet)
    assert (work / "again" / "jobs.csv").read_bytes() == (work / "fifo" / "jobs.csv").read_bytes()
    script = f"""
import json
from pathlib import Path
import goodput_sim
from goodput_sim import api, bundled
from goodput_sim.inputs.cluster import parse_cluster

assert Path(goodput_sim.__file__).is_relative_to({str(venv)!r}), goodput_sim.__file__
assert bundled.source_checkout() is None
result = api.run("fifo")
assert len(result.jobs) == 160 and result.jobs["finished"].all()
assert parse_cluster(bundled.path("configs/cluster-sia-default.yaml")).total_gpus == 64
assert sorted(p.name for p in bundled.path("traces/profiles-sia").glob("*.yaml"))
inputs = json.loads(Path("fifo/manifest.json").read_text())["inputs"]
assert inputs == {{
    "workload": "bundled:traces/workloads/default.csv",
    "profiles": "bundled:traces/profiles",
}}, inputs
"""
    _call([python, "-c", script], work, env)


@needs_build
def test_an_editable_install_reads_the_checkouts_own_data(built, tmp_path):
    """``pip install -e``: the code and the data are the checkout's (its traces/ and configs/,
    which users edit), whatever setuptools' editable finder does with the mapped folders."""
    venv, env, work = _fresh_venv(tmp_path, "--editable", built["source"])
    source = built["source"]
    script = f"""
from pathlib import Path
import goodput_sim
from goodput_sim import bundled

source = Path({str(source)!r})
assert Path(goodput_sim.__file__) == source / "goodput_sim" / "__init__.py", goodput_sim.__file__
assert bundled.source_checkout() == source
assert bundled.path("traces/profiles") == source / "traces" / "profiles"
assert bundled.path("configs/cluster-16x4.yaml").is_file()
"""
    _call([venv / "bin" / "python", "-c", script], work, env)
    assert "bert" in _call([venv / "bin" / "goodput-sim", "profiles", "show"], work, env)
