"""Goodput = throughput x statistical efficiency, and the best batch configuration (SPEC 4.2-4.3).

Everything here is vectorised over many (nodes, replicas) allocations at once: the candidate
batch sizes form a (allocations x candidates) grid evaluated in a handful of numpy operations.
"""

from __future__ import annotations

import dataclasses
import functools
from dataclasses import dataclass

import numpy as np
from numpy.typing import ArrayLike, NDArray

from goodput_sim.models.efficiency import gain
from goodput_sim.models.limits import Limits
from goodput_sim.models.throughput import ThroughputParams, step_times

CANDIDATES = 50  # geometrically spaced total-batch candidates per allocation (SPEC 4.2)
_FRACTIONS = np.linspace(0.0, 1.0, CANDIDATES)[None, :]
_EPS = 1e-8


@dataclass(frozen=True)
class BatchChoice:
    """Best configuration per allocation: goodput (M0-samples/s), per-GPU batch, accumulation."""

    goodput: NDArray
    local_bsz: NDArray
    accum_steps: NDArray


@dataclass(frozen=True, eq=False)
class ConfigGrid:
    """Candidate configurations of (nodes, replicas) pairs (rows) and what they cost: per-GPU
    batch, accumulation steps, total batch and step time per candidate, and which candidates
    fall outside the per-GPU batch limits (None: all count). Gradient statistics do not enter,
    so a job whose statistics change while its fit does not reuses its grid."""

    key: GoodputModel  # the model it was built from, without its statistics
    replicas: NDArray  # per pair
    local_bsz: NDArray
    accum: NDArray
    total: NDArray
    t_iter: NDArray
    outside: NDArray | None

    def __post_init__(self) -> None:
        """Every array C-ordered and read-only: grids are shared, and the batch kernel then
        sees one type of argument."""
        for name in ("replicas", "local_bsz", "accum", "total", "t_iter", "outside"):
            array = getattr(self, name)
            if array is not None:
                object.__setattr__(self, name, _frozen(array))


@dataclass(frozen=True)
class GoodputModel:
    """A job's belief: fitted throughput parameters plus its current gradient statistics."""

    params: ThroughputParams
    init_batch_size: int
    max_batch_size: int
    min_local_bsz: int
    max_local_bsz: int
    grad_sqr: float
    grad_var: float
    fixed_batch: int | None = None  # the one total batch valued (a job category's), else None
    # Candidate batches as the Sia reference prices configurations (candidate_configs)
    single_precision: bool = False

    @functools.cached_property
    def neutral_statistics(self) -> GoodputModel:
        """This model with neutral gradient statistics (:func:`without_statistics`); cached in
        the instance's ``__dict__``, which equality and hashing (over the fields) ignore."""
        return _neutral_statistics(self)

    def throughput(self, nodes, replicas, local_bsz, accum_steps=0) -> NDArray:
        """Examples per second."""
        *_, t_iter = step_times(self.params, nodes, replicas, local_bsz, accum_steps)
        return _total_batch(replicas, local_bsz, accum_steps) / t_iter

    def goodput(
        self, nodes, replicas, local_bsz, accum_steps=0, grad_sqr=None, grad_var=None
    ) -> NDArray:
        """Progress per second in M0-samples: ``M0 * gain(M) / T_iter``, with the model's
        gradient statistics unless others are given."""
        *_, t_iter = step_times(self.params, nodes, replicas, local_bsz, accum_steps)
        sqr = self.grad_sqr if grad_sqr is None else grad_sqr
        var = self.grad_var if grad_var is None else grad_var
        return self._progress_rate(_total_batch(replicas, local_bsz, accum_steps), t_iter, sqr, var)

    def _progress_rate(self, total, t_iter, sqr, var) -> NDArray:
        """``M0 * gain(M) / T_iter`` of total batches ``total`` taking ``t_iter`` seconds."""
        return self.init_batch_size * gain(total, self.init_batch_size, sqr, var) / t_iter

    def optimize(
        self,
        nodes: ArrayLike,
        replicas: ArrayLike,
        statistical: bool = True,
        grad_sqr: ArrayLike | None = None,
        grad_var: ArrayLike | None = None,
        distinct: bool = False,
    ) -> BatchChoice:
        """Best (b, s) for each (nodes, replicas) pair, maximising goodput (or, with
        ``statistical=False``, raw examples per second, the throughput-only objective).

        ``grad_sqr``/``grad_var`` optionally give each pair its own gradient statistics (a job
        re-choosing its batch at each upcoming epoch); by default the model's are used. One
        pair with many statistics shares one candidate grid. Many pairs that repeat are solved
        once each, unless the caller knows them ``distinct``.
        """
        nodes, replicas = np.broadcast_arrays(
            np.atleast_1d(np.asarray(nodes, dtype=np.float64)),
            np.atleast_1d(np.asarray(replicas, dtype=np.float64)),
        )
        per_pair = grad_sqr is not None
        # Many allocations repeat: solve each pair once.
        if nodes.size > 64 and not (per_pair or distinct):
            pairs, inverse = np.unique(
                np.stack([nodes, replicas], axis=1), axis=0, return_inverse=True
            )
            if len(pairs) < nodes.size:
                unique = self.optimize(pairs[:, 0], pairs[:, 1], statistical)
                inverse = inverse.ravel()
                return BatchChoice(
                    unique.goodput[inverse], unique.local_bsz[inverse], unique.accum_steps[inverse]
                )
        if nodes.size <= _SHARED_PAIRS:
            key = without_statistics(self)
            grid = _shared_grid(key, tuple(nodes.tolist()), tuple(replicas.tolist()))
        else:
            grid = self.config_grid(nodes, replicas)
        return self.choose(grid, statistical, grad_sqr, grad_var)

    def config_grid(self, nodes: ArrayLike, replicas: ArrayLike) -> ConfigGrid:
        """The candidate configurations of each (nodes, replicas) pair, with their step times:
        :meth:`optimize`'s work that reads the fitted parameters and limits only."""
        nodes, replicas = np.broadcast_arrays(
            np.atleast_1d(np.asarray(nodes, dtype=np.float64)),
            np.atleast_1d(np.asarray(replicas, dtype=np.float64)),
        )
        if self.fixed_batch is None:
            local_bsz, accum = candidate_configs(
                replicas,
                self.init_batch_size,
                self.max_batch_size,
                self.min_local_bsz,
                self.max_local_bsz,
                single_precision=self.single_precision,
            )
            outside = (local_bsz < self.min_local_bsz) | (local_bsz > self.max_local_bsz)
        else:  # one candidate: the fixed batch split over each pair's GPUs; it runs however
            local_bsz, accum = (  # it splits
                x[:, None]
                for x in _split_fixed(
                    self.fixed_batch,
                    replicas,
                    self.init_batch_size,
                    self.max_batch_size,
                    self.max_local_bsz,
                    False,
                )
            )
            outside = None
        r = replicas[:, None]
        *_, t_iter = step_times(self.params, nodes[:, None], r, local_bsz, accum)
        total = _total_batch(r, local_bsz, accum)
        key = without_statistics(self)
        return ConfigGrid(key, replicas, local_bsz, accum, total, t_iter, outside)

    def choose(
        self,
        grid: ConfigGrid,
        statistical: bool = True,
        grad_sqr: ArrayLike | None = None,
        grad_var: ArrayLike | None = None,
    ) -> BatchChoice:
        """:meth:`optimize` on a grid from :meth:`config_grid` of a model equal to this one
        but for its gradient statistics (any other grid is refused)."""
        if grid.key != without_statistics(self):
            raise ValueError("a configuration grid of another model's parameters or limits")
        from goodput_sim.models.batch_kernels import best_batches  # loads numba: runs that choose

        sqr = _statistic(self.grad_sqr if grad_sqr is None else grad_sqr)
        var = _statistic(self.grad_var if grad_var is None else grad_var)
        rows = len(grid.replicas)
        if statistical:  # a grid of one row serves every row of statistics
            lengths = {rows, len(sqr), len(var)} - {1}
            if len(lengths) > 1:
                raise ValueError(
                    f"gradient statistics of {len(sqr)} and {len(var)} rows for a grid of {rows}"
                )
            rows = lengths.pop() if lengths else 1
        outside = _NOTHING_OUTSIDE if grid.outside is None else grid.outside
        value, b, s = best_batches(
            grid.total,
            grid.t_iter,
            outside,
            sqr,
            var,
            grid.replicas,
            grid.local_bsz,
            grid.accum,
            float(self.init_batch_size),
            float(self.max_batch_size),
            statistical,
            rows,
        )
        return BatchChoice(value, b, s)

    def speedup(self, nodes: ArrayLike, replicas: ArrayLike, base_goodput: float) -> NDArray:
        """Best goodput at each allocation relative to ``base_goodput``; 0 for no GPUs."""
        replicas = np.atleast_1d(np.asarray(replicas, dtype=np.float64))
        out = np.zeros(replicas.shape)
        some = replicas > 0
        if some.any():
            nodes = np.broadcast_to(np.asarray(nodes, dtype=np.float64), replicas.shape)
            out[some] = self.optimize(nodes[some], replicas[some]).goodput / base_goodput
        return out


def frozen_grid(
    model: GoodputModel, nodes: tuple[float, ...], replicas: tuple[float, ...]
) -> ConfigGrid:
    """``model.config_grid`` of these pairs, to be memoised by its arguments (a model without
    statistics): a job whose fit stays while its statistics change (sia's jobs re-choose their
    batch at every round and epoch boundary) prices the same grid again."""
    return model.config_grid(np.array(nodes, dtype=float), np.array(replicas, dtype=float))


def _frozen(array: NDArray) -> NDArray:
    """``array`` C-ordered and read-only (copied when it is not C-ordered)."""
    frozen = np.ascontiguousarray(array).view()  # a view: the caller's array stays writable
    frozen.flags.writeable = False
    return frozen


_SHARED_PAIRS = 4  # optimize shares the grids of this many pairs or fewer (a job's plan: one)
_shared_grid = functools.lru_cache(maxsize=4096)(frozen_grid)


_NOTHING_OUTSIDE = _frozen(np.zeros((0, 0), dtype=bool))  # a grid whose candidates all count


def _statistic(value: ArrayLike) -> NDArray[np.float64]:
    """Gradient statistics as the batch kernel takes them, the same type every time (a fresh
    C-ordered array): one per row, or one for all."""
    return np.array(value, dtype=np.float64, ndmin=1)


def without_statistics(model: GoodputModel) -> GoodputModel:
    """``model`` with neutral gradient statistics, for uses that ignore them: jobs with equal
    fitted parameters then have equal models and share memoised results. Made once per model
    (a round asks for it several times per job)."""
    return model.neutral_statistics


def _neutral_statistics(model: GoodputModel) -> GoodputModel:
    """:func:`without_statistics`, made afresh."""
    return dataclasses.replace(model, grad_sqr=1.0, grad_var=0.0)


def _total_batch(replicas, local_bsz, accum_steps) -> NDArray:
    """Examples per optimizer step: GPUs x per-GPU batch x (accumulation steps + 1)."""
    return np.asarray(replicas) * np.asarray(local_bsz) * (np.asarray(accum_steps) + 1)


def candidate_configs(
    replicas: NDArray,
    init_batch: float,
    max_batch: float,
    min_local: float,
    max_local: float,
    count: int = CANDIDATES,
    single_precision: bool = False,
) -> tuple[NDArray, NDArray]:
    """(b, s) grids for ``count`` total batches from max(M0, b_min*R) to the maximum, geometric
    (``single_precision``: computed as :func:`_single_precision_candidates` says)."""
    if single_precision:
        return _single_precision_candidates(
            replicas, init_batch, max_batch, min_local, max_local, count
        )
    r = replicas[:, None]
    low = np.maximum(init_batch, min_local * replicas)
    fraction = _FRACTIONS if count == CANDIDATES else np.linspace(0.0, 1.0, count)[None, :]
    total = low[:, None] * (max_batch / low[:, None]) ** fraction
    local = total / r
    accum = np.ceil(local / max_local - _EPS) - 1
    single = (r == 1) & (local > init_batch + _EPS)  # one GPU above M0 needs 2 micro-steps
    accum = np.where(single, np.maximum(accum, 1), accum)
    local_bsz = np.ceil(local / (accum + 1) - _EPS)
    return local_bsz, accum


def _single_precision_candidates(
    replicas: NDArray,
    init_batch: float,
    max_batch: float,
    min_local: float,
    max_local: float,
    count: int,
) -> tuple[NDArray, NDArray]:
    """:func:`candidate_configs` as the Sia reference prices configurations (Sia SPEC 4.1): it
    passes the GPU counts in single precision, so its geometric grid of batches, the per-GPU
    batches and their accumulation steps are single-precision numbers, computed as numpy
    before 2.0 computed them. Where the grid is one batch (``max(M0, b_min R)`` equal to the
    largest), its inner points come out a little above it and the per-GPU batch rounds up
    to the next whole example. The pairs are computed together, as the reference computes a
    GPU type's configurations: one degenerate pair changes how the others' grids round."""
    from goodput_sim.models import libm  # loads numba, which only the sia policy's pricing needs

    f32 = np.float32
    r = np.asarray(replicas).astype(f32)
    start = np.maximum(f32(init_batch), f32(min_local) * r)
    stop = f32(max_batch)
    log_start, log_stop = libm.log10(start), libm.log10(np.full(1, stop))
    # linspace(log_start, log_stop, count) in single precision, then 10 ** y in double
    steps = np.arange(count, dtype=f32).reshape(-1, 1)
    delta = log_stop - log_start
    step = delta / f32(count - 1)
    vanishing = (step == 0).any()  # numpy's path for steps that vanish, taken for every pair
    y = steps / f32(count - 1) * delta if vanishing else steps * step
    y = y + log_start
    y[-1] = log_stop
    batch = libm.power(np.full(1, 10.0), y).astype(f32)
    batch[0], batch[-1] = start, stop
    local = (batch / r).T
    accum = np.ceil(local / f32(max_local) - f32(_EPS)) - 1
    single = (r[:, None] == 1) & (local > f32(init_batch + _EPS))
    accum = np.where(single, np.maximum(accum, 1), accum).astype(np.int64)
    local_bsz = np.ceil(local / (accum + 1) - _EPS)
    return local_bsz.astype(np.float64), accum.astype(np.float64)


def fixed_batch_config(
    total_batch: float, replicas: int, limits: Limits, accumulate_on_one_gpu: bool = False
) -> tuple[int, int]:
    """(b, s) for a job that keeps one total batch size on ``replicas`` GPUs (SPEC 5.3).

    One GPU above M0 uses at least two micro-steps; ``accumulate_on_one_gpu`` makes that
    unconditional, as the Optimus baseline's time estimate does (SPEC 7.1)."""
    b, s = fixed_batch_configs(np.array([total_batch]), replicas, limits, accumulate_on_one_gpu)
    return int(b[0]), int(s[0])


def fixed_batch_configs(
    total_batches: NDArray, replicas: int, limits: Limits, accumulate_on_one_gpu: bool = False
) -> tuple[NDArray, NDArray]:
    """:func:`fixed_batch_config` for many total batches at once (per-GPU batch and
    accumulation steps as float arrays)."""
    return _split_fixed(
        total_batches,
        replicas,
        limits.init_batch_size,
        limits.max_batch_size,
        limits.max_local_bsz,
        accumulate_on_one_gpu,
    )


def _split_fixed(
    total_batches: ArrayLike,
    replicas: ArrayLike,
    init_batch: float,
    max_batch: float,
    max_local: float,
    accumulate_on_one_gpu: bool,
) -> tuple[NDArray, NDArray]:
    """Per-GPU batch and accumulation steps of total batches on GPU counts (broadcast)."""
    total = np.asarray(total_batches, dtype=np.float64)
    local = np.ceil(total / replicas - _EPS)
    accum = np.ceil(local / max_local - _EPS) - 1
    one = np.asarray(replicas) == 1
    accum = np.where(
        one & ((total > init_batch) | accumulate_on_one_gpu), np.maximum(accum, 1), accum
    )
    b = np.ceil(local / (accum + 1) - _EPS)
    b = np.maximum(np.minimum(b, np.floor(max_batch / (replicas * (accum + 1)))), 1)
    return b, accum
