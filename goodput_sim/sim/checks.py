"""Checks a run makes before it starts, so an input that could never finish is refused in one
line instead of running for ever; and the oracle's true throughput parameters."""

from __future__ import annotations

from collections.abc import Iterable, Mapping

import numpy as np

from goodput_sim.errors import InputError
from goodput_sim.inputs.cluster import ClusterSpec
from goodput_sim.models.goodput import fixed_batch_config
from goodput_sim.models.throughput import ThroughputModel, ThroughputParams
from goodput_sim.profiles.base import ApplicationProfile
from goodput_sim.sim.jobs import Job
from goodput_sim.sim.progress import epoch_rates

MAX_IDEAL_SECONDS = 365 * 86400.0  # a job needing longer even alone is an input error


def check_finishable(requests: Iterable[Job], cluster: ClusterSpec) -> None:
    """Refuse a job that could not finish within ``MAX_IDEAL_SECONDS`` even alone on its
    requested GPUs at its requested batch, or that asks for more GPUs than one GPU type
    has: its profile (or request) would make the run endless. One estimate per distinct
    request (``requests``: the first job of each)."""
    most = cluster.max_job_gpus
    for job in requests:
        spec, profile = job.spec, job.profile
        if cluster.mixed and spec.requested_replicas > most:
            raise InputError(
                f"job {job.name!r}",
                f"asks for {spec.requested_replicas} GPUs; a job never spans two GPU types "
                f"and the largest type of this cluster has {most}",
            )
        lim = profile.limits
        replicas = spec.requested_replicas
        b, s = fixed_batch_config(spec.requested_batch, replicas, lim)
        layout = cluster.packed_layout(replicas)
        epochs = np.arange(lim.max_epochs)
        *_, rate = epoch_rates(profile, layout, b, s, replicas, epochs)
        with np.errstate(divide="ignore", invalid="ignore"):
            seconds = float(np.sum(np.diff(profile.progress_thresholds) / rate))
        if not (np.isfinite(seconds) and seconds <= MAX_IDEAL_SECONDS):
            raise InputError(
                f"job {job.name!r}",
                f"would need {seconds / 86400:.3g} days alone on {replicas} GPUs at batch "
                f"{spec.requested_batch} with the {spec.application!r} profile; at most "
                f"{MAX_IDEAL_SECONDS / 86400:.0f} days are simulated (check the profile)",
            )


def check_categories(requests: Iterable[Job]) -> None:
    """Refuse a ``rigid`` or ``scale-gpus`` job whose request its application's own rule
    overrides (ncf's profile fixes 1 GPU and batch 32768): the category says the request
    binds, so no policy may silently run it otherwise. One check per distinct request."""
    for job in requests:
        spec, lim = job.spec, job.profile.limits
        if spec.category == "adaptive":
            continue
        gpus, batch = spec.requested_replicas, spec.requested_batch
        most, fixed = lim.max_replicas, lim.fixed_batch_size
        if (most is not None and gpus > most) or (fixed is not None and batch != fixed):
            rule = f"at most {most} GPUs" if most is not None else "any number of GPUs"
            rule += f" at batch {fixed}" if fixed is not None else ""
            raise InputError(
                f"job {job.name!r}",
                f"is {spec.category} and asks for {gpus} GPUs at batch {batch}; the "
                f"{spec.application!r} profile runs on {rule} (ask within it, or make the job "
                "adaptive)",
            )


def oracle_params(
    applications: Iterable[str],
    profiles: Mapping[str, ApplicationProfile],
    cluster: ClusterSpec,
) -> dict[str, ThroughputParams]:
    """True throughput as the 7-parameter model fitted to a dense grid of each application's
    profile (what an ``--oracle`` run's policies believe from the start)."""
    out = {}
    for app in sorted(set(applications)):
        profile = profiles[app]
        lim = profile.limits
        bsz = np.unique(np.geomspace(lim.min_local_bsz, lim.max_local_bsz, 8).round())
        rows = []
        for replicas in range(1, min(cluster.total_gpus, 64) + 1):
            placement = cluster.packed_layout(replicas)
            step, sync = profile.step_sync(placement, bsz)
            rows += [
                (len(placement), replicas, b, st - sy, st)
                for b, st, sy in zip(bsz, step, sync, strict=True)
            ]
        data = np.array(rows)
        out[app] = ThroughputModel().fit(*data.T).params_
    return out
