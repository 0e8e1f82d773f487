"""The example plugin's components tested as objects, without installing the plugin: each runs
through one simulation (or, for the agent, one call) and is checked against what it promises."""

# The --8<-- comments mark the parts the documentation's "Extending" pages show.
# --8<-- [start:setup]
from functools import partial
from types import SimpleNamespace

import numpy as np
import pandas as pd
import pytest
from goodput_sim_example.agent import LinearScaling
from goodput_sim_example.dynamic import RollingMaintenance
from goodput_sim_example.policy import SmallestJobFirst

from goodput_sim.agents.base import validated_plan
from goodput_sim.inputs.cluster import ClusterSpec
from goodput_sim.models.limits import Limits
from goodput_sim.policies import get_policy
from goodput_sim.profiles import load_profiles
from goodput_sim.sim.engine import Simulation

# A 4-GPU job, then a 1-GPU job a minute later, on one node of 4 GPUs.
JOBS = pd.DataFrame(
    {
        "name": ["big", "small"],
        "time": [0.0, 60.0],
        "application": ["cifar10", "cifar10"],
        "num_replicas": [4, 1],
        "batch_size": [512, 512],
    }
)
ONE_NODE = ClusterSpec.uniform(1, 4)


def simulate(policy, agent=None, dynamics=()) -> tuple[pd.DataFrame, dict]:
    sim = Simulation(JOBS, load_profiles(), policy, ONE_NODE, agent=agent, dynamics=dynamics)
    result = sim.run()
    return result.jobs.set_index("name"), result.cluster_summary


# --8<-- [end:setup]
# --8<-- [start:policy]


def test_the_small_job_runs_first():
    """Under fifo the small job waits for the big one; under smallest-job-first it starts on
    arrival and the big job gives its GPUs back."""
    ours, _ = simulate(SmallestJobFirst())
    fifo, _ = simulate(get_policy("fifo"))
    assert ours.loc["small", "start"] == 60.0 < fifo.loc["small", "start"]
    assert ours.loc["small", "finish"] < ours.loc["big", "finish"]
    assert ours.loc["big", "restarts"] == 1 and fifo.loc["big", "restarts"] == 0


# --8<-- [end:policy]
# --8<-- [start:agent]


def test_the_total_batch_grows_with_the_gpus():
    limits = Limits(128, max_batch_size=4096, min_local_bsz=16, max_local_bsz=1024, max_epochs=10)
    belief = SimpleNamespace(limits=limits)  # the agent reads only the limits
    agent = LinearScaling(base_gpus=2)
    epochs = np.zeros(3)  # gradient statistics of three upcoming epochs (unread here)
    for gpus, total in [(1, 512), (2, 512), (4, 1024), (16, 4096)]:
        plan = agent.configs(belief, 512, 1, gpus, epochs, epochs)  # 512 asked, on 1 node
        local, accumulation = validated_plan(agent.name, "job", plan, gpus, limits, 3)
        assert (gpus * local * (accumulation + 1) >= total).all()
        assert (gpus * local * (accumulation + 1) <= min(total + gpus, 4096)).all()


# --8<-- [end:agent]
# --8<-- [start:dynamic]


@pytest.mark.parametrize("drain", [True, False])
def test_maintenance_stops_the_job_on_the_node(drain):
    """The one node goes offline at 300 s for 600 s: the big job, the one running then, stops
    once; drained it loses no work, stopped at once it loses what it trained since it began."""
    hours = {"start_hours": 300 / 3600, "hours": 600 / 3600}
    maintenance = partial(RollingMaintenance.build, **hours, drain=drain)
    jobs, summary = simulate(get_policy("fifo"), dynamics=[maintenance])
    assert jobs.loc["big", "maintenance_stops"] == 1
    assert summary["maintenance_node_hours"] == pytest.approx(600 / 3600)
    assert (jobs.loc["big", "lost_gpu_seconds"] > 0) is not drain


# --8<-- [end:dynamic]
