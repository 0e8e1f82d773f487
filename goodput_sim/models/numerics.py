"""A number both the step-time model (:mod:`goodput_sim.models.throughput`) and its fit
(:mod:`goodput_sim.models.throughput_fit`) use, kept apart so that neither imports the other
for it: the fit loads only when a fit runs."""

from __future__ import annotations

TINY = 1e-8
"""The floor of the model's positive parameters and times (lower bounds, logs, a single GPU's
exchange time)."""
