"""One BLAS thread for the simulator's own work.

The linear algebra of a run is small (throughput fits, first interpolations of measured
profiles), and OpenBLAS's idle threads spin on the machine's other cores: beside other runs a
workload-6 command took 4.8-10.7 s of CPU (once 23 s) instead of 4.7 s, and building its
simulation 7.3 s instead of 0.02 s. Every entry point (the CLI, building and running a
simulation, reading a result's fairness) runs under :func:`one_blas_thread`."""

from __future__ import annotations

from threadpoolctl import threadpool_limits


def one_blas_thread() -> threadpool_limits:
    """A context manager limiting every loaded BLAS library to one thread."""
    return threadpool_limits(limits=1, user_api="blas")
