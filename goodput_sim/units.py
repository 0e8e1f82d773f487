"""The unit of every column the simulator writes, recorded in each run's manifest and
documented in the README: times are seconds everywhere in files (tables printed for people
show hours, and say so)."""

from __future__ import annotations

JOBS = {
    "name": "text",
    "application": "text",
    "arrival": "s",
    "start": "s (first allocation; empty if never started)",
    "finish": "s (empty if unfinished)",
    "jct": "s (finish - arrival; empty if unfinished)",
    "queueing": "s (start - arrival)",
    "restarts": "count",
    "gpu_seconds": "GPU-s allocated (training and restart delays)",
    "final_batch_size": "examples per optimizer step",
    "epochs": "count completed",
    "examples": "examples processed",
    "train_seconds": "s training (allocated, past restart delays)",
    "train_gpu_seconds": "GPU-s training",
    "finished": "true or false",
    "restart_gpu_seconds": "GPU-s in restart delays",
    "failures": "count of allocations ended by a node failure",
    "restores": "count of restarts from a checkpoint after a failure",
    "lost_gpu_seconds": "GPU-s of training undone by failures (back to the last checkpoint)",
    "lost_epochs": "epochs of progress undone by failures (fractional)",
    "crashes": "count of job-level crashes (runs where jobs crash only)",
    "saves": "count of checkpoints saved at a cost (runs where saves take time only)",
    "preemptions": "count of stops by a spot node's reclaim (clusters with spot groups only)",
    "gpu_types": "GPU types run on, in order, joined by > (typed runs only)",
    "gpu_hours_by_type": "type=GPU-h allocated;... (typed runs only)",
}
ROUNDS = {
    "time": "s",
    "active": "jobs",
    "running": "jobs",
    "queued": "jobs",
    "gpus_in_use": "GPUs",
    "allocations": "name=GPUs per used node, dot-separated@total batch;...",
    "nodes_up": "nodes offering GPUs this interval",
    "nodes_down": "nodes failed and under repair",
    "nodes_starting": "nodes the autoscaler started that are still booting",
    "gpus_up": "GPUs of the nodes up (recorded on clusters of several node shapes)",
}
FAIRNESS = {
    "name": "text",
    "n_avg": "jobs active on average over the job's life (itself included)",
    "share_gpus": "GPUs (the cluster's over n_avg)",
    "isolated_jct": "s alone on that share (restart delay included)",
    "rho": "JCT / isolated_jct (empty if unfinished)",
}
SUMMARY = {
    "jobs": "count",
    "finished": "count",
    "unfinished": "count",
    "avg_jct": "s (over finished jobs)",
    "median_jct": "s (over finished jobs)",
    "p95_jct": "s (over finished jobs)",
    "p99_jct": "s (over finished jobs)",
    "makespan": "s (first arrival to last finish)",
    "gpu_utilization": "fraction of GPU-s over the makespan",
    "avg_queueing": "s",
    "avg_restarts": "count",
    "gpu_hours": "GPU-h allocated",
    "gpu_hours_per_job": "GPU-h allocated per job",
    "avg_jct_<application>": "s (over that application's finished jobs)",
    "examples": "examples processed",
    "examples_per_gpu_second": "examples per training GPU-s (geometric mean over applications)",
    "wall_seconds": "s of wall time",
    "node_hours": "node-h provisioned (start-up included), time 0 to the last round",
    "provisioned_gpu_hours": "GPU-h provisioned, each node with its own GPUs (as node_hours)",
    "node_failures": "count",
    "node_hours_failed": "node-h under repair",
    "lost_gpu_hours": "GPU-h of training undone by failures",
    "job_crashes": "count of job crashes (runs where jobs can crash)",
    "cost": "node_hours x --node-price, or each group's node-h x its price (empty without one)",
    "node_hours_on_demand": "node-h paid of on-demand groups (clusters with prices or spot)",
    "node_hours_spot": "node-h paid of preemptible groups, not while reclaimed (as above)",
    "node_preemptions": "count of spot node reclaims (as above)",
    "avg_jct_without_failures": "s, the same run with no node failing, reclaimed or crashing",
    "provisioned_gpu_utilization": "fraction of provisioned GPU-s allocated to jobs",
    "gpu_hours_<type>": "GPU-h allocated on that GPU type (typed runs only)",
    "type_moves": "count of job moves between GPU types (typed runs only)",
    "ftf_rho_max": "the largest finish-time fairness rho over finished jobs",
    "ftf_rho_median": "the median rho over finished jobs",
    "ftf_unfair_fraction": "fraction of finished jobs with rho > 1",
}


def manifest_units() -> dict[str, dict[str, str]]:
    """The units block of a results manifest."""
    return {"jobs.csv": JOBS, "rounds.csv": ROUNDS, "fairness.csv": FAIRNESS, "summary": SUMMARY}
