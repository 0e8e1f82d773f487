"""Learning-rate-aware progress and seed 004's objective (:mod:`goodput_sim.sim.lr_progress`).

Under ``--progress lr-aware`` a job's work is a fixed budget of examples (what a run at its
static batch processes under the noise model), and its final loss follows from its learning
rate and gradient noise step by step; with ``--seed-objective`` the same objectives are recorded
under Pollux's noise model. Either way every job logs its steps and reports its objectives.

``--tail-geometry`` says how a tail-weighted plan is realised under ``lr-aware``. ``examples``
(the default): each epoch keeps the static run's examples, so an epoch run at a larger batch
takes fewer steps, and a step takes the learning rate of where it falls in its epoch's examples.
``steps`` (seed 004's geometry): a job's work is its static run's optimizer steps, epoch by
epoch, and the agent lays its plan on those steps (:mod:`goodput_sim.agents.tail`), so the run
takes the static run's steps, with the static run's learning rate at each step, and spends its
examples (exactly, where the batches run as planned). Only agents whose batches mean something
on the static run's steps take it: the tail-weighted agent, and the fixed agent (whose run is
the same in both geometries)."""

from __future__ import annotations

from goodput_sim.errors import InputError
from goodput_sim.sim.dynamics.base import Dynamic, World
from goodput_sim.sim.jobs import Job, StepLog
from goodput_sim.sim.lr_progress import SeedObjective, example_budget, static_batch
from goodput_sim.sim.recording import OBJECTIVE_COLUMNS
from goodput_sim.spec import has_failures

STEP_AGENTS = ("fixed", "tail-weighted")
"""Agents that run under ``tail_geometry: steps``: the static batch, and the plan laid on its
steps."""


class LearningRateProgress(Dynamic):
    """Step logs, example (or step) budgets (``lr-aware``) and seed 004's objective columns."""

    name = "lr-aware-progress"
    settings = ("progress", "lr_schedule", "lr_descent", "seed_objective", "tail_geometry")

    def __init__(self, world: World):
        super().__init__(world)
        config, book = world.config, world.book
        self.lr_aware = config.progress == "lr-aware"
        self.in_steps = config.tail_geometry == "steps"
        if has_failures(config, world.cluster, book.profiles.values()):
            option = "--progress lr-aware" if self.lr_aware else "--seed-objective"
            raise InputError(
                option, "is not supported with failures (lost work would have to undo loss too)"
            )
        agent = world.agent.name
        if self.in_steps and agent not in STEP_AGENTS:
            raise InputError(
                "--tail-geometry",
                f"steps lays a tail-weighted plan on the static run's optimizer steps; agent "
                f"{agent!r} has no such plan (use {' or '.join(STEP_AGENTS)}, or examples)",
            )
        self.objectives = {
            app: SeedObjective(truth, book.schedules[app], config.lr_descent, self.lr_aware)
            for app, truth in book.truths.items()
        }
        self._budgets = {}
        for job in book.request_jobs:
            app, batch = job.spec.application, static_batch(job)
            try:
                self.objectives[app].static(batch)
            except ValueError as problem:
                raise InputError("--lr-descent", f"job {job.name!r}: {problem}") from None
            if self.lr_aware and (app, batch) not in self._budgets:
                budget = example_budget(job.profile, batch)
                self._budgets[app, batch] = budget / batch if self.in_steps else budget
                self._budgets[app, batch].flags.writeable = False
        self.columns = OBJECTIVE_COLUMNS

    @property
    def replaces_work(self) -> bool:  # type: ignore[override]
        return self.lr_aware

    @classmethod
    def build(cls, world: World) -> LearningRateProgress | None:
        config = world.config
        return cls(world) if config.progress == "lr-aware" or config.seed_objective else None

    def job_made(self, job: Job) -> None:
        job.step_log = StepLog()
        if self.lr_aware:
            job.work = self._budgets[job.spec.application, static_batch(job)]
            job.work_in_steps = self.in_steps

    def job_columns(self, job: Job) -> dict[str, float]:
        """Seed 004's objectives of a finished job (NaN for an unfinished one)."""
        if not job.finished:
            return dict.fromkeys(OBJECTIVE_COLUMNS, float("nan"))
        objective = self.objectives[job.spec.application]
        return objective.of(job.step_log, static_batch(job), job.work_in_steps)
