"""goodput-sim: which GPU-cluster scheduling policy finishes deep-learning jobs sooner, and why."""

__version__ = "0.1.0"
