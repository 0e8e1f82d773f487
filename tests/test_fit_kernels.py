"""The throughput fit's compiled arithmetic (:mod:`goodput_sim.models.fit_kernels`) gives the
bits of the numpy expressions and plain-Python solver it replaced, so fits are unchanged. The
oracles take ``log`` and ``**`` from :mod:`goodput_sim.models.libm` (numpy's at its baseline
SIMD level, as ``test_libm`` checks), so they hold on CPUs with AVX-512 too."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from goodput_sim.models import libm
from goodput_sim.models.fit_kernels import damped_solve, normal_equations
from goodput_sim.models.throughput import _LOWER, _UPPER, TINY, ThroughputModel
from goodput_sim.models.throughput_fit import MAX_STEPS, LogFitObjective


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


class NumpyObjective(LogFitObjective):
    """The oracle: the fit's residuals and Jacobian as numpy expressions, before they were
    compiled."""

    def residuals(self, x):
        theta = self.full.copy()
        theta[self.free] = x
        alpha_c, beta_c, alpha_n, beta_n, alpha_r, beta_r, gamma = theta.tolist()
        t_acc = alpha_c + beta_c * self.local_bsz
        t_net = np.where(
            self.inter,
            alpha_n + beta_n * self.extra,
            np.where(self.intra, alpha_r + beta_r * self.extra, TINY + TINY * self.extra),
        )
        big = np.maximum(t_acc, t_net)
        u = np.minimum(t_acc, t_net) / big
        ug = libm.power(u, gamma)
        total = 1.0 + ug
        self.oracle_last = (theta, t_acc, t_net, big, u, ug, total)
        rows = self.rows
        out = np.empty(2 * rows + 3)
        out[:rows] = libm.log(t_acc)
        out[rows : 2 * rows] = libm.log(big) + libm.log(total) / gamma
        out[: 2 * rows] = self.scale * (out[: 2 * rows] - self.targets)
        c_gamma, c_net = np.sqrt(1e-3), np.sqrt(1e-2)
        out[2 * rows :] = (
            c_gamma * (gamma - 1.0),
            c_net * beta_n / alpha_n,
            c_net * beta_r / alpha_r,
        )
        return out

    def jacobian(self, x):
        self.residuals(x)
        theta, t_acc, t_net, big, u, ug, total = self.oracle_last
        _, _, alpha_n, beta_n, alpha_r, beta_r, gamma = theta.tolist()
        rows, scale, b = self.rows, self.scale, self.local_bsz
        w_acc = libm.power(t_acc / big, gamma) / total
        w_net = libm.power(t_net / big, gamma) / total
        jac = np.zeros((2 * rows + 3, 7))
        jac[:rows, 0] = scale / t_acc
        jac[:rows, 1] = jac[:rows, 0] * b
        jac[rows : 2 * rows, 0] = w_acc * jac[:rows, 0]
        jac[rows : 2 * rows, 1] = jac[rows : 2 * rows, 0] * b
        net = scale * w_net / t_net
        jac[rows : 2 * rows, 2] = np.where(self.inter, net, 0.0)
        jac[rows : 2 * rows, 3] = jac[rows : 2 * rows, 2] * self.extra
        jac[rows : 2 * rows, 4] = np.where(self.intra, net, 0.0)
        jac[rows : 2 * rows, 5] = jac[rows : 2 * rows, 4] * self.extra
        log_u = libm.log(np.maximum(u, 1e-300))
        jac[rows : 2 * rows, 6] = scale * (
            -libm.log(total) / gamma**2 + ug * log_u / (gamma * total)
        )
        jac[2 * rows, 6] = np.sqrt(1e-3)
        c = np.sqrt(1e-2)
        jac[2 * rows + 1, 2:4] = (-c * beta_n / alpha_n**2, c / alpha_n)
        jac[2 * rows + 2, 4:6] = (-c * beta_r / alpha_r**2, c / alpha_r)
        return jac[:, self.free]


def same_bits(a: np.ndarray, b: np.ndarray) -> bool:
    """Equal to the bit, any NaN matching any NaN."""
    a, b = (np.where(np.isnan(v), np.nan, v) for v in (a, b))
    return a.shape == b.shape and a.tobytes() == b.tobytes()


@pytest.mark.parametrize("seed", range(40))
def test_objective_matches_its_numpy_oracle(seed):
    """Residuals and Jacobian, bit for bit, on observations across nodes, within one node and
    on one GPU, at points that include compute- and network-bound rows, huge and tiny
    parameters and NaN (a NaN step is evaluated and rejected)."""
    rng = np.random.default_rng(seed)
    rows = int(rng.integers(1, 30))
    nodes = rng.integers(1, 4, rows).astype(float)
    replicas = nodes * rng.integers(1, 5, rows)
    local_bsz = rng.integers(8, 512, rows).astype(float)
    log_acc, log_sync = rng.normal(-3, 1, rows), rng.normal(-2, 1, rows)
    free = rng.random(7) < 0.8
    free[0] = True
    full = np.exp(rng.uniform(-12, 2, 7))
    full[6] = rng.uniform(1, 10)
    args = (nodes, replicas, local_bsz, log_acc, log_sync, full, free)
    compiled, oracle = LogFitObjective(*args), NumpyObjective(*args)
    for _ in range(5):
        x = full[free] * np.exp(rng.uniform(-30, 30, free.sum()))
        if rng.random() < 0.2:
            x[rng.integers(free.sum())] = np.nan
        with np.errstate(all="ignore"):
            assert same_bits(compiled.residuals(x), oracle.residuals(x))
            assert same_bits(compiled.jacobian(x), oracle.jacobian(x))


def python_levenberg_marquardt(residuals, jacobian, x0, lower, upper, max_iter=MAX_STEPS):
    """The oracle: the projected Levenberg-Marquardt solver in numpy and plain Python, as the
    fit ran it before the whole loop was compiled."""
    x = np.minimum(np.maximum(x0, lower), upper)
    r = residuals(x)
    cost = float(np.sum(r * r))
    damping = 1e-3
    for _ in range(max_iter):
        jac = jacobian(x)
        grad, hessian = normal_equations(jac, r)
        move = ~(((x <= lower) & (grad > 0)) | ((x >= upper) & (grad < 0)))
        if not move.all():
            if not move.any():
                return x, True
            grad, low, high = grad[move], lower[move], upper[move]
            hessian = hessian[np.ix_(move, move)]
        else:
            low, high = lower, upper
        if np.abs(grad).max() < 1e-14:
            return x, True
        scaling = np.maximum(hessian.diagonal(), 1e-12)
        while True:
            step, solved = damped_solve(hessian, damping, scaling, -grad)
            if not solved:
                damping *= 10.0
                continue
            trial = x.copy()
            trial[move] = np.minimum(np.maximum(x[move] + step, low), high)
            r_trial = residuals(trial)
            cost_trial = float(np.sum(r_trial * r_trial))
            if np.isfinite(cost_trial) and cost_trial < cost:
                improvement = cost - cost_trial
                x, r, cost = trial, r_trial, cost_trial
                damping = max(damping / 3.0, 1e-12)
                if improvement <= 1e-8 * cost + 1e-18:
                    return x, True
                break
            damping *= 4.0
            if damping > 1e12:
                return x, True
    return x, False


@pytest.mark.parametrize("seed", range(60))
def test_compiled_solver_matches_the_python_solver(seed):
    """A whole fit in one compiled call (kernel ``levenberg_marquardt``) ends at the bits of the
    numpy-and-Python solver on the numpy objective: noisy observations of a random model, some
    parameters frozen, starts on and off the bounds (gamma 1 and 2 among them)."""
    rng = np.random.default_rng(seed)
    rows = int(rng.integers(1, 25))
    nodes = rng.integers(1, 4, rows).astype(float)
    replicas = nodes * rng.integers(1, 5, rows)
    local_bsz = rng.integers(8, 512, rows).astype(float)
    log_acc = np.log(1e-3 + 1e-4 * local_bsz) + rng.normal(0, 0.3, rows)
    log_sync = log_acc + np.abs(rng.normal(0.2, 0.5, rows))
    free = rng.random(7) < 0.8
    free[[0, 6]] = True
    full = np.clip(np.exp(rng.uniform(-8, 0, 7)), _LOWER, _UPPER)
    full[6] = rng.choice([1.0, 1.001, 2.0, rng.uniform(1, 10)])
    args = (nodes, replicas, local_bsz, log_acc, log_sync, full, free)
    compiled, oracle = LogFitObjective(*args), NumpyObjective(*args)
    x0 = np.clip(full[free], _LOWER[free] * (1 + 1e-9), _UPPER[free])
    if seed % 3 == 0:
        x0 = np.clip(full[free], _LOWER[free], _UPPER[free])  # some start on their bound
    lower, upper = _LOWER[free], _UPPER[free]
    with np.errstate(all="ignore"):
        expected, done = python_levenberg_marquardt(
            oracle.residuals, oracle.jacobian, x0, lower, upper
        )
    x, converged = compiled.minimise(x0, lower, upper)
    assert same_bits(x, expected) and converged == done


def test_a_fit_cut_short_is_not_converged(monkeypatch):
    """A fit given a single step reports that it did not converge."""
    import goodput_sim.models.throughput_fit as fit

    nodes = np.array([1.0, 1, 2, 2, 4])
    replicas = np.array([1.0, 4, 8, 4, 16])
    b = np.array([32.0, 64, 64, 128, 32])
    acc, sync = 0.01 + 1e-4 * b, 0.05 + 1e-4 * b + 0.01 * nodes
    assert ThroughputModel().fit(nodes, replicas, b, acc, sync).converged_
    monkeypatch.setattr(fit, "MAX_STEPS", 1)
    assert not ThroughputModel().fit(nodes, replicas, b, acc, sync).converged_
