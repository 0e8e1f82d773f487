"""A scheduling policy: the jobs that asked for the fewest GPUs run first."""

from goodput_sim.params import Param
from goodput_sim.policies import Decision, Policy, Snapshot
from goodput_sim.policies.placement import keep_or_fill


class SmallestJobFirst(Policy):
    """Smallest job first: jobs that asked for fewer GPUs run first (ties: earlier arrival),
    each on at most ``max_gpus`` GPUs; a larger job waits, or gives its GPUs back."""

    name = "smallest-job-first"
    reads_beliefs = False  # it reads no throughput belief: the engine may skip refits
    params = (Param("max_gpus", int, 16, "most GPUs one job gets", low=1, high=4096),)

    def allocate(self, snapshot: Snapshot) -> Decision:
        order = sorted(snapshot.jobs, key=lambda job: (job.requested_replicas, job.arrival))
        free = int(snapshot.cluster.capacity.sum())
        counts = {}
        for job in order:
            gpus = min(job.requested_replicas, self.values["max_gpus"])
            if not job.limits.runs_on(gpus):  # a rigid job runs on what it asked for or none
                gpus = job.requested_replicas
            if gpus <= free:
                counts[job.name] = gpus
                free -= gpus
        # Running jobs keep their GPUs where their count is unchanged; the others are placed
        # on the freest nodes, in this order.
        return keep_or_fill(order, counts, snapshot.cluster)
