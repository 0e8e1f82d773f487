"""Metamorphic relations: changes of the input that must not change the results, checked for
every policy without knowing the answer. (Sweep resumption has its own in test_sweep_key.py.)"""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import pytest
from golden_matrix import PARAMS, POLICIES

from goodput_sim import api
from goodput_sim.errors import InputError
from goodput_sim.inputs.cluster import ClusterSpec, NodeGroup
from goodput_sim.policies import get_policy
from goodput_sim.profiles import bundled_profiles_path, load_profiles
from goodput_sim.profiles.typed import TypedProfile
from goodput_sim.sim.engine import Simulation

ROOT = Path(__file__).resolve().parents[1]
SAME_COLUMNS = ["name", "start", "finish", "jct", "restarts", "gpu_seconds", "final_batch_size"]


@pytest.fixture(scope="module")
def plain():
    return load_profiles(bundled_profiles_path())


@pytest.fixture(scope="module")
def jobs() -> pd.DataFrame:
    """The first job of each application of the default workload (one of them 32 GPUs)."""
    frame = pd.read_csv(ROOT / "traces" / "workloads" / "default.csv")
    return frame.groupby("application", sort=False).head(1).reset_index(drop=True)


def _typed(profiles: dict, gpu_type: str) -> dict:
    """Each profile as a typed profile with one GPU type, ``gpu_type``."""
    return {
        app: TypedProfile(app, {gpu_type: lambda p=p: p}, p.restart_delay, p.slowdown)
        for app, p in profiles.items()
    }


@pytest.mark.parametrize("policy", POLICIES)
def test_splitting_a_node_group_changes_nothing(policy, plain, jobs):
    """8x4 as one group or as 3x4 + 5x4 of the same type: the same nodes, the same run."""
    params = PARAMS.get(policy)
    whole = api.run(policy, jobs, plain, ClusterSpec.uniform(8, 4), params=params)
    split = api.run(
        policy, jobs, plain, ClusterSpec((NodeGroup(3, 4), NodeGroup(5, 4))), params=params
    )
    assert whole.jobs.equals(split.jobs) and whole.rounds.equals(split.rounds)


@pytest.mark.parametrize("policy", POLICIES)
def test_a_typed_cluster_of_one_shared_profile_is_the_untyped_cluster(policy, plain, jobs):
    """Typed profiles whose one type is the untyped profile, on a cluster of that type, give
    the untyped run job for job; renaming the type changes nothing either."""
    params = PARAMS.get(policy)
    untyped = api.run(policy, jobs, plain, ClusterSpec.uniform(8, 4), params=params)
    for name in ("x", "z"):
        typed = api.run(
            policy, jobs, _typed(plain, name), ClusterSpec.uniform(8, 4, name), params=params
        )
        assert typed.jobs[SAME_COLUMNS].equals(untyped.jobs[SAME_COLUMNS]), name
        assert typed.rounds.equals(untyped.rounds), name


def test_a_job_larger_than_every_gpu_type_is_refused_not_run_forever(plain, jobs):
    """Two types of 16 GPUs: a 32-GPU job can never run (no job spans two types); it used to
    run until the simulated-time guard, reporting a JCT for the other jobs only."""
    profiles = _typed(plain, "x")
    for app, profile in profiles.items():
        profiles[app] = TypedProfile(
            app,
            {"x": profile._loaders["x"], "y": profile._loaders["x"]},
            profile.restart_delay,
            profile.slowdown,
        )
    cluster = ClusterSpec((NodeGroup(4, 4, "x"), NodeGroup(4, 4, "y")))
    with pytest.raises(InputError, match="asks for 32 GPUs, more than the cluster's 16"):
        api.run("fifo", jobs, profiles, cluster)
    big = jobs[jobs["num_replicas"] == 32]
    with pytest.raises(InputError, match="never spans two GPU types.*largest type.* 16"):
        Simulation(big, profiles, get_policy("fifo"), cluster)
