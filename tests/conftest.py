"""Shared fixtures: the reference measurements beside the repository (skipped when absent), the
bundled profiles and a slice of the bundled workload."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

# The tests fit small problems, where multi-threaded BLAS gains nothing. On a busy machine its
# spinning threads made one SVD-heavy profile fit 50x slower, so use one thread. This must run
# before numpy is first imported (conftest is imported before the test modules).
for _var in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_var, "1")

# Importing the package pins OpenBLAS's kernel (goodput_sim.blas_kernel) before a test module
# loads SciPy's BLAS: otherwise results would depend on the order the modules are imported in.
import goodput_sim  # noqa: E402, F401

REFERENCE_DIR = (
    Path(__file__).resolve().parents[1].parent / "shared" / "reference" / "pollux-osdi21"
)


@pytest.fixture(scope="session")
def reference_dir() -> Path:
    """The Pollux OSDI'21 reference folder (SPEC.md, traces/, workloads/)."""
    if not (REFERENCE_DIR / "traces").is_dir():
        pytest.skip(
            "reference data not found at ../shared/reference/pollux-osdi21; "
            f"place the Pollux OSDI'21 reference folder at {REFERENCE_DIR} to run this test"
        )
    return REFERENCE_DIR


@pytest.fixture(scope="session")
def measured_profiles(reference_dir):
    """Every application of the reference traces as a MeasuredProfile, loaded once."""
    from goodput_sim.profiles import load_measured_profiles

    return load_measured_profiles(reference_dir / "traces")


@pytest.fixture(scope="module")
def profiles() -> dict:
    """The bundled application profiles, loaded once per test module (a module of its own
    may define its own)."""
    from goodput_sim.profiles import load_profiles

    return load_profiles()


@pytest.fixture(scope="module")
def slice40():
    """The first 40 jobs of the bundled workload."""
    import pandas as pd

    from goodput_sim.api import bundled_workload

    return pd.read_csv(bundled_workload()).iloc[:40]


def bundled_slices(folder: Path, count: int, size: int) -> list[Path]:
    """``count`` consecutive ``size``-job slices of the bundled workload, as CSV files."""
    import pandas as pd

    from goodput_sim.api import bundled_workload

    jobs = pd.read_csv(bundled_workload())
    paths = []
    for k in range(count):
        path = folder / f"slice-{k}.csv"
        jobs.iloc[size * k : size * (k + 1)].to_csv(path, index=False)
        paths.append(path)
    return paths


TWO_JOBS = "name,time,application,num_replicas,batch_size\na,0,cifar10,1,128\nb,60,ncf,1,256\n"
"""A two-job workload: the run behind :func:`saved_run`, and a small valid input."""


@pytest.fixture(scope="session")
def saved_run(tmp_path_factory) -> Path:
    """A finished run's folder (fifo on 2x4 GPUs, the two jobs of :data:`TWO_JOBS`), read and
    copied by the tests of damaged results; never changed."""
    from click.testing import CliRunner

    from goodput_sim.cli import main

    root = tmp_path_factory.mktemp("saved")
    (root / "w.csv").write_text(TWO_JOBS)
    args = ["run", "--policy", "fifo", "--workload", str(root / "w.csv"), "--cluster", "2x4"]
    done = CliRunner().invoke(main, [*args, "--quiet", "--no-plot", "--out", str(root / "r")])
    assert done.exit_code == 0, done.output
    return root / "r"
