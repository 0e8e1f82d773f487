"""goodput-sim: which GPU-cluster scheduling policy finishes deep-learning jobs sooner, and why."""

from goodput_sim.blas_kernel import pin_kernel

pin_kernel()  # before numpy and SciPy load OpenBLAS: one kernel on every machine

__version__ = "0.1.0"
