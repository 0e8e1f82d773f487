"""The restart penalty: how much a scheduler discounts a job's speedup when a new allocation
would restart it (Pollux, OSDI'21 Sec. 4.2; Sia, SOSP'23 Sec. 3.3).

A job of age ``a`` that has restarted ``n`` times, each costing ``d`` seconds, has spent
``n d`` of its life restarting; one more restart is worth ``max(a - n d, 0) / (a + d)`` of
its speedup. Both policies read ``d`` from the job (the delay the engine charges it), so what a
policy believes a restart costs is what it costs."""

from __future__ import annotations


def restart_factor(
    age: float, restarts: int, delay: float, grace: bool = False, loss: float = 0.0
) -> float:
    """The factor a changed allocation's speedup is multiplied by. With ``grace`` (Sia's
    rule) a job younger than one restart delay is not discounted; without it (Pollux's), only
    a job of age and delay zero is exempt. ``loss``: seconds of work the restart would also
    throw away (a move that saves nothing), added to what this restart costs."""
    if grace and age < delay:
        return 1.0
    if age + delay <= 0:
        return 1.0
    return max(age - delay * restarts, 0.0) / (age + delay + loss)
