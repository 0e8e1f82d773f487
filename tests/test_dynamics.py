"""The dynamics' registry keeps its promises: every setting a dynamic says it reads is declared
in the run specification, every dynamic is a subclass of the one interface in its own module,
and a registered dynamic is built for every run (and forgotten once unregistered)."""

from __future__ import annotations

import pandas as pd
import pytest

from goodput_sim import api
from goodput_sim.sim.dynamics import (
    DYNAMICS,
    Dynamic,
    register_dynamic,
    unregister_dynamic,
)
from goodput_sim.spec import BY_NAME


@pytest.mark.parametrize("name", list(DYNAMICS))
def test_each_dynamic_reads_declared_settings_only(name):
    factory = DYNAMICS[name]
    assert isinstance(factory, type) and issubclass(factory, Dynamic)
    assert factory.name == name
    unknown = [s for s in factory.settings if s not in BY_NAME]
    assert not unknown, f"{name} reads undeclared settings {unknown}"


def test_the_dynamics_live_in_modules_of_their_own():
    modules = [DYNAMICS[name].__module__ for name in DYNAMICS]
    assert len(set(modules)) == len(modules)


class _Counting(Dynamic):
    """Counts the scheduling rounds it hears of, and adds a column with that count."""

    name = "counting"

    def __init__(self, world):
        super().__init__(world)
        self.columns = ("rounds_heard",)
        self.rounds = 0

    def after_decide(self, jobs) -> None:
        self.rounds += 1

    def job_columns(self, job) -> dict[str, int]:
        return {"rounds_heard": self.rounds}


def test_a_registered_dynamic_is_built_for_every_run_until_unregistered():
    jobs = pd.read_csv(api.bundled_workload()).iloc[:3]
    plain = api.run("fifo", jobs, cluster="2x4")
    register_dynamic("counting", _Counting)
    try:
        with pytest.raises(ValueError, match="registered already"):
            register_dynamic("counting", _Counting)
        counted = api.run("fifo", jobs, cluster="2x4")
    finally:
        unregister_dynamic("counting")
    assert (counted.jobs["rounds_heard"] == len(counted.rounds)).all()
    pd.testing.assert_frame_equal(counted.jobs.drop(columns="rounds_heard"), plain.jobs)
    assert "rounds_heard" not in api.run("fifo", jobs, cluster="2x4").jobs


def test_a_dynamics_random_stream_is_keyed_by_seed_and_names_only():
    """``World.random(name, job)``: the same seed and names draw alike in any simulation;
    another dynamic, job or seed draws otherwise."""
    from goodput_sim.policies import get_policy
    from goodput_sim.profiles import bundled_profiles_path, load_profiles
    from goodput_sim.sim.engine import Simulation

    profiles = load_profiles(bundled_profiles_path())
    jobs = pd.read_csv(api.bundled_workload()).iloc[:3]

    def sim(seed, rows=jobs):
        return Simulation(rows, profiles, get_policy("fifo"), seed=seed)

    def draw(world, name="m", job="a"):
        return world.random(name, job).random(4).tolist()

    first, reordered = sim(7), sim(7, jobs.iloc[::-1])
    assert draw(first) == draw(reordered) == draw(first)
    assert draw(first) != draw(first, name="n") and draw(first) != draw(first, job="b")
    assert draw(first) != draw(sim(8))


def test_only_dynamics_that_price_moves_keep_same_shape_moves_from_going_free():
    """Every run has the checkpoints dynamic; it prices a move only where checkpoints are
    taken or a move saves or loses work. So a plain run lets a policy's same-shape moves go
    free (sia's default, as the Sia reference), and a run with unsaved moves does not."""
    from goodput_sim.policies import get_policy
    from goodput_sim.profiles import bundled_profiles_path, load_profiles
    from goodput_sim.sim.engine import Simulation
    from goodput_sim.spec import SimConfig

    profiles = load_profiles(bundled_profiles_path())
    jobs = pd.read_csv(api.bundled_workload()).iloc[:3]

    def pricing(config=None):
        sim = Simulation(jobs, profiles, get_policy("fifo"), config=config, seed=0)
        return [d.prices_moves() for d in sim.dynamics]

    assert pricing() and not any(pricing())
    assert any(pricing(SimConfig(reallocation_checkpoint="none")))
