"""A dynamic: rolling maintenance, every node offline in turn for a while."""

from goodput_sim.params import Param
from goodput_sim.sim.clock import Cause
from goodput_sim.sim.dynamics import Dynamic, Interruption, LossCause


class RollingMaintenance(Dynamic):
    """Rolling maintenance: from ``start_hours`` on, the nodes go offline one after another,
    each for ``hours``. The jobs on a node are drained first (they save their state and lose
    nothing) or, with ``drain`` off, stopped at once (back to their last checkpoint)."""

    name = "rolling-maintenance"
    params = (
        Param("start_hours", float, 1.0, "when the first node goes offline", low=0, high=1e6),
        Param("hours", float, 0.5, "how long each node is offline", low=0.01, high=1e4),
        Param("nodes", int, 0, "how many nodes are maintained (0: every node)", low=0, high=1e5),
        Param("drain", bool, True, "jobs save their state before their node goes offline"),
    )

    def __init__(self, world, **values):
        super().__init__(world, **values)
        self.columns = ("maintenance_stops",)  # the jobs.csv column job_columns fills
        self.stops: dict[str, int] = {}
        self.windows: list[tuple[float, float]] = []  # (start, end) of each window begun

    def start(self) -> None:
        length = self.values["hours"] * 3600.0
        count = min(self.values["nodes"] or self.world.cluster.nodes, self.world.cluster.nodes)
        for node in range(count):
            at = self.values["start_hours"] * 3600.0 + node * length
            self.world.schedule(at, Cause.FAILURE, lambda node=node: self._take(node, length))

    def _take(self, node: int, length: float) -> None:
        world, now = self.world, self.world.env.now
        world.catch_up()  # every running job's progress up to now, before its GPUs change
        world.pool.hold(node)
        why = Interruption(LossCause.NODE_DOWN, now, self.name, node)
        for job in world.jobs_on(node):
            if self.values["drain"]:
                world.save(job, now)
            world.stop(job, why, lose_work=not self.values["drain"], restore=True)
            self.stops[job.name] = self.stops.get(job.name, 0) + 1
        world.world_changed()  # the policy decides again without the node
        self.windows.append((now, now + length))
        world.schedule(length, Cause.REPAIR, lambda: self._back(node))

    def _back(self, node: int) -> None:
        self.world.pool.unhold(node)
        self.world.world_changed()

    def job_columns(self, job) -> dict[str, int]:
        return {"maintenance_stops": self.stops.get(job.name, 0)}

    def summary(self, end: float) -> dict[str, float]:
        held = sum(min(stop, end) - start for start, stop in self.windows if start < end)
        return {"maintenance_node_hours": held / 3600.0}
