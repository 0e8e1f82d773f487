"""An application's batch-size and length limits, shared by job models, profiles and agents."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Limits:
    """Batch-size and length limits of an application (SPEC 1.6)."""

    init_batch_size: int  # M0: the reference batch that progress is measured against
    max_batch_size: int
    min_local_bsz: int
    max_local_bsz: int
    max_epochs: int
    # Optional rules of the application, for the policies and agents that choose GPU counts and
    # batch sizes: at most this many GPUs, and a total batch that is never adapted. The Pollux
    # artifact sets both for ncf (1 GPU, 32768) under Pollux and Optimus (SPEC 5.5, 6.2, 7.1).
    max_replicas: int | None = None
    fixed_batch_size: int | None = None
    # The learning-rate schedule the application trains with (constant, step or cosine), for
    # agents that plan batches around it; None: the agent's default.
    lr_schedule: str | None = None

    def cap(self, replicas: int) -> int:
        """``replicas`` within the application's own GPU limit, if it has one."""
        return replicas if self.max_replicas is None else min(replicas, self.max_replicas)
