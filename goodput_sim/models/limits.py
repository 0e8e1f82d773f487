"""An application's batch-size and length limits, shared by job models, profiles and agents."""

from __future__ import annotations

import dataclasses
import functools
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
    # The application's per-example gradient covariance trace tr(Sigma) in each epoch of an
    # earlier run at batch M0 (its profile's trajectory), for agents that forecast the noise;
    # set by the engine only for agents that ask for it (``BatchAgent.reads_noise_prior``).
    noise_prior: tuple[float, ...] | None = None
    # The job's static run, (its batch, its optimizer steps by the end of each epoch, 0 first),
    # set by the engine on a job's own copy under ``tail_geometry: steps``: the steps a plan
    # is laid on, and the examples (batch x steps) it spends.
    static_run: tuple[float, tuple[float, ...]] | None = None
    # The job's category (Sia SPEC 4.8), set by the engine on a job's own copy of its
    # application's limits: ``scale-gpus`` jobs keep their requested batch (``fixed_batch_size``)
    # on at most their requested GPUs (``max_replicas``), and are valued at that batch;
    # ``rigid`` jobs also run on exactly their requested GPUs or none (``min_replicas``).
    category: str = "adaptive"
    min_replicas: int | None = None

    def problems(self) -> list[tuple[str, str]]:
        """(field, problem) for every limit out of its valid range; empty when all are valid."""
        out = []
        for name, high in _RANGES.items():
            value = getattr(self, name)
            if value is None and name in _OPTIONAL:
                continue
            if not isinstance(value, int) or isinstance(value, bool) or not 1 <= value <= high:
                out.append((name, f"must be an integer in [1, {high:g}], found {value!r}"))
        if self.category not in CATEGORIES:
            out.append(("category", f"must be one of {', '.join(CATEGORIES)}"))
        if out:
            return out
        pairs = (
            ("min_local_bsz", "max_local_bsz"),
            ("init_batch_size", "max_batch_size"),
            ("min_local_bsz", "max_batch_size"),
        )
        for low, high in pairs:
            if getattr(self, low) > getattr(self, high):
                out.append((low, f"must not exceed {high} ({getattr(self, high)})"))
        if self.fixed_batch_size is not None and self.fixed_batch_size > self.max_batch_size:
            out.append(
                ("fixed_batch_size", f"must not exceed max_batch_size ({self.max_batch_size})")
            )
        return out

    @property
    def valued_batch(self) -> int | None:
        """The one total batch a policy values the job at (a category's fixed batch), or None
        when the batch adapts. The application rule alone (ncf's) fixes only what the agent
        keeps, as in the Pollux artifact."""
        return None if self.category == "adaptive" else self.fixed_batch_size

    def runs_on(self, replicas: int) -> bool:
        """Whether the job may hold ``replicas`` GPUs: none, or within its floor and cap."""
        low = self.min_replicas or 1
        return replicas == 0 or low <= replicas <= self.cap(replicas)

    def cap(self, replicas: int) -> int:
        """``replicas`` within the application's own GPU limit, if it has one."""
        return replicas if self.max_replicas is None else min(replicas, self.max_replicas)


JOB_FIELDS = ("category", "min_replicas", "static_run")
"""Fields the engine sets on a job's own copy (its category's, :func:`for_category`, and its
static run's steps); never read from a profile."""

CATEGORIES = ("adaptive", "scale-gpus", "rigid")
"""Job categories (Sia SPEC 4.8): batch and GPUs adapt; fixed batch, GPUs chosen; both fixed."""


def for_category(limits: Limits, category: str, replicas: int, batch: int) -> Limits:
    """``limits`` of one job of ``category`` that asked for ``replicas`` GPUs and ``batch``:
    unchanged for an adaptive job."""
    if category == "adaptive":
        return limits
    return _category_limits(limits, category, replicas, batch)


@functools.lru_cache(maxsize=4096)
def _category_limits(limits: Limits, category: str, replicas: int, batch: int) -> Limits:
    """One object per distinct input, so beliefs and caches bound to it match by identity."""
    capped = limits.cap(replicas)  # the application's own rules come first (ncf's)
    return dataclasses.replace(
        limits,
        category=category,
        max_replicas=capped,
        fixed_batch_size=limits.fixed_batch_size or batch,
        min_replicas=capped if category == "rigid" else None,
    )


_MAX_BATCH = 1e9  # examples; larger limits are typos, and make batch arithmetic lose integers
_RANGES = {
    "init_batch_size": _MAX_BATCH,
    "max_batch_size": _MAX_BATCH,
    "min_local_bsz": _MAX_BATCH,
    "max_local_bsz": _MAX_BATCH,
    "max_epochs": 100_000,
    "max_replicas": 1_000_000,
    "fixed_batch_size": _MAX_BATCH,
    "min_replicas": 1_000_000,
}
_OPTIONAL = ("max_replicas", "fixed_batch_size", "min_replicas")
