"""Per-job state, split as the architecture demands: what really happens (``Job``, advanced by
the engine on ground truth) and what the scheduler knows (``JobBelief``, fitted online)."""

from __future__ import annotations

import functools
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import numpy as np
from numpy.typing import NDArray

from goodput_sim.inputs.cluster import placement_of
from goodput_sim.models.goodput import GoodputModel
from goodput_sim.models.limits import Limits
from goodput_sim.models.throughput import ThroughputModel, ThroughputParams
from goodput_sim.profiles.base import ApplicationProfile

if TYPE_CHECKING:  # named here for the fields only
    from goodput_sim.profiles.typed import TypedProfile


@dataclass(frozen=True)
class JobSpec:
    """One workload row: who arrives when, and what the user asked for."""

    name: str
    application: str
    arrival: float
    requested_replicas: int
    requested_batch: int
    category: str = "adaptive"  # adaptive, scale-gpus or rigid (Sia SPEC 4.8)


FIT_METHODS = ("engine", "artifact")


class FitMemo:
    """Throughput fits memoised by (warm start, observations), owned by one simulation.

    Jobs of one application often run the same configurations in the same order (a policy
    treats identical jobs alike), so identical fits recur: in workload-6 under the
    throughput-only policy two fits in three do. The key is every input of the fit, so a hit
    returns exactly what a fresh fit would.

    ``method``: ``"engine"`` (least squares from the previous fit, refitted when a new GPU
    shape or a per-GPU batch outside those seen arrives) or ``"artifact"`` (the Sia artifact's
    fit, :mod:`goodput_sim.models.artifact_fit`: from a fixed start, refitted at every new
    configuration, as that simulator does)."""

    def __init__(self, maxsize: int = 4096, method: str = "engine"):
        if method not in FIT_METHODS:
            raise ValueError(f"unknown fit method {method!r}; known: {', '.join(FIT_METHODS)}")
        self.method = method
        self.every_configuration = method == "artifact"
        fit = _fitted_params if method == "engine" else _artifact_params
        self.fitted = functools.lru_cache(maxsize=maxsize)(fit)


def _fitted_params(
    warm_start: ThroughputParams | None, rows: tuple[tuple[float, ...], ...]
) -> ThroughputParams:
    """Throughput parameters fitted to (nodes, replicas, b, accumulation s, step s) rows from
    ``warm_start``."""
    nodes, replicas, local_bsz, accum, step = np.array(rows, dtype=np.float64).T
    return (
        ThroughputModel(warm_start=warm_start).fit(nodes, replicas, local_bsz, accum, step).params_
    )


def _artifact_params(
    warm_start: ThroughputParams | None, rows: tuple[tuple[float, ...], ...]
) -> ThroughputParams:
    """The Sia artifact's fit of the rows (it always starts from the same point, so
    ``warm_start`` is not read)."""
    from goodput_sim.models.artifact_fit import artifact_fit

    nodes, replicas, local_bsz, accum, step = np.array(rows, dtype=np.float64).T
    return artifact_fit(nodes, replicas, local_bsz, accum, step)


@dataclass(frozen=True, eq=False)
class BeliefView:
    """A frozen copy of what the scheduler knows about a job at one round: fitted throughput
    parameters (None before the first observation), measured gradient statistics and limits.
    Policies and batch agents read only these; nothing they call changes engine state."""

    params: ThroughputParams | None
    grad_sqr: float
    grad_var: float
    limits: Limits
    oracle: bool
    version: int  # bumped whenever params or gradient statistics change
    fits: int  # refits so far
    profiled_replicas: int  # most GPUs of any configuration observed

    def max_replicas(self, total_gpus: int) -> int:
        """GPU cap that doubles with the largest size profiled (SPEC 6.2; none for an oracle),
        within the application's own limit."""
        lim = self.limits
        if lim.min_replicas is not None:  # a rigid job: its own count from the start
            return min(lim.min_replicas, total_gpus)
        by_batch = max(lim.max_batch_size // lim.min_local_bsz, 1)
        grown = total_gpus if self.oracle else max(2 * self.profiled_replicas, 1)
        return lim.cap(int(min(grown, total_gpus, by_batch)))

    @functools.cached_property
    def goodput_model(self) -> GoodputModel | None:
        """The belief as a goodput model, or None before the first observation."""
        if self.params is None:
            return None
        lim = self.limits
        return GoodputModel(
            self.params,
            lim.init_batch_size,
            lim.max_batch_size,
            lim.min_local_bsz,
            lim.max_local_bsz,
            self.grad_sqr,
            self.grad_var,
            lim.valued_batch,
        )


class JobBelief:
    """What the scheduler knows about a job, kept by the engine: a throughput model refitted
    from the (nodes, replicas, per-GPU batch) configurations the job has actually run, and its
    latest gradient statistics. The engine refreshes it once per round (:meth:`refresh`) and
    hands policies and agents a frozen :meth:`view`. In oracle mode the throughput parameters
    are given and never refitted."""

    def __init__(
        self,
        limits: Limits,
        oracle_params: ThroughputParams | None = None,
        memo: FitMemo | None = None,
    ):
        self.limits = limits
        self.oracle = oracle_params is not None
        self.params: ThroughputParams | None = oracle_params
        self.observations: dict[tuple[int, int, float], tuple[float, float]] = {}
        self.grad_sqr = 1.0
        self.grad_var = 0.0
        self.version = 0  # bumped whenever params or gradient statistics change
        self.fits = 0
        self._stale = False
        self._max_replicas = 0  # most GPUs of any observed configuration
        self._memo = memo or FitMemo(maxsize=64)
        self._view: BeliefView | None = None

    def observe(
        self, nodes: int, replicas: int, local_bsz: float, step: float, sync: float
    ) -> None:
        """Record a configuration the job ran (first observation of a key wins, SPEC 3.2).

        A refit is due only when the observation can change the fit materially: a new
        (nodes, replicas) pair or a per-GPU batch outside the range seen so far (SPEC 10's
        suggestion; compute time is linear in the batch, so points inside the range add little).
        The observation is kept either way and used by the next refit."""
        key = (nodes, replicas, float(local_bsz))  # as observed() reads it
        if key in self.observations:
            return
        seen = self.observations.keys()
        new_shape = all((n, r) != (nodes, replicas) for n, r, _ in seen)
        batches = [b for _, _, b in seen]
        outside = not batches or not min(batches) <= local_bsz <= max(batches)
        self.observations[key] = (step - sync, step)
        self._max_replicas = max(self._max_replicas, int(replicas))
        if (new_shape or outside or self._memo.every_configuration) and not self.oracle:
            self._stale = True

    def observed(self, nodes: int, replicas: int, local_bsz: float) -> bool:
        """Whether this configuration has been recorded (a later observation adds nothing)."""
        return (nodes, replicas, float(local_bsz)) in self.observations

    @property
    def stale(self) -> bool:
        """Whether an observation since the last fit calls for a refit."""
        return self._stale

    def set_grad_stats(self, sqr: float, var: float) -> None:
        if (sqr, var) != (self.grad_sqr, self.grad_var):
            self.grad_sqr, self.grad_var = float(sqr), float(var)
            self.version += 1

    def refresh(self) -> None:
        """Refit the throughput model if new configurations were observed since the last fit."""
        if not self._stale:
            return
        rows = tuple((*key, *times) for key, times in self.observations.items())
        start = None if self._memo.every_configuration else self.params
        self.params = self._memo.fitted(start, rows)
        self.fits += 1
        self.version += 1
        self._stale = False

    def view(self) -> BeliefView:
        """The current belief, frozen (one object per state, so its goodput model is built
        once however many readers ask)."""
        view = self._view
        if view is None or (view.version, view.profiled_replicas) != (
            self.version,
            self._max_replicas,
        ):
            view = BeliefView(
                self.params,
                self.grad_sqr,
                self.grad_var,
                self.limits,
                self.oracle,
                self.version,
                self.fits,
                self._max_replicas,
            )
            self._view = view
        return view


@functools.cache
def _zero_row(nodes: int) -> NDArray[np.int64]:
    """The read-only allocation of a job holding no GPU on ``nodes`` nodes (immutable, so one
    is shared by every job and simulation)."""
    row = np.zeros(nodes, dtype=np.int64)
    row.flags.writeable = False
    return row


@dataclass
class Plan:
    """A job's per-epoch configuration and progress rate from ``first_epoch`` on."""

    key: tuple
    first_epoch: int
    local_bsz: NDArray
    accum_steps: NDArray
    rate: NDArray  # progress (M0-steps) per second in each epoch
    step: NDArray  # true seconds per optimizer step without accumulation, per epoch
    sync: NDArray  # of which gradient synchronisation
    samples: NDArray  # examples processed per second in each epoch


@dataclass
class StepLog:
    """The optimizer steps a job took, as (epoch, total batch, steps) runs in order."""

    epochs: list[int] = field(default_factory=list)
    batches: list[float] = field(default_factory=list)
    steps: list[float] = field(default_factory=list)

    def add(self, epoch: int, batch: float, steps: float) -> None:
        if steps <= 0:
            return
        if self.epochs and self.epochs[-1] == epoch and self.batches[-1] == batch:
            self.steps[-1] += steps
        else:
            self.epochs.append(epoch)
            self.batches.append(batch)
            self.steps.append(steps)


@dataclass(eq=False)
class Job:
    """Ground-truth runtime state of one job, owned and advanced by the engine."""

    spec: JobSpec
    profile: ApplicationProfile
    belief: JobBelief
    num_nodes: int
    name: str = field(init=False)  # the spec's, read often enough to keep as an attribute
    allocation: NDArray[np.int64] = field(init=False)
    replicas: int = field(init=False)  # GPUs in use, derived from allocation by assign()
    nodes_used: int = field(init=False)
    placement: tuple[int, ...] = field(init=False)  # GPUs on each used node, derived too
    placement_label: str = field(init=False)  # "name=GPUs.per.node", as rounds.csv writes it
    layout: tuple[int, ...] = field(init=False)  # the same in the policy's node order, if any
    progress: float = 0.0
    epoch: int = 0
    local_bsz: int = 0
    accum_steps: int = 0
    restart_remaining: float = 0.0
    num_restarts: int = 0
    start_time: float | None = None
    finish_time: float | None = None
    gpu_seconds: float = 0.0
    examples: float = 0.0  # training examples processed
    train_seconds: float = 0.0  # time spent training (allocated, past the restart delay)
    train_gpu_seconds: float = 0.0  # GPU-seconds spent training
    last_batch: int = 0  # total batch of the last configuration run
    slowdown: float = 0.0  # interference slowdown in force this interval
    stats_key: tuple | None = None  # (batch, epoch) of the gradient statistics last reported
    # (batch, epoch) of the last stretch of training, where its statistics were measured (runs
    # whose jobs know only measured statistics, as the Sia artifact's; None before it trains).
    measured_at: tuple[int, int] | None = None
    plan: Plan | None = None  # engine cache of per-epoch rates for the current configuration
    # The policy view's fields fixed by the job's profile, with that profile (Views caches them).
    view_fields: tuple[ApplicationProfile, dict] | None = None
    # Failures and checkpoints (all zero while no node fails).
    failures: int = 0  # allocations ended by a node failure
    restores: int = 0  # restarts from a checkpoint after a failure
    lost_gpu_seconds: float = 0.0  # training GPU-seconds whose progress a failure undid
    lost_epochs: float = 0.0  # the progress undone, in (fractional) epochs
    restart_gpu_seconds: float = 0.0  # GPU-seconds spent in restart delays
    checkpoint: tuple[float, int, float] = (0.0, 0, 0.0)  # (progress, epoch, time) last saved
    next_checkpoint: float = float("inf")  # when the next periodic checkpoint is taken
    restore_pending: bool = False  # the next allocation restores from a checkpoint
    saving: tuple[float, int, float] | None = None  # a checkpoint being saved, valid from then
    save_due: bool = False  # a reallocation's save is charged at the next start
    saves: int = 0  # checkpoints saved (periodic and charged reallocation ones)
    crashes: int = 0  # job-level crashes
    preemptions: int = 0  # stops because a spot node it ran on was reclaimed
    crash_left: float = float("inf")  # running seconds until the next crash
    crash_from: float | None = None  # when the job last started running (crashes on)
    crash_token: int = 0  # the pending crash event's number (stale events are ignored)
    # Several GPU types: the application's profiles by type, the type the job runs on (its
    # ``profile`` is that type's), the types it ran on, its beliefs per type (each fed only by
    # what it ran there) and its GPU-seconds per type.
    typed: TypedProfile | None = None
    gpu_type: str | None = None
    type_history: list[str] = field(default_factory=list)
    type_beliefs: dict[str, JobBelief] = field(default_factory=dict)
    gpu_seconds_by_type: dict[str, float] = field(default_factory=dict)
    # Learning-rate-aware progress (sim.lr_progress): the job's own work per epoch (its example
    # budget, or its static run's steps; None: its profile's progress thresholds) and the steps
    # it took, where recorded.
    work: NDArray[np.float64] | None = None
    work_in_steps: bool = False  # the work is optimizer steps, not examples (tail_geometry steps)
    step_log: StepLog | None = None

    def __post_init__(self) -> None:
        self.name = self.spec.name
        self.assign(np.zeros(self.num_nodes, dtype=np.int64))

    @property
    def thresholds(self) -> NDArray[np.float64]:
        """Cumulative work by the end of each epoch: its profile's progress, or its own."""
        return self.profile.progress_thresholds if self.work is None else self.work

    def same_shape(self, row: NDArray[np.int64], node_types: NDArray[np.int64]) -> bool:
        """Whether ``row`` holds this job's GPUs per node on other nodes of its one GPU type."""
        if not self.replicas:
            return False
        old, new = np.flatnonzero(self.allocation), np.flatnonzero(row)
        kinds = set(node_types[new])
        if len(old) != len(new) or set(node_types[old]) != kinds or len(kinds) > 1:
            return False
        return sorted(self.allocation[old].tolist()) == sorted(row[new].tolist())

    def move(self, row: NDArray[np.int64], node_order: tuple[int, ...] | None) -> None:
        """Go on with this job's state, delay and plan on other nodes of the same shape."""
        layout = self.layout
        self.assign(row, node_order)
        if self.layout != layout:
            self.plan = None

    def assign(self, row: NDArray[np.int64], node_order: tuple[int, ...] | None = None) -> None:
        """Set the GPUs per node (a private, read-only copy; one shared read-only zero row for
        every job holding nothing, so waiting and finished jobs cost no per-node memory) and
        the derived counts; ``node_order`` is the order in which the policy filled the used
        nodes (default: node ids)."""
        if np.any(row):
            self.allocation = np.array(row, dtype=np.int64)
            self.allocation.flags.writeable = False
        else:
            self.allocation = _zero_row(len(row))
        self.replicas = int(self.allocation.sum())
        self.nodes_used = int(np.count_nonzero(self.allocation))
        self.placement = placement_of(self.allocation)
        self.placement_label = f"{self.name}={'.'.join(map(str, self.placement))}"
        order = node_order or ()
        self.layout = tuple(int(row[n]) for n in order) if order else self.placement

    def release(self) -> None:
        """Drop what only a running job needs (its per-epoch plan and per-node GPUs), once it
        has finished: a long trace then holds little per finished job."""
        self.plan = self.view_fields = None
        self.assign(_zero_row(self.num_nodes))

    @property
    def finished(self) -> bool:
        return self.finish_time is not None

    @property
    def total_batch(self) -> int:
        return self.replicas * self.local_bsz * (self.accum_steps + 1)
