"""Isolated simulations: a policy or agent object run again gives exactly what a fresh object
gives, in this process and in a fresh one, and two simulations never share one object."""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest
from test_caches import JOBS, TYPED

from goodput_sim.agents import BatchAgent, get_agent
from goodput_sim.policies import Policy, get_policy, policy_names, policy_plugin
from goodput_sim.profiles import load_profiles
from goodput_sim.sim.engine import Simulation
from goodput_sim.spec import SimConfig

ROOT = Path(__file__).resolve().parents[1]
# The same job names with other sizes and arrivals: state keyed by job names must not leak.
OTHER_JOBS = JOBS.assign(
    time=[0, 10, 20, 30, 40], num_replicas=[8, 1, 4, 1, 4], batch_size=[4096, 32768, 1024, 32, 80]
)
POLICIES = ("fifo", "tiresias", "optimus", "throughput", "goodput", "goodput-ga", "sia", "gavel")
# Every policy with its own agent, and the agents no policy defaults to.
CASES = [(p, None) for p in POLICIES] + [("fifo", "tail-weighted"), ("tiresias", "critical-batch")]
PARAMS = {"goodput-ga": {"population": 10, "generations": 3}}  # the reference size is slow
CONFIG = SimConfig(horizon=3600.0)


def profiles() -> dict:
    return load_profiles(ROOT / "traces" / "profiles-sia")


def objects(policy: str, agent: str | None) -> tuple[Policy, BatchAgent]:
    scheduler = get_policy(policy, PARAMS.get(policy))
    return scheduler, get_agent(agent or scheduler.default_agent)


def digest(policy: Policy, agent: BatchAgent, loaded: dict, jobs: pd.DataFrame = JOBS) -> str:
    """The jobs and rounds tables of one run, hashed byte for byte."""
    result = Simulation(jobs, loaded, policy, TYPED, CONFIG, agent).run()
    text = result.jobs.to_csv(index=False) + result.rounds.to_csv(index=False)
    return hashlib.sha256(text.encode()).hexdigest()


def fresh_digests() -> dict[str, str]:
    """Every case run once with fresh objects (what a fresh process computes)."""
    loaded = profiles()
    return {f"{p}/{a}": digest(*objects(p, a), loaded) for p, a in CASES}


@pytest.fixture(scope="module")
def loaded():
    return profiles()


@pytest.fixture(scope="module")
def in_fresh_process() -> dict[str, str]:
    code = (
        "import json, sys\n"
        f"sys.path.insert(0, {str(ROOT / 'tests')!r})\n"
        "from test_isolation import fresh_digests\n"
        "print(json.dumps(fresh_digests()))\n"
    )
    path = os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")])
    env = {**os.environ, "PYTHONPATH": path}
    out = subprocess.run(
        [sys.executable, "-c", code], cwd=ROOT, env=env, capture_output=True, text=True, check=True
    )
    return json.loads(out.stdout.strip().splitlines()[-1])


def test_every_policy_is_covered():
    """Every built-in policy; a policy an installed plugin adds (its entry point's
    distribution names it) is the plugin's to test, and tests/test_plugins.py runs the example
    plugin's."""
    built_in = {n for n in policy_names() if policy_plugin(n) is None}
    assert set(POLICIES) == {n for n in built_in if not n.startswith("test-")}


@pytest.mark.parametrize(("policy", "agent"), CASES)
def test_objects_run_twice_equal_fresh_objects_and_a_fresh_process(
    policy, agent, loaded, in_fresh_process
):
    """A gavel policy reused for a second run held its first run's round clock (every job
    waited until the old run's last round: mean JCT 20,626 s instead of 1,446 s on 40 jobs of
    the Sia mix); each policy's state now belongs to one run."""
    scheduler, batch_agent = objects(policy, agent)
    first = digest(scheduler, batch_agent, loaded)
    assert digest(scheduler, batch_agent, loaded) == first
    digest(scheduler, batch_agent, loaded, OTHER_JOBS)
    assert digest(scheduler, batch_agent, loaded) == first
    assert first == in_fresh_process[f"{policy}/{agent}"]


def test_two_simulations_cannot_share_an_unrun_object(loaded):
    policy, agent = objects("gavel", None)
    first = Simulation(JOBS, loaded, policy, TYPED, CONFIG, agent)
    with pytest.raises(RuntimeError, match="already bound to a simulation that has not run"):
        Simulation(JOBS, loaded, policy, TYPED, CONFIG)
    with pytest.raises(RuntimeError, match="already bound"):
        Simulation(JOBS, loaded, get_policy("gavel"), TYPED, CONFIG, agent)
    first.run()
    Simulation(JOBS, loaded, policy, TYPED, CONFIG, agent).run()  # rebound once the first ran


def test_binding_keeps_what_the_caller_attached(loaded):
    """Binding constructs the object's state afresh but keeps a method the caller wrapped."""
    policy = get_policy("fifo")
    calls = []
    allocate = policy.allocate

    def counted(snapshot):
        calls.append(snapshot.time)
        return allocate(snapshot)

    policy.allocate = counted
    Simulation(JOBS.iloc[:2], loaded, policy, TYPED, CONFIG).run()
    assert calls
