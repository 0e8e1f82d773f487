"""The engine is open: a new dynamic, defined here outside the package with only the public
interface (:mod:`goodput_sim.sim.dynamics`), runs under two policies with no engine change,
and its effect matches a hand computation.

The example is planned maintenance: named nodes go offline for a window, after an optional
warning. Warned jobs save their state at the warning and lose nothing; unwarned ones fall back
to their last checkpoint. The node comes back at the window's end."""

from __future__ import annotations

from dataclasses import dataclass

import pandas as pd
import pytest

from goodput_sim import api
from goodput_sim.inputs.cluster import ClusterSpec
from goodput_sim.sim.clock import Cause
from goodput_sim.sim.dynamics import Dynamic, Interruption, LossCause, World
from goodput_sim.sim.jobs import Job


@dataclass(frozen=True)
class Window:
    """Node ``node`` is down for ``duration`` seconds from ``start``, announced ``warning``
    seconds before."""

    node: int
    start: float
    duration: float
    warning: float = 0.0


class MaintenanceWindows(Dynamic):
    """Planned maintenance: each window takes its node offline; a ``maintenance_stops``
    column counts the jobs it stopped, and the summary the node-hours it held."""

    name = "maintenance"

    def __init__(self, world: World, windows: tuple[Window, ...]):
        super().__init__(world)
        self.windows = windows
        self.columns = ("maintenance_stops",)
        self._stops: dict[Job, int] = {}

    @classmethod
    def of(cls, *windows: Window):
        """A factory for one run's ``dynamics=``."""
        return lambda world: cls(world, windows)

    def start(self) -> None:
        for window in self.windows:
            at = window.start - window.warning
            self.world.schedule(at, Cause.FAILURE, lambda w=window: self._take(w))

    def _take(self, window: Window) -> None:
        world = self.world
        now = world.env.now
        world.catch_up()
        world.pool.hold(window.node)
        why = Interruption(LossCause.NODE_DOWN, now, self.name, window.node)
        for job in world.jobs_on(window.node):
            warned = window.warning > 0
            if warned:
                world.save(job, now)
            world.stop(job, why, lose_work=not warned, restore=True)
            self._stops[job] = self._stops.get(job, 0) + 1
        back = window.warning + window.duration
        world.schedule(back, Cause.REPAIR, lambda: self._back(window))

    def _back(self, window: Window) -> None:
        self.world.pool.unhold(window.node)
        self.world.world_changed()

    def job_columns(self, job: Job) -> dict[str, int]:
        return {"maintenance_stops": self._stops.get(job, 0)}

    def summary(self, end: float) -> dict[str, float]:
        held = sum(
            min(w.warning + w.duration, max(end - w.start + w.warning, 0.0)) for w in self.windows
        )
        return {"maintenance_node_hours": held / 3600.0}


JOBS = pd.DataFrame(
    {
        "name": ["a", "b"],
        "time": [0.0, 0.0],
        "application": ["cifar10", "cifar10"],
        "num_replicas": [4, 4],
        "batch_size": [512, 512],
    }
)
SETTINGS = {  # (jobs, cluster) per policy: fifo keeps b on the other node; tiresias runs a alone
    "fifo": (JOBS, ClusterSpec.uniform(2, 4)),
    "tiresias": (JOBS.iloc[:1], ClusterSpec.uniform(1, 4)),
}
RESTART = 30.0  # the default restart delay


def _run(policy: str, *windows: Window) -> tuple[pd.DataFrame, dict]:
    jobs, cluster = SETTINGS[policy]
    dynamics = (MaintenanceWindows.of(*windows),) if windows else ()
    result = api.run(policy, jobs, cluster=cluster, dynamics=dynamics)
    return result.jobs.set_index("name"), result.cluster_summary


@pytest.mark.parametrize("policy", ["fifo", "tiresias"])
@pytest.mark.parametrize("warning", [0.0, 120.0])
def test_maintenance_costs_what_a_hand_computation_says(policy, warning):
    """Job ``a`` holds node 0, a 4-GPU node, which goes down at 300 s for 600 s. Under fifo job
    ``b`` holds the other node; under tiresias ``a`` runs alone on a one-node cluster. Either
    way ``a`` waits for node 0 and resumes at the round when it is back (900 s, a round's
    time), after its restart delay:

    * unwarned, it falls back to the checkpoint it took when it started training (30 s,
      progress 0): it finishes 900 s later than without maintenance;
    * warned 120 s ahead, it saves at 180 s and loses nothing but the time from 180 s until it
      trains again (930 s): it finishes 750 s later.

    Job ``b`` is untouched."""
    plain, _ = _run(policy)
    assert plain.loc["a", "finish"] > 900 + RESTART  # still running when node 0 is back
    window = Window(node=0, start=300.0, duration=600.0, warning=warning)
    hit, summary = _run(policy, window)
    delay = 900.0 if warning == 0 else (900.0 + RESTART) - (300.0 - warning)
    assert hit.loc["a", "finish"] - plain.loc["a", "finish"] == pytest.approx(delay, abs=1e-6)
    assert hit.loc["a", "maintenance_stops"] == 1
    if "b" in hit.index:
        assert hit.loc["b", "finish"] == plain.loc["b", "finish"]
        assert hit.loc["b", "maintenance_stops"] == 0
    assert hit.loc["a", "restores"] == 1 and hit.loc["a", "restarts"] == 1
    lost = 0.0 if warning else 4 * (300.0 - RESTART)  # GPU-seconds trained since the checkpoint
    assert hit.loc["a", "lost_gpu_seconds"] == pytest.approx(lost)
    assert summary["maintenance_node_hours"] == pytest.approx((600.0 + warning) / 3600.0)
    assert summary["node_failures"] == 0  # maintenance is not a failure


def test_a_window_after_every_job_changes_nothing():
    """A window that opens once the jobs are done leaves every result as it was."""
    plain, _ = _run("fifo")
    late = Window(node=0, start=plain["finish"].max() + 3600.0, duration=600.0)
    hit, _ = _run("fifo", late)
    pd.testing.assert_frame_equal(hit.drop(columns="maintenance_stops"), plain)
