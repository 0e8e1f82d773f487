"""One OpenBLAS kernel on every x86-64 CPU, so that results do not depend on the machine.

OpenBLAS picks its kernels for the CPU it loads on, and they sum in different orders. SciPy's
L-BFGS-B calls BLAS at every step, and the Sia artifact's throughput fit (sia's default) runs
it: on a CPU with AVX-512 the fitted parameters differed from those of an AVX2 machine in their
last bits, enough to turn some of sia's ties the other way (a 1.7% different average JCT over
the Philly log's first day). So before numpy or SciPy load OpenBLAS, :func:`pin_kernel` asks for
its Haswell kernels, which every x86-64 CPU with AVX2 and FMA runs, unless ``OPENBLAS_CORETYPE``
is already set; worker processes inherit the setting. :func:`check_kernel` warns when a SciPy
BLAS was loaded before the pin (SciPy imported before goodput_sim) on another kernel.
"""

from __future__ import annotations

import functools
import os
import platform
import warnings

VARIABLE = "OPENBLAS_CORETYPE"
KERNEL = "Haswell"


def pin_kernel() -> None:
    """Set ``OPENBLAS_CORETYPE`` to :data:`KERNEL` where the CPU runs it and nothing set it."""
    if VARIABLE not in os.environ and _runs_kernel():
        os.environ[VARIABLE] = KERNEL


def _runs_kernel() -> bool:
    """Whether this is an x86-64 CPU with AVX2 and FMA (Linux's CPU flags; False elsewhere)."""
    if platform.machine().lower() not in ("x86_64", "amd64"):
        return False
    try:
        with open("/proc/cpuinfo", encoding="ascii", errors="replace") as cpuinfo:
            for line in cpuinfo:
                if line.startswith("flags"):
                    return {"avx2", "fma"} <= set(line.partition(":")[2].split())
    except OSError:
        pass
    return False


class BlasKernelWarning(UserWarning):
    """SciPy's BLAS runs another kernel than the pinned one: last bits may differ by machine."""


@functools.cache
def check_kernel() -> None:
    """Warn once if a loaded SciPy OpenBLAS runs another kernel than the one pinned (numpy's own
    is left out: the fits do not call it)."""
    if os.environ.get(VARIABLE) != KERNEL:
        return
    from threadpoolctl import threadpool_info

    for library in threadpool_info():
        path, kernel = library.get("filepath") or "", library.get("architecture")
        if library.get("internal_api") != "openblas" or "numpy" in os.path.basename(
            os.path.dirname(path)
        ):
            continue
        if kernel not in (None, KERNEL):
            warnings.warn(
                f"SciPy's OpenBLAS ({os.path.basename(path)}) was loaded before goodput_sim and "
                f"runs its {kernel} kernels, not {KERNEL}: sia's default throughput fit may "
                "then differ from other machines' in the last bits, and so may its choices. "
                f"Import goodput_sim before SciPy, or set {VARIABLE}={KERNEL} before Python "
                "starts.",
                BlasKernelWarning,
                stacklevel=3,
            )
            return
