"""One OpenBLAS kernel on every x86-64 CPU (:mod:`goodput_sim.blas_kernel`): importing the
package pins it unless the user chose one, and a SciPy BLAS loaded before the pin is warned
about at the first fit that calls it."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from goodput_sim.blas_kernel import KERNEL, VARIABLE, _runs_kernel

needs_kernel = pytest.mark.skipif(
    not _runs_kernel(), reason=f"this CPU does not run OpenBLAS's {KERNEL} kernels (no pin)"
)
SCIPY_KERNELS = (
    "from threadpoolctl import threadpool_info\n"
    "print(os.environ.get(VARIABLE), sorted({i.get('architecture') for i in threadpool_info()\n"
    "      if i.get('internal_api') == 'openblas' and 'scipy' in i['filepath']}))\n"
)


def run(program: str, **env: str) -> str:
    """What ``program`` prints, in a fresh process with ``env`` and no kernel chosen before."""
    environment = {k: v for k, v in os.environ.items() if k != VARIABLE} | env
    done = subprocess.run(
        [sys.executable, "-W", "error::UserWarning", "-c", program],
        env=environment,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    return done.stdout.strip()


@needs_kernel
def test_importing_the_package_pins_the_kernel_scipy_then_loads():
    program = (
        "import os\nimport goodput_sim\nimport scipy.optimize\n"
        "from goodput_sim.blas_kernel import VARIABLE\n" + SCIPY_KERNELS
    )
    assert run(program) == f"{KERNEL} ['{KERNEL}']"


def test_a_kernel_the_user_chose_is_kept():
    program = "import os\nimport goodput_sim\nfrom goodput_sim.blas_kernel import VARIABLE\n"
    assert run(program + "print(os.environ[VARIABLE])", **{VARIABLE: "Sandybridge"}) == (
        "Sandybridge"
    )


@needs_kernel
def test_a_scipy_blas_loaded_before_the_pin_is_warned_about_once():
    """SciPy imported before goodput_sim (here on another kernel): the first artifact fit warns,
    naming the kernel and how to avoid it; later fits say nothing more."""
    program = (
        "import os, warnings\n"
        f"os.environ['{VARIABLE}'] = 'Sandybridge'\n"
        "import scipy.optimize\n"
        "import goodput_sim\n"
        f"os.environ['{VARIABLE}'] = '{KERNEL}'\n"
        "from goodput_sim.models.artifact_fit import artifact_fit\n"
        "with warnings.catch_warnings(record=True) as caught:\n"
        "    warnings.simplefilter('always')\n"
        "    for _ in range(2):\n"
        "        artifact_fit([1, 1], [1, 2], [128, 98], [0.10, 0.08], [0.10, 0.09])\n"
        "print(len(caught), caught[0].category.__name__, caught[0].message)\n"
    )
    count, category, message = run(program).split(" ", 2)
    assert (count, category) == ("1", "BlasKernelWarning")
    assert "Sandybridge" in message and f"{VARIABLE}={KERNEL}" in message


@needs_kernel
def test_no_warning_when_the_pin_came_first():
    program = (
        "import goodput_sim\nimport scipy.optimize\n"
        "from goodput_sim.models.artifact_fit import artifact_fit\n"
        "artifact_fit([1, 1], [1, 2], [128, 98], [0.10, 0.08], [0.10, 0.09])\nprint('quiet')\n"
    )
    assert run(program) == "quiet"
