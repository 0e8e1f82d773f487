"""SPEC formulas written out with plain floats, as independent oracles for the tests."""

from __future__ import annotations

from goodput_sim.models.throughput import ThroughputParams


def by_hand(p: ThroughputParams, nodes: int, replicas: int, b: float, s: int = 0):
    """SPEC 3.1 written out with plain floats."""
    t_acc = p.alpha_c + p.beta_c * b
    extra = max(replicas - 2, 1e-8)
    if nodes > 1:
        t_net = p.alpha_n + p.beta_n * extra
    elif replicas > 1:
        t_net = p.alpha_r + p.beta_r * extra
    else:
        t_net = 1e-8 + 1e-8 * extra
    t_sync = (t_acc**p.gamma + t_net**p.gamma) ** (1 / p.gamma)
    return t_acc, t_sync, s * t_acc + t_sync
