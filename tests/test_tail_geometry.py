"""Seed 004's geometry (issue 48): ``tail_geometry: steps`` lays the tail-weighted plan on the
static run's optimizer steps, with the learning rate indexed by step, so a run takes the static
run's steps and spends its examples; ``examples`` (the default) is the realisation that was
there before, unchanged.

The plan is checked by hand on a run of four steps; the engine by what must hold whatever the
numbers: the static run's steps exactly, its examples within a configuration's rounding, the
rate of each step the static run's (so tuning the rate per arm changes nothing), and a fixed
batch run the same in both geometries."""

from __future__ import annotations

import dataclasses
import json

import numpy as np
import pandas as pd
import pytest
from click.testing import CliRunner

from goodput_sim import api
from goodput_sim.agents import get_agent
from goodput_sim.agents.tail import step_configs, step_plan
from goodput_sim.cli import main
from goodput_sim.errors import InputError
from goodput_sim.inputs.cluster import ClusterSpec
from goodput_sim.models.tail import clipped_batches, tail_coefficients
from goodput_sim.policies import get_policy
from goodput_sim.sim.engine import Simulation
from goodput_sim.sim.jobs import JobSpec
from goodput_sim.sim.lr_progress import example_budget, static_batch_of, static_steps
from goodput_sim.spec import SimConfig, _key_config, config_from_record, run_key


# ------------------------------------------------------------------ the plan, by hand
def test_a_four_step_plan_by_hand():
    """Two epochs of 3 and 1 static steps, 2 cells per epoch: each cell is one step. A constant
    rate gives c = (1/6, 1/4, 1/2, 1/2) (1 / (2 x the steps after), the last 1/2); batches
    share 4 x 16 = 64 examples as sqrt(c); epoch 0 runs the mean of its three steps."""
    c = np.array([1 / 6, 1 / 4, 1 / 2, 1 / 2])
    steps = 64 * np.sqrt(c) / np.sqrt(c).sum()  # 11.250, 13.779, 19.486, 19.486
    batches = step_plan("constant", 2, (0.0, 3.0, 4.0), 16.0, 1.0, 1000.0)
    np.testing.assert_allclose(batches, [steps[:3].mean(), steps[3]], rtol=1e-12)
    assert batches @ [3.0, 1.0] == pytest.approx(64.0, rel=1e-12)  # the static run's examples
    np.testing.assert_allclose(batches, [14.8381, 19.4857], atol=1e-4)


def test_the_rate_is_the_static_runs_at_the_same_step():
    """A step schedule falls 10x at half of training, in epochs. Static steps (0, 3, 4): the
    third step (2 to 3) is still in epoch 0, so its rate is 1, although it lies past half of
    the steps; the fourth is past 75% and falls twice. With 1 cell per step the plan follows
    c of the rates (1, 1, 1, 0.01) exactly."""
    rates = np.array([1.0, 1.0, 1.0, 0.01])
    c = tail_coefficients(rates)
    want = clipped_batches(c, 1.0, 64.0, 1.0, 1000.0)
    batches = step_plan("step", 2, (0.0, 3.0, 4.0), 16.0, 1.0, 1000.0)
    np.testing.assert_allclose(batches, [want[:3].mean(), want[3]], rtol=1e-12)
    # indexed by t / tau instead, the third step would have rate 0.1 and a smaller batch
    by_fraction = clipped_batches(tail_coefficients([1.0, 1.0, 0.1, 0.01]), 1.0, 64, 1, 1000)
    assert not np.isclose(batches[0], by_fraction[:3].mean())


def test_the_plan_spends_the_static_runs_examples_over_its_steps(profiles):
    """On real static runs (uneven steps per epoch) the plan's examples are the static run's,
    blind or seeing the noise, within the batch bounds."""
    for name in ("cifar10", "yolov3", "deepspeech2"):
        profile = profiles[name]
        lim = profile.limits
        batch = 4.0 * lim.init_batch_size
        on = tuple(static_steps(profile, batch))
        lengths = np.diff(on)
        assert lengths.max() > 1.5 * lengths.min()  # the steps per epoch are uneven
        _, var = profile.grad_stats(lim.init_batch_size, np.arange(lim.max_epochs))
        for noise in (None, tuple(lim.init_batch_size * var)):
            low, high = float(lim.init_batch_size), float(lim.max_batch_size)
            batches = step_plan("cosine", 16, on, batch, low, high, noise)
            assert batches @ lengths == pytest.approx(batch * on[-1], rel=1e-9)
            assert batches.min() >= low - 1e-9 and batches.max() <= high + 1e-9
            assert np.ptp(batches) > 0.5 * batch  # re-spread, not the static batch
        np.testing.assert_allclose(on[-1] * batch, example_budget(profile, batch)[-1])


def test_rounding_to_configurations_keeps_the_examples(profiles):
    """Configurations round a batch up; each epoch makes up what the epochs before it spent
    beyond the plan, so the examples stay within one configuration's rounding."""
    profile = profiles["yolov3"]
    spec = JobSpec("y", "yolov3", 0.0, 4, 64)
    batch = static_batch_of(spec, profile.limits)
    on = tuple(static_steps(profile, batch))
    lim = dataclasses.replace(profile.limits, static_run=(batch, on), lr_schedule="cosine")
    local, accum = step_configs(lim, "cosine", 16, 4, lim.max_epochs, False)
    spent = float(np.diff(on) @ (4 * local * (accum + 1)))
    assert spent == pytest.approx(batch * on[-1], rel=5e-3)


# ------------------------------------------------------------------ the setting
def test_the_setting_is_declared_checked_and_keyed():
    with pytest.raises(InputError, match=r"tail_geometry.*'sideways'.*examples or steps"):
        SimConfig(progress="lr-aware", tail_geometry="sideways")
    with pytest.raises(InputError, match=r"tail_geometry.*needs --progress lr-aware"):
        SimConfig(tail_geometry="steps")
    steps = SimConfig(progress="lr-aware", tail_geometry="steps")
    record = json.loads(json.dumps(dataclasses.asdict(steps)))
    assert record["tail_geometry"] == "steps" and config_from_record(record) == steps
    old = {k: v for k, v in dataclasses.asdict(SimConfig()).items() if k != "tail_geometry"}
    assert config_from_record(old) == SimConfig()  # a manifest from before the setting

    def key(config):
        return run_key(
            policy="fifo",
            agent=None,
            params={},
            workload={"file_sha256": "a", "load": 1.0},
            profiles="b",
            cluster=api.as_cluster("4x4"),
            config=config,
            seed=0,
        )

    lr_aware = SimConfig(progress="lr-aware")
    assert key(steps) != key(lr_aware)
    # the default enters no key: runs swept before the setting existed keep theirs
    assert "tail_geometry" not in _key_config(lr_aware)
    assert _key_config(steps)["tail_geometry"] == "steps"


@pytest.fixture(scope="module")
def small():
    frame = pd.read_csv(api.bundled_workload())
    frame = frame[frame["num_replicas"] <= 8]
    return frame.groupby("application").head(3).reset_index(drop=True)


def _run(small, profiles, agent, geometry, policy="tiresias", params=None):
    config = SimConfig(progress="lr-aware", tail_geometry=geometry)
    return api.run(policy, small, profiles, "4x4", config=config, agent=agent, params=params)


def test_other_agents_are_refused(small, profiles):
    with pytest.raises(InputError, match=r"tail_geometry.*agent 'goodput'"):
        _run(small, profiles, "goodput", "steps")


def test_a_tail_run_takes_the_static_runs_steps_and_examples(small, profiles):
    """Under tiresias (the requested GPUs throughout) every tail-weighted job takes exactly its
    static run's steps, at the static run's rate at each step, so the rate tuned to its own
    steps is the rate it had; its examples are the static run's within the rounding of a
    configuration. The fixed agent runs the same in both geometries."""
    for params in ({}, {"window": 0}):
        run = _run(small, profiles, "tail-weighted", "steps", params=params)
        jobs = run.jobs
        assert jobs["finished"].all()
        fixed = _run(small, profiles, "fixed", "examples").jobs
        np.testing.assert_allclose(jobs["examples"], fixed["examples"], rtol=1e-2)
        np.testing.assert_allclose(jobs["final_loss_tuned"], jobs["final_loss"], rtol=1e-9)
        changed = (jobs["lr_noise_vs_static"] - 1).abs() > 1e-6
        assert changed.any() and (jobs["final_loss_vs_static"] != 1).any()
    config = SimConfig(progress="lr-aware", tail_geometry="steps")
    tiresias, tail = get_policy("tiresias"), get_agent("tail-weighted")
    sim = Simulation(small, profiles, tiresias, ClusterSpec.uniform(4, 4), config, tail)
    sim.run()
    for job in sim.jobs:
        lim = job.profile.limits
        batch = static_batch_of(job.spec, lim)
        assert sum(job.step_log.steps) == pytest.approx(static_steps(job.profile, batch)[-1])
    examples = _run(small, profiles, "fixed", "examples").jobs
    steps = _run(small, profiles, "fixed", "steps").jobs
    pd.testing.assert_frame_equal(examples, steps, rtol=1e-9)


def test_the_cli_runs_the_steps_geometry_and_refuses_a_bad_one(tmp_path):
    runner = CliRunner()
    args = ["run", "--policy", "tiresias", "--agent", "tail-weighted", "--progress", "lr-aware"]
    args += ["--horizon", "7200", "--no-plot"]
    done = runner.invoke(main, [*args, "--tail-geometry", "steps", "--out", str(tmp_path / "r")])
    assert done.exit_code == 0, done.output
    manifest = json.loads((tmp_path / "r" / "manifest.json").read_text())
    assert manifest["config"]["tail_geometry"] == "steps"
    bad = runner.invoke(main, [*args, "--tail-geometry", "bogus", "--out", str(tmp_path / "b")])
    assert bad.exit_code != 0 and "Traceback" not in bad.output
    assert "--tail-geometry" in bad.output and "examples" in bad.output
