"""The throughput fit's compiled linear algebra (:mod:`goodput_sim.models.fit_kernels`) gives
the bits of the numpy expressions and plain-Python solver it replaced, so fits are unchanged."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from goodput_sim.models.fit_kernels import damped_solve, normal_equations


def python_solve(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """The oracle: Gaussian elimination with partial pivoting in plain Python floats, the
    solver the fit used before it was compiled."""
    rows, x, n = a.tolist(), b.tolist(), len(b)
    for k in range(n):
        pivot = max(range(k, n), key=lambda i: (abs(rows[i][k]), -i))
        if rows[pivot][k] == 0.0:
            raise np.linalg.LinAlgError("singular matrix")
        rows[k], rows[pivot] = rows[pivot], rows[k]
        x[k], x[pivot] = x[pivot], x[k]
        for i in range(k + 1, n):
            factor = rows[i][k] / rows[k][k]
            for j in range(k, n):
                rows[i][j] -= factor * rows[k][j]
            x[i] -= factor * x[k]
    for k in range(n - 1, -1, -1):
        done = 0.0
        for j in range(k + 1, n):
            done += rows[k][j] * x[j]
        x[k] = (x[k] - done) / rows[k][k]
    return np.array(x)


def column_major_jacobian(rng: np.random.Generator, rows: int, columns: int) -> np.ndarray:
    """A Jacobian laid out as the fit builds it (a column selection, so column-major), with
    entries over many orders of magnitude so that any change of summation order shows."""
    values = rng.normal(size=(rows, 7)) * np.exp(rng.uniform(-20, 20, size=(rows, 7)))
    return values[:, np.arange(7) < columns]


@pytest.mark.parametrize("rows", [*range(1, 40), 127, 128, 129, 136, 257, 300, 1031])
def test_normal_equations_sum_as_numpy_does(rows):
    """Bit for bit, including numpy's pairwise blocks (8 partial sums from 8 rows, halves beyond
    128 rows, a recursion the kernel walks with a stack)."""
    rng = np.random.default_rng(rows)
    for columns in (1, 4, 7):
        jac = column_major_jacobian(rng, rows, columns)
        r = rng.normal(size=rows)
        grad, hessian = normal_equations(jac, r)
        assert grad.tobytes() == (jac * r[:, None]).sum(axis=0).tobytes()
        expected = (jac[:, :, None] * jac[:, None, :]).sum(axis=0)
        assert hessian.tobytes() == expected.tobytes()


@settings(deadline=None, derandomize=True, database=None)  # the first call may compile
@given(st.integers(1, 7), st.floats(1e-12, 1e6), st.integers(0, 2**32 - 1))
def test_damped_solve_matches_the_python_solver_and_lapack(n, damping, seed):
    rng = np.random.default_rng(seed)
    jac = rng.normal(size=(n + 3, n)) * np.exp(rng.uniform(-2, 2, size=n))
    hessian = jac.T @ jac
    scaling = np.maximum(hessian.diagonal(), 1e-12)
    rhs = rng.normal(size=n)
    x, solved = damped_solve(hessian, damping, scaling, rhs)
    system = hessian + np.diag(damping * scaling)
    assert solved
    assert x.tobytes() == python_solve(system, rhs).tobytes()
    np.testing.assert_allclose(x, np.linalg.solve(system, rhs), rtol=1e-6, atol=1e-12)


def test_damped_solve_reports_a_singular_system():
    _, solved = damped_solve(np.zeros((3, 3)), 0.0, np.ones(3), np.ones(3))
    assert not solved
