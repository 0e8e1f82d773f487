"""sia's ``solver=cbc`` (goodput_sim.policies.sia_cbc): CBC's answer to the reference's program
is feasible, honours pins and is optimal within the reference's 0.01% gap, against brute-force
enumeration; without CVXPY the option is refused with a clear error."""

from __future__ import annotations

import numpy as np
import pytest

from goodput_sim.errors import InputError
from goodput_sim.policies.sia import Sia
from goodput_sim.policies.sia_cbc import cbc_available, solve_with_cbc
from tests.test_sia_milp import _feasible, _objective, brute_force

needs_cbc = pytest.mark.skipif(
    not cbc_available(), reason="CVXPY with CBC is not installed (pip install 'goodput-sim[cbc]')"
)


def rounded_instance(seed: int) -> dict:
    """A small program with values rounded to 2 decimals, as Sia's are, so that ties abound."""
    rng = np.random.default_rng(seed)
    jobs, configs, types = int(rng.integers(1, 5)), int(rng.integers(1, 6)), int(rng.integers(1, 4))
    value = np.round(rng.choice([0.5, 1.0, 1.5, 100.0], size=(jobs, configs)), 2)
    instance = {
        "value": value,
        "type_of": [int(t) for t in rng.integers(0, types, size=configs)],
        "gpus": [int(g) for g in rng.choice([1, 2, 4, 8], size=configs)],
        "capacity": [int(c) for c in rng.integers(0, 11, size=types)],
        "lambda_n": 1.1,
        "minimise": bool(seed % 3),
        "pinned": None,
    }
    if rng.random() < 0.3:  # one job pinned to a configuration that fits on its own
        job, config = int(rng.integers(jobs)), int(rng.integers(configs))
        if instance["gpus"][config] <= instance["capacity"][instance["type_of"][config]]:
            instance["pinned"] = {job: config}
    return instance


@needs_cbc
@pytest.mark.parametrize("seed", range(40))
def test_cbc_is_feasible_and_optimal(seed):
    instance = rounded_instance(seed)
    best = brute_force(**instance)
    choice = solve_with_cbc(**instance)
    pinned = instance["pinned"] or {}
    assert _feasible(
        choice, instance["type_of"], instance["gpus"], instance["capacity"], pinned, None
    )
    got = _objective(instance["value"], choice, instance["lambda_n"])
    assert got == pytest.approx(best, rel=1e-4, abs=1e-9)


@needs_cbc
def test_sia_with_cbc_finishes_every_job(tmp_path):
    """A small trace replays to the end with CBC solving every round."""
    from goodput_sim.api import run

    trace = tmp_path / "trace.csv"
    trace.write_text(
        "name,time,application,num_replicas,batch_size\n"
        "cifar10-0,0,cifar10,2,128\nbert-1,30,bert,1,12\ncifar10-2,60,cifar10,1,128\n"
    )
    cluster = "configs/cluster-sia-default.yaml"
    ours = run("sia", trace, "traces/profiles-sia", cluster, params={"solver": "cbc"})
    assert bool(ours.jobs["finished"].all())


def test_cbc_without_cvxpy_is_refused(monkeypatch):
    import goodput_sim.policies.sia_cbc as sia_cbc

    monkeypatch.setattr(sia_cbc, "cbc_available", lambda: False)
    with pytest.raises(InputError, match="cvxpy|CVXPY"):
        Sia(solver="cbc")
