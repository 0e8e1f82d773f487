"""The compiled batch choice (:mod:`goodput_sim.models.batch_kernels`) against the numpy code it
replaced, bit for bit: real candidate grids and random ones with ties, zeros, NaNs and
infinities, contiguous or not."""

from __future__ import annotations

import numpy as np
import pytest

from goodput_sim.models.efficiency import gain
from goodput_sim.models.goodput import (
    BatchChoice,
    ConfigGrid,
    GoodputModel,
    without_statistics,
)
from goodput_sim.models.throughput import ThroughputParams

PARAMS = ThroughputParams(0.0141, 0.000703, 0.1, 4.6e-6, 0.0111, 0.000378, 1.099)
LIMITS = [(128, 4096, 32, 1024), (12, 384, 4, 12), (256, 32768, 32, 32768)]


def numpy_choose(model, grid, statistical=True, grad_sqr=None, grad_var=None) -> BatchChoice:
    """``GoodputModel.choose`` as numpy code, before it was compiled: the oracle."""
    replicas = grid.replicas

    def rate(total, t_iter, sqr, var):
        return model.init_batch_size * gain(total, model.init_batch_size, sqr, var) / t_iter

    if statistical and grad_sqr is None and grad_var is None:
        value = rate(grid.total, grid.t_iter, model.grad_sqr, model.grad_var)
    elif statistical:
        shape = np.broadcast_shapes(
            replicas.shape, np.shape(grad_sqr) if grad_sqr is not None else ()
        )
        sqr = np.broadcast_to(model.grad_sqr if grad_sqr is None else grad_sqr, shape)
        var = np.broadcast_to(model.grad_var if grad_var is None else grad_var, shape)
        value = rate(grid.total, grid.t_iter, sqr[:, None], var[:, None])
    else:
        value = grid.total / grid.t_iter
    if grid.outside is not None:
        value = np.where(grid.outside, 0.0, value)
    best = np.argmax(value, axis=1)
    rows = np.arange(len(best))
    cells = rows if len(grid.local_bsz) == len(rows) else np.zeros_like(rows)
    b, s = grid.local_bsz[cells, best], grid.accum[cells, best]
    b = np.maximum(np.minimum(b, np.floor(model.max_batch_size / (replicas * (s + 1)))), 1.0)
    return BatchChoice(value[rows, best], b, s)


def assert_same(got: BatchChoice, want: BatchChoice) -> None:
    for name in ("goodput", "local_bsz", "accum_steps"):
        a, b = getattr(got, name), np.asarray(getattr(want, name), dtype=np.float64)
        assert a.shape == b.shape, name
        assert a.tobytes() == b.tobytes(), (name, a, b)


def real_grid(rng, single_precision=False, fixed_batch=None):
    model = GoodputModel(
        PARAMS,
        *LIMITS[rng.integers(len(LIMITS))],
        grad_sqr=float(rng.choice([0.0, 1e-3, 1.0, 7.5])),
        grad_var=float(rng.choice([0.0, 0.01, 3.0, 400.0])),
        fixed_batch=fixed_batch,
        single_precision=single_precision,
    )
    pairs = int(rng.integers(1, 9))
    replicas = rng.integers(1, 65, size=pairs).astype(float)
    nodes = np.ceil(replicas / rng.integers(1, 9, size=pairs))
    return model, model.config_grid(nodes, replicas)


@pytest.mark.parametrize("seed", range(40))
def test_choices_on_real_grids_match_numpy(seed):
    rng = np.random.default_rng(seed)
    model, grid = real_grid(
        rng, single_precision=bool(seed % 2), fixed_batch=[None, 512][seed % 5 == 0]
    )
    rows = len(grid.replicas)
    assert_same(model.choose(grid), numpy_choose(model, grid))
    assert_same(model.choose(grid, statistical=False), numpy_choose(model, grid, False))
    sqr, var = rng.uniform(0, 5, rows), rng.uniform(0, 50, rows)
    assert_same(model.choose(grid, True, sqr, var), numpy_choose(model, grid, True, sqr, var))
    assert_same(model.choose(grid, True, sqr), numpy_choose(model, grid, True, sqr))
    if rows == 1:  # one pair priced at many epochs' statistics
        sqr, var = rng.uniform(0, 5, 7), rng.uniform(0, 50, 7)
        assert_same(model.choose(grid, True, sqr, var), numpy_choose(model, grid, True, sqr, var))


def hostile_grid(rng, rows, candidates, contiguous):
    """A grid of random values with ties, zeros, NaNs and infinities, as views when not
    ``contiguous``."""
    wide = 2 * candidates if not contiguous else candidates

    def table(values):
        out = rng.choice(values, size=(rows, wide))
        return out if contiguous else out[:, ::2]

    total = table(np.array([0.0, 1.0, 64.0, 64.0, 256.0, 1e300, np.inf, np.nan, 4096.0]))
    t_iter = table(np.array([0.0, 0.5, 0.5, 1.0, 2.0, 1e-300, np.inf, np.nan]))
    local = table(np.array([1.0, 16.0, 64.0, 1024.0, 5000.0]))
    accum = table(np.array([0.0, 0.0, 1.0, 3.0]))
    outside = rng.random((rows, wide)) < 0.2
    outside = outside if contiguous else outside[:, ::2]
    replicas = rng.choice(np.array([0.0, 1.0, 2.0, 8.0, np.nan]), size=rows)
    return total, t_iter, local, accum, outside, replicas


@pytest.mark.parametrize("seed", range(60))
def test_choices_on_hostile_grids_match_numpy(seed):
    rng = np.random.default_rng(1000 + seed)
    model = GoodputModel(PARAMS, 128, 4096, 32, 1024, grad_sqr=1.0, grad_var=3.0)
    rows, candidates = int(rng.integers(1, 6)), int(rng.integers(1, 9))
    total, t_iter, local, accum, outside, replicas = hostile_grid(
        rng, rows, candidates, contiguous=bool(seed % 2)
    )
    masks = [outside, None] if seed % 3 else [None]
    stats = np.array([-1.0, 0.0, 0.0, 1.0, 3.0, np.inf, np.nan])
    with np.errstate(all="ignore"):  # the oracle's numpy warns where the kernel is silent
        for mask in masks:
            grid = ConfigGrid(
                without_statistics(model), replicas, local, accum, total, t_iter, mask
            )
            assert_same(model.choose(grid), numpy_choose(model, grid))
            assert_same(model.choose(grid, False), numpy_choose(model, grid, False))
            sqr, var = rng.choice(stats, rows), rng.choice(stats, rows)
            assert_same(
                model.choose(grid, True, sqr, var), numpy_choose(model, grid, True, sqr, var)
            )
            odd = GoodputModel(PARAMS, 128, 4096, 32, 1024, float(sqr[0]), float(var[0]))
            assert_same(odd.choose(grid), numpy_choose(odd, grid))


def test_statistics_of_the_wrong_length_are_refused():
    model, grid = real_grid(np.random.default_rng(3))
    rows = len(grid.replicas)
    with pytest.raises(ValueError, match="gradient statistics"):
        model.choose(grid, True, np.ones(rows + 2), np.ones(rows + 3))
