"""Checkpoints: when jobs save their state, what a save costs, and what a move by the policy
keeps.

* Periodic checkpoints, where work can be lost (node failures, reclaims, job crashes, moves
  that save nothing) or saves cost time: every ``checkpoint_interval`` seconds of training
  (the run's, ``auto``, the profile's, else 30 minutes). ``auto`` is Young/Daly's interval,
  ``sqrt(2 x save seconds x effective MTBF)`` (Young 1974, Daly 2006). A save that costs time
  stops training for it (counted with the restart delays); the saved state counts once the
  save has finished.
* Reallocation checkpoints (``reallocation_checkpoint``): a running job the policy moves keeps
  its progress for free (``free``, as AdaptDL), pays a save at its next start (``charged``),
  or falls back to its last checkpoint (``none``).
* Every restart saves the job's state at the time it resumes.
"""

from __future__ import annotations

import numpy as np

from goodput_sim.errors import InputError
from goodput_sim.sim.dynamics.base import Dynamic, Interruption, LossCause, World
from goodput_sim.sim.jobs import Job
from goodput_sim.sim.progress import advance_job, settle_save, state_at
from goodput_sim.spec import SimConfig

DEFAULT_CHECKPOINT_SECONDS = 1800.0  # when neither the run nor the profile sets one
NO_FAILURE_INTERVAL = 86400.0
"""Seconds between checkpoints that ``auto`` takes when nothing fails: a day."""


def young_daly(save_seconds: float, mtbf_seconds: float) -> float:
    """The checkpoint interval that minimises expected lost time to first order (Young 1974,
    Daly 2006): ``sqrt(2 x save x MTBF)``; :data:`NO_FAILURE_INTERVAL` when nothing fails."""
    if not np.isfinite(mtbf_seconds):
        return NO_FAILURE_INTERVAL
    return float(np.sqrt(2.0 * save_seconds * mtbf_seconds))


def save_seconds(config: SimConfig, job: Job) -> float:
    """Seconds a checkpoint of the job takes to save: the run's, else its application's."""
    own = config.checkpoint_seconds
    return own if own is not None else (job.profile.checkpoint_seconds or 0.0)


class Checkpoints(Dynamic):
    """Periodic and reallocation checkpoints, and the ``saves`` column where saves cost time."""

    name = "checkpoints"
    settings = ("checkpoint_interval", "checkpoint_seconds", "reallocation_checkpoint")

    def __init__(self, world: World):
        super().__init__(world)
        self.periodic = False  # whether jobs take periodic checkpoints (set by check)

    def check(self) -> None:
        """Periodic checkpoints where work can be lost or saves cost time; ``auto`` needs
        both a save time and something that fails."""
        world, config = self.world, self.world.config
        saves = [save_seconds(config, job) > 0 for job in world.book.request_jobs]
        costly = any(saves)
        crashes = any(d.loses_work for d in world.dynamics)
        if config.checkpoint_interval == "auto":
            if not costly or not all(saves):
                raise InputError(
                    "--checkpoint-interval", "auto needs a save time (--checkpoint-seconds)"
                )
            every_node = range(world.cluster.nodes)
            if not (world.pool.failure_rate(every_node) > 0 or crashes):
                raise InputError(
                    "--checkpoint-interval", "auto needs an MTBF (--mtbf or job crashes)"
                )
        unsaved = config.reallocation_checkpoint == "none"
        self.periodic = world.pool.fails or crashes or costly or unsaved
        self.columns = ("saves",) if costly else ()

    def prices_moves(self) -> bool:
        """Moves matter where checkpoints are taken or a move saves or loses work."""
        return self.periodic or self.world.config.reallocation_checkpoint != "free"

    def effective_mtbf(self, job: Job) -> float:
        """Seconds between the events that undo a job's work: failures and reclaims of the
        nodes it runs on (each node's rate, its domains' too; a job not placed counts as on
        the first ``max(nodes_used, 1)`` nodes) and its own crashes, as rates added (inf:
        none)."""
        rate = self.world.failure_rate(job)
        return 1.0 / rate if rate > 0 else float("inf")

    def interval(self, job: Job) -> float:
        """Seconds of training between checkpoints: the run's, ``auto`` (Young/Daly), the
        profile's, else 30 minutes."""
        config = self.world.config
        if config.checkpoint_interval == "auto":
            return young_daly(save_seconds(config, job), self.effective_mtbf(job))
        own = getattr(job.profile, "checkpoint_interval", None)
        return config.checkpoint_interval or own or DEFAULT_CHECKPOINT_SECONDS

    def move_cost(self, job: Job, now: float) -> float:
        """Under ``none`` a move loses the training since the job's last checkpoint."""
        if self.world.config.reallocation_checkpoint != "none" or not job.replicas:
            return 0.0
        return max(now - job.checkpoint[2], 0.0)

    def stopping(self, job: Job, why: Interruption) -> None:
        """A running job the policy moves, or whose node the autoscaler removes, saves or not
        (``reallocation_checkpoint``): both are announced moves."""
        if why.cause in (LossCause.REALLOCATED, LossCause.NODE_REMOVED):
            mode = self.world.config.reallocation_checkpoint
            if mode == "none":
                self.world.lose_work(job, why.time)
            job.save_due = mode == "charged"

    def restarting(self, job: Job, now: float) -> None:
        """The save of its last move (or of a reclaim's notice) is charged on top of the
        restart; the next periodic checkpoint is an interval after it resumes."""
        if job.save_due:
            job.restart_remaining += save_seconds(self.world.config, job)
            job.saves += 1
            job.save_due = False
        if self.periodic:
            job.next_checkpoint = now + job.restart_remaining + self.interval(job)

    def advance(self, job: Job, start: float, end: float) -> bool:
        if not self.periodic or job.next_checkpoint > end:
            return False
        if save_seconds(self.world.config, job) > 0:
            self._advance_saving(job, start, end)
            return True
        self._take_checkpoint(job, start, end)
        return False

    def _advance_saving(self, job: Job, start: float, end: float) -> None:
        """Advance a job whose checkpoints cost time: at each checkpoint in (start, end] it
        stops training for the save (counted with its restart delays), and the saved state
        counts once the save has finished."""
        delay, t = save_seconds(self.world.config, job), start
        while not job.finished and job.next_checkpoint <= end:
            when = job.next_checkpoint
            advance_job(job, t, when)
            t = when
            if job.finished:
                return
            settle_save(job, when)
            job.saving = (job.progress, job.epoch, when + delay)
            job.restart_remaining += delay
            job.saves += 1
            job.next_checkpoint = when + delay + self.interval(job)
        if not job.finished and end > t:
            advance_job(job, t, end)

    def _take_checkpoint(self, job: Job, start: float, end: float) -> None:
        """Record the job's state at its last periodic checkpoint in (start, end], computed
        from its plan aside, so that the advance itself is the same with or without it."""
        every = self.interval(job)
        count = np.floor((end - job.next_checkpoint) / every)
        when = job.next_checkpoint + count * every
        progress, epoch = state_at(job, start, when)
        job.checkpoint = (progress, epoch, when)
        job.next_checkpoint = when + every

    def job_columns(self, job: Job) -> dict[str, int]:
        return {"saves": job.saves} if self.columns else {}
