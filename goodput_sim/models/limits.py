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
