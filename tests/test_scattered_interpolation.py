"""The scattered interpolators on scipy.spatial give scipy.interpolate's values bit for bit."""

from __future__ import annotations

import numpy as np
import pytest
from scipy.interpolate import LinearNDInterpolator, NearestNDInterpolator

from goodput_sim.profiles.base import LinearOnTriangulation, NearestOnTree, linear_or_nearest


@pytest.mark.parametrize("dims,columns", [(2, None), (3, 2)])
def test_same_values_as_scipy_interpolate(dims, columns):
    rng = np.random.default_rng(dims)
    points = np.column_stack([rng.integers(1, 9, 60) for _ in range(dims - 1)])
    points = np.column_stack([points, rng.choice([8.0, 16.0, 32.0, 64.0, 128.0], 60)])
    points = np.unique(points, axis=0)
    shape = (len(points),) if columns is None else (len(points), columns)
    values = rng.lognormal(size=shape)
    queries = np.column_stack([rng.uniform(0, 10, (500, dims - 1)), rng.uniform(4, 160, 500)])
    ours, theirs = LinearOnTriangulation(points, values), LinearNDInterpolator(points, values)
    assert np.isnan(theirs(queries)).any() and not np.isnan(theirs(queries)).all()
    assert np.array_equal(ours(queries), theirs(queries), equal_nan=True)
    near, their_near = NearestOnTree(points, values), NearestNDInterpolator(points, values)
    assert np.array_equal(near(queries), their_near(queries))


def test_points_in_a_plane_fall_back_to_nearest():
    points = np.array([[1.0, 1.0, 8.0], [2.0, 2.0, 8.0], [3.0, 3.0, 8.0], [4.0, 4.0, 8.0]])
    linear, nearest = linear_or_nearest(points, np.arange(4.0))
    assert linear is nearest
