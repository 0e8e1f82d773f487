"""The golden matrix: digests of small runs across the axes that meet (every policy on a
homogeneous, a typed and a mixed-node-size cluster; failures and autoscaling under fixed,
elastic and type-aware schedulers; every non-default batch agent under a fixed and an elastic
scheduler). Small workloads, so the whole matrix runs in about a minute.

Regenerating is a deliberate act: after a change that is meant to move results, run
``python tests/golden_matrix.py``, check which keys changed (``git diff``), and name each
changed key and the reason in the commit message. A key that changes without a reason is a
bug."""

from __future__ import annotations

import dataclasses
import hashlib
import json
import sys
from collections.abc import Callable
from functools import cache
from pathlib import Path

import pandas as pd

sys.path.insert(0, str(Path(__file__).parent))
from golden import canonical  # noqa: E402

from goodput_sim import api  # noqa: E402
from goodput_sim.agents import agent_class  # noqa: E402
from goodput_sim.autoscale import AutoscaleConfig  # noqa: E402
from goodput_sim.inputs.cluster import ClusterSpec, FailureDomain, NodeGroup, parse_cluster  # noqa: E402
from goodput_sim.inputs.failures import Failure, FailureModel  # noqa: E402
from goodput_sim.inputs.philly import philly_workload, read_philly_log  # noqa: E402
from goodput_sim.inputs.workload import categorize  # noqa: E402
from goodput_sim.policies import policy_class  # noqa: E402
from goodput_sim.profiles import bundled_profiles_path, load_profiles  # noqa: E402
from goodput_sim.spec import SimConfig  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
MATRIX_FILE = Path(__file__).parent / "data" / "golden_matrix.json"
POLICIES = ("fifo", "tiresias", "optimus", "throughput", "goodput", "goodput-ga", "sia", "gavel")
AGENTS = ("fixed", "goodput", "throughput", "critical-batch", "tail-weighted")
PARAMS = {"goodput-ga": {"population": 10, "generations": 5}}  # seconds, not minutes, per run
SIA_TODAY = {  # sia's alternatives to the reference's modelling choices (issue 21)
    "price_batch": "application",
    "round_values": False,
    "restart_penalties": "application",
    "speed_ratio": "measurement",
}


def _first_of_each(path: Path, per_app: int) -> pd.DataFrame:
    jobs = pd.read_csv(path)
    return jobs.groupby("application", sort=False).head(per_app).reset_index(drop=True)


@cache
def inputs(name: str) -> tuple[pd.DataFrame, dict, ClusterSpec]:
    """(workload, profiles, cluster) of each setting the matrix runs on."""
    plain = load_profiles(bundled_profiles_path())
    default = _first_of_each(ROOT / "traces" / "workloads" / "default.csv", 2)
    if name == "homogeneous":
        return default, plain, ClusterSpec.uniform(8, 4)
    if name == "mixed-node-size":
        groups = (NodeGroup(2, 8), NodeGroup(4, 4), NodeGroup(2, 2))
        return default, plain, ClusterSpec(groups)
    if name == "philly-log":  # the real-log converter on its JSON fixture, one node per job
        log = read_philly_log(Path(__file__).parent / "data" / "philly_job_log.json")
        return philly_workload(log, realistic=True, seed=1), plain, ClusterSpec.uniform(4, 4)
    if name == "racks-spot":  # two failure domains and two spot nodes (issue 20)
        groups = (
            NodeGroup(3, 4, domain="rack-a", price=3.0),
            NodeGroup(3, 4, domain="rack-b", mtbf_hours=12.0, price=3.0),
            NodeGroup(
                2, 4, price=1.0, preemptible=True, preemption_hours=3.0, warning_seconds=120.0
            ),
        )
        domains = (FailureDomain("rack-a", 6.0, 0.5), FailureDomain("rack-b", 10.0))
        return default, plain, ClusterSpec(groups, domains=domains)
    if name == "bounded-groups":  # per-group autoscaling bounds and prices (issue 20)
        groups = (
            NodeGroup(2, 4, price=1.0, min_nodes=1, max_nodes=6),
            NodeGroup(2, 8, price=4.0, min_nodes=0, max_nodes=4),
            NodeGroup(1, 2, price=0.2, min_nodes=1, max_nodes=2),
        )
        return default, plain, ClusterSpec(groups)
    if name == "sia-mix":
        hetero = _first_of_each(ROOT / "traces" / "workloads" / "heterogeneous.csv", 1)
        typed = load_profiles(ROOT / "traces" / "profiles-sia")
        return hetero, typed, parse_cluster(ROOT / "configs" / "cluster-sia-default.yaml")
    if name == "sia-busy":  # 30 typed jobs on 48 GPUs of three types: the policies' choices bind
        busy = pd.read_csv(ROOT / "traces" / "workloads" / "heterogeneous.csv").iloc[:30]
        typed = load_profiles(ROOT / "traces" / "profiles-sia")
        groups = (NodeGroup(4, 4, "aws"), NodeGroup(2, 8, "dgx-ext"), NodeGroup(2, 8, "rtx"))
        return busy, typed, ClusterSpec(groups)
    if name in ("categories", "sia-busy-categories"):  # rigid and strong-scaling jobs (issue 21)
        base = "homogeneous" if name == "categories" else "sia-busy"
        workload, profiles, cluster = inputs(base)
        return categorize(workload, {"rigid": 0.3, "scale-gpus": 0.3}, seed=0), profiles, cluster
    raise KeyError(name)


FAILURE_TRACE = (Failure(1200.0, 0, 1800.0), Failure(2400.0, 2, 600.0), Failure(3600.0, 0, 900.0))
DYNAMICS = {
    "mtbf": SimConfig(failures=FailureModel(mtbf_hours=8.0, repair_hours=0.5, seed=3)),
    "failure-trace": SimConfig(failures=FailureModel(trace=FAILURE_TRACE)),
    "autoscale-utility": SimConfig(autoscale=AutoscaleConfig(2, 8, "utility")),
    "autoscale-queue": SimConfig(autoscale=AutoscaleConfig(2, 8, "queue")),
    # Issue 20: checkpoints that cost time, charged at reallocations; job crashes with the
    # Young/Daly interval; Weibull node lifetimes.
    "checkpoints-charged": SimConfig(
        checkpoint_seconds=30.0,
        reallocation_checkpoint="charged",
        failures=FailureModel(mtbf_hours=8.0, repair_hours=0.5, seed=3),
    ),
    "crashes-auto": SimConfig(
        checkpoint_interval="auto",
        checkpoint_seconds=20.0,
        failures=FailureModel(job_crash_hours=1.5, seed=3),
    ),
    "weibull": SimConfig(
        failures=FailureModel(mtbf_hours=8.0, repair_hours=0.5, seed=3, lifetime="weibull")
    ),
    # Issue 49: crashes turned off (as in a failure-free twin) while a crash rate is set.
    "no-crashes": SimConfig(crashes=False, failures=FailureModel(job_crash_hours=1.5, seed=3)),
}


def cases() -> dict[str, Callable[[], api.SimResult]]:
    """Golden key -> the run it digests."""

    def run(setting: str, policy: str, config=None, agent=None, params=None) -> Callable:
        def go():
            workload, profiles, cluster = inputs(setting)
            return api.run(
                policy,
                workload,
                profiles,
                cluster,
                config=config,
                agent=agent,
                params=params or PARAMS.get(policy),
            )

        return go

    out = {}
    for setting in ("homogeneous", "sia-mix", "mixed-node-size"):
        for policy in POLICIES:
            out[f"{setting}/{policy}"] = run(setting, policy)
    # Gavel as the Sia artifact runs it and its declared alternatives (issue 21).
    out["sia-busy/gavel"] = run("sia-busy", "gavel")
    out["sia-busy/sia"] = run("sia-busy", "sia")  # the Sia reference's choices, and today's
    out["sia-busy/sia/today"] = run("sia-busy", "sia", params=SIA_TODAY)
    out["sia-busy/sia/pricing_precision=double"] = run(
        "sia-busy", "sia", params={"pricing_precision": "double"}
    )
    for name, value in (("objective", "max_min_fairness"), ("leftover", False)):
        out[f"sia-busy/gavel/{name}={value}"] = run("sia-busy", "gavel", params={name: value})
    for dynamics, config in DYNAMICS.items():
        for policy in ("tiresias", "goodput", "sia"):
            out[f"homogeneous/{policy}/{dynamics}"] = run("homogeneous", policy, config)
    spot = SimConfig(checkpoint_seconds=20.0, failures=FailureModel(seed=3))
    for policy in ("tiresias", "goodput", "sia"):
        out[f"racks-spot/{policy}"] = run("racks-spot", policy, spot)
    search = SimConfig(autoscale=AutoscaleConfig(2, 8, "search"))
    for policy in ("goodput", "sia"):  # sizing by the policy's own allocation (elastic only)
        out[f"homogeneous/{policy}/autoscale-search"] = run("homogeneous", policy, search)
    for rule in ("utility", "queue"):
        scaled = SimConfig(autoscale=AutoscaleConfig(2, 10, rule))
        for policy in ("tiresias", "goodput"):
            out[f"bounded-groups/{policy}/autoscale-{rule}"] = run("bounded-groups", policy, scaled)
    for policy in ("tiresias", "goodput"):
        default = policy_class(policy).default_agent
        for agent in AGENTS:
            if agent != agent_class(default).name:
                out[f"sia-mix/{policy}/agent={agent}"] = run("sia-mix", policy, agent=agent)
    # The Philly replay and the optimiser's scale settings: the candidate caps bind at 2 jobs
    # per role (on these 12 jobs the capped run equals the uncapped one: the same digest);
    # goodput's quiet time lets allocations stand for up to 5 rounds between events.
    for policy in ("fifo", "goodput"):
        out[f"philly-log/{policy}"] = run("philly-log", policy)
    for name, value in (("candidates", 2), ("quiet_seconds", 300.0)):
        out[f"homogeneous/goodput/{name}={value:g}"] = run(
            "homogeneous", "goodput", params={name: value}
        )
    # Type-blind goodput as the Sia artifact runs its Pollux: virtual 4-GPU nodes, a 16-GPU
    # cap and a flat 30-s restart delay, together and each alone, on nodes of unequal sizes.
    artifact = {"virtual_node_gpus": 4, "max_gpus": 16, "restart_seconds": 30.0}
    for setting in ("sia-mix", "mixed-node-size"):
        out[f"{setting}/goodput/artifact-pollux"] = run(setting, "goodput", params=artifact)
        for name, value in artifact.items():
            out[f"{setting}/goodput/{name}={value:g}"] = run(
                setting, "goodput", params={name: value}
            )
    # Progress models (issue 19): the learning-rate-aware model, and seed 004's objective
    # recorded under the noise model, on typed profiles with the tail agent, blind and
    # forecasting, and under goodput's own agent.
    lr_aware = SimConfig(progress="lr-aware")
    recorded = SimConfig(seed_objective=True)
    stepped = SimConfig(progress="lr-aware", tail_geometry="steps")
    for policy in ("tiresias", "goodput"):
        out[f"sia-mix/{policy}/progress=lr-aware"] = run("sia-mix", policy, lr_aware)
        out[f"sia-mix/{policy}/agent=tail-weighted/forecast/progress=lr-aware"] = run(
            "sia-mix", policy, lr_aware, agent="tail-weighted", params={"forecast": True}
        )
        out[f"sia-mix/{policy}/agent=tail-weighted/seed-objective"] = run(
            "sia-mix", policy, recorded, agent="tail-weighted"
        )
        # Seed 004's geometry (issue 48): the blind plan laid on the static run's steps.
        out[f"sia-mix/{policy}/agent=tail-weighted/progress=lr-aware/tail-geometry=steps"] = run(
            "sia-mix", policy, stepped, agent="tail-weighted"
        )
    # Job categories under every policy, and finish-time fairness (its own table, digested in
    # place of the jobs table) under the four policies of the fairness comparison (issue 21).
    for policy in POLICIES:
        out[f"categories/{policy}"] = run("categories", policy)
    for policy in ("sia", "gavel", "goodput"):
        out[f"sia-busy-categories/{policy}"] = run("sia-busy-categories", policy)
    for policy in ("tiresias", "goodput", "sia", "gavel"):
        out[f"sia-busy/{policy}/fairness"] = fairness_of(run("sia-busy", policy))
    return out


def fairness_of(go: Callable[[], api.SimResult]) -> Callable[[], api.SimResult]:
    """The run of ``go`` with its fairness table where :func:`digest` reads the jobs table."""

    def table() -> api.SimResult:
        result = go()
        return dataclasses.replace(result, jobs=result.fairness, rounds=pd.DataFrame())

    return table


def digest(result: api.SimResult) -> str:
    """SHA-256 of the jobs and rounds tables as written, decimals at 8 significant digits."""
    tables = result.jobs.to_csv(index=False, float_format="%.6f") + result.rounds.to_csv(
        index=False
    )
    return hashlib.sha256(canonical(tables)).hexdigest()


def main() -> None:
    golden = {key: digest(go()) for key, go in sorted(cases().items())}
    MATRIX_FILE.write_text(json.dumps(golden, indent=2, sort_keys=True) + "\n")
    print(f"wrote {len(golden)} digests to {MATRIX_FILE}")


if __name__ == "__main__":
    main()
