"""The pool's nodes over time: which are failed, reclaimed, not provisioned or booting, and the
node-time paid for (by on-demand and spot node where the cluster has prices or spot groups).

The pool only keeps state; the dynamics change it (:mod:`goodput_sim.sim.dynamics`): node
failures and spot reclaims take nodes down and bring them back, the autoscaler provisions and
removes them. The engine reads which nodes are offline at every round and accounts their time.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from goodput_sim.autoscale import AutoscaleConfig
from goodput_sim.inputs.cluster import ClusterSpec
from goodput_sim.inputs.failures import FailureModel


class NodePool:
    """Failed (repairing, by their own or their domain's failure), reclaimed (spot nodes under
    notice or away), off (not provisioned) and starting (booting) nodes offer no GPUs;
    node-seconds and GPU-seconds are counted while provisioned, and by group where the cluster
    has prices or spot groups."""

    def __init__(
        self, cluster: ClusterSpec, failures: FailureModel | None, scale: AutoscaleConfig | None
    ):
        self.cluster = cluster
        model = failures if failures is not None else FailureModel()
        declared = cluster.declares_failures
        # The run's failure model, where anything can fail (the run's rates, a trace, or the
        # cluster's own domains, group MTBFs and reclaim rates); None otherwise.
        self.failure_model = model if model.active or declared else None
        self.node_price = scale.node_price if scale is not None else None
        self.failed: set[int] = set()
        self._holds: dict[int, int] = {}  # node -> failures keeping it down (node, domain)
        self.reclaimed: set[int] = set()  # spot nodes under notice or taken by the provider
        self.reclaims = 0
        self.away: set[int] = set()  # reclaimed spot nodes gone (not paid for)
        self.failure_log: list[tuple[float, int, float]] = []
        self.off: set[int] = set()  # not provisioned (the autoscaler's)
        self.starting: dict[int, int] = {}  # node -> generation of its start request
        self.held: dict[int, int] = {}  # node -> other dynamics' holds keeping it offline
        self.node_seconds = 0.0  # provisioned node-seconds, start-up included
        self.gpu_seconds = 0.0  # their GPUs, node by node
        self._tick = 0.0
        # Node-seconds paid per group, kept where the cluster prices its groups or has spot ones.
        self.group_seconds = np.zeros(len(cluster.groups))

    @property
    def fails(self) -> bool:
        """Whether nodes can go down unannounced to the policy: failures or reclaims."""
        return self.failure_model is not None

    def failure_rate(self, nodes: Sequence[int]) -> float:
        """Events per second that undo the work of a job on ``nodes``: each node's failures
        (its group's MTBF, else the run's), those of the domains they belong to, and reclaims
        of spot nodes."""
        model = self.failure_model
        if model is None or model.trace:
            return 0.0
        rate, domains = 0.0, set()
        for node in nodes:
            group = self.cluster.node_groups[node]
            mtbf = group.mtbf_hours if group.mtbf_hours is not None else model.mtbf_hours
            rate += 1.0 / (mtbf * 3600.0) if mtbf else 0.0
            if group.preemption_hours is not None:
                rate += 1.0 / (group.preemption_hours * 3600.0)
            if group.domain is not None:
                domains.add(group.domain)
        for domain in self.cluster.domains:
            if domain.name in domains and domain.mtbf_hours is not None:
                rate += 1.0 / (domain.mtbf_hours * 3600.0)
        return rate

    # ---------------------------------------------------------------------------- state
    def offline(self) -> set[int]:
        """Nodes offering no GPUs: failed, reclaimed, not provisioned, booting, or held."""
        return self.failed | self.reclaimed | self.off | set(self.starting) | set(self.held)

    def live_cluster(self) -> ClusterSpec:
        """The cluster as this round's policy sees it: offline nodes offer no GPUs."""
        return self.cluster.with_offline(self.offline())

    def provisioned(self) -> int:
        """Nodes paid for: all but those the autoscaler has not started."""
        return self.cluster.nodes - len(self.off)

    def present(self, node: int) -> bool:
        """Whether ``node`` is provisioned and not taken back by the provider (so it can fail)."""
        return node not in self.off and node not in self.away

    # ------------------------------------------------------------------------- changes
    def take_down(self, node: int, now: float, duration: float) -> None:
        """``node`` fails now for ``duration`` seconds (one more failure holding it down)."""
        self._holds[node] = self._holds.get(node, 0) + 1
        self.failed.add(node)
        self.starting.pop(node, None)
        self.failure_log.append((now, node, duration))

    def repair(self, node: int) -> None:
        """One failure holding ``node`` down is repaired; it is up once none holds it."""
        self._holds[node] -= 1
        if not self._holds[node]:
            del self._holds[node]
            self.failed.discard(node)

    def reclaim(self, node: int) -> None:
        """The provider announces it takes spot node ``node`` back: it takes no new work."""
        self.reclaims += 1
        self.reclaimed.add(node)
        self.starting.pop(node, None)

    def hold(self, node: int) -> None:
        """Keep ``node`` offline (a dynamic of its own, such as planned maintenance), on top of
        whatever else does; it stays provisioned and paid for."""
        self.held[node] = self.held.get(node, 0) + 1

    def unhold(self, node: int) -> None:
        """Lift one :meth:`hold` of ``node``."""
        self.held[node] -= 1
        if not self.held[node]:
            del self.held[node]

    # ------------------------------------------------------------------------ accounting
    def account(self, now: float) -> None:
        """Count the node-time and GPU-time provisioned since the last call (a reclaimed spot
        node is paid until the provider takes it, not while it is away)."""
        span = now - self._tick
        unpaid = self.off | self.away
        self.node_seconds += (self.cluster.nodes - len(unpaid)) * span
        capacity = self.cluster.capacity
        self.gpu_seconds += int(capacity.sum() - sum(int(capacity[n]) for n in unpaid)) * span
        if self.cluster.priced:
            paid = np.ones(self.cluster.nodes, dtype=bool)
            paid[list(unpaid)] = False
            self.group_seconds += span * np.bincount(
                self.cluster.node_group_index[paid], minlength=len(self.cluster.groups)
            )
        self._tick = now

    def summary(self, end: float) -> dict:
        """Node-hours provisioned and lost to failures, failures, and cost with a price; on a
        cluster with prices or spot groups, node-hours and reclaims of spot nodes apart and cost
        at each group's price (the autoscaler's --node-price where a group has none)."""
        down = sum(min(duration, end - at) for at, _, duration in self.failure_log)
        price = self.node_price
        node_hours = self.node_seconds / 3600.0
        out = {
            "node_hours": node_hours,
            "provisioned_gpu_hours": self.gpu_seconds / 3600.0,
            "node_failures": len(self.failure_log),
            "node_hours_failed": down / 3600.0,
            "cost": node_hours * price if price is not None else float("nan"),
        }
        if self.cluster.priced:
            hours = self.group_seconds / 3600.0
            spot = np.array([g.preemptible for g in self.cluster.groups])
            prices = np.array(
                [g.price if g.price is not None else price for g in self.cluster.groups],
                dtype=float,
            )
            out["node_hours"] = float(hours.sum())
            out["node_hours_on_demand"] = float(hours[~spot].sum())
            out["node_hours_spot"] = float(hours[spot].sum())
            out["node_preemptions"] = self.reclaims
            out["cost"] = float(np.sum(hours * prices))  # nan where a price is missing
        return out


def held_nodes(allocations: Sequence[np.ndarray]) -> set[int]:
    """Nodes where any of ``allocations`` holds GPUs."""
    held: set[int] = set()
    for row in allocations:
        held.update(np.flatnonzero(row).tolist())
    return held
