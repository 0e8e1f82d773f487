"""Cluster autoscaling: at each round a rule decides how many nodes the next interval needs,
between ``--min-nodes`` and ``--max-nodes``. Rules are consulted at every round, including
rounds with no active job (then the rounds keep their interval until the cluster is at
``--min-nodes``), so an idle cluster shrinks.

* ``utility`` (Pollux, OSDI'21 Sec. 4.3; the artifact's rule, SPEC 5.8): cluster utility is the
  sum of the jobs' speedups per provisioned GPU, each job's speedup being its believed goodput
  on its GPUs over its goodput on one GPU (so a cluster of perfectly scaling, fully used GPUs
  has utility 1), under the best allocation of the GPUs there are (handed out one at a time to
  the job that gains most, waiting jobs included; 0 with no active job). The rule averages the
  utility of the last ``window`` rounds and acts only on a full window: above ``high`` the
  cluster grows, below ``low`` it shrinks; in both cases to the largest size whose utility is
  still at least ``target``. Between the thresholds the size holds (hysteresis). The history is
  cleared whenever the rule resizes or the cluster's size changed, so a size holds for at least
  ``window`` rounds (the cool-down).
* ``search``: the utility rule's window and thresholds, but the new size is found by re-running
  the policy's own allocation at candidate sizes (binary search for the largest size whose
  utility under that allocation is at least ``target``), as the Pollux artifact's autoscaler
  meant to (SPEC 5.8: its search path calls the policy's optimiser; in the artifact it fails).
  Only elastic policies choose GPU counts, so only they can be probed.
* ``queue``: what a cloud operator does without a job model: grow to fit every active job's
  requested GPUs while any job waits; shrink to fit them, plus ``slack_nodes``, once no job has
  waited and the size has not changed for ``cooldown`` rounds.

Whatever the rule, the engine then applies two guards. When no job runs and some wait, the
cluster grows to fit the smallest waiting request (no job is stranded by a rule that cannot see
fixed-size requests). A node holding a running job of a policy that does not choose GPU counts
(``Policy.elastic`` false: the job holds the GPUs it asked for) is never removed, so a rule never
preempts a fixed-size job. The engine starts the nodes asked for in pool order (they come up
after a start-up delay) and removes booting nodes first, then idle ones, then those with the
fewest GPUs in use; elastic jobs on removed nodes are preempted and restarted elsewhere, as by
the scheduler (a graceful checkpoint: no progress is lost).

Node shapes: the pool of machines is ``--max-nodes`` nodes taken from the cluster's node groups
in order, the groups repeated if ``--max-nodes`` exceeds the cluster's nodes (one group: that
many nodes of its shape). Rules count GPUs node by node (:meth:`ScaleView.nodes_for`)."""

from __future__ import annotations

import math
from collections import deque
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any, ClassVar

import numpy as np

from goodput_sim.errors import InputError
from goodput_sim.inputs.cluster import ClusterSpec, NodeGroup
from goodput_sim.models.speedup_table import BestGoodputs
from goodput_sim.params import Param, resolve

if TYPE_CHECKING:
    from goodput_sim.policies.base import JobView

MAX_POOL_NODES = 100_000  # the cluster's node bound (cluster.py), for the pool too


@dataclass(frozen=True)
class AutoscaleConfig:
    """Autoscaling settings: the node range, the rule and its parameters (sorted pairs), the
    start-up delay of a new node and an optional price per node-hour."""

    min_nodes: int
    max_nodes: int
    rule: str = "utility"
    params: tuple[tuple[str, Any], ...] = ()
    startup_delay: float = 120.0
    node_price: float | None = None

    def __post_init__(self) -> None:
        if self.min_nodes < 1:
            raise InputError("--min-nodes", f"must be at least 1, got {self.min_nodes}")
        if self.max_nodes > MAX_POOL_NODES:
            raise InputError(
                "--max-nodes", f"at most {MAX_POOL_NODES} nodes are supported, got {self.max_nodes}"
            )
        if self.min_nodes > self.max_nodes:
            raise InputError(
                "--min-nodes", f"{self.min_nodes} exceeds --max-nodes {self.max_nodes}"
            )
        if not 0 <= self.startup_delay <= 86400:
            raise InputError("--startup-delay", "must be seconds in [0, 86400]")
        if self.node_price is not None and not (
            math.isfinite(self.node_price) and self.node_price >= 0
        ):
            raise InputError("--node-price", f"must be a price >= 0, got {self.node_price}")
        make_autoscaler(self.rule, dict(self.params))  # parameters checked now


@dataclass(frozen=True)
class ScaleView:
    """What a rule sees at a round: the provisioned nodes (up, starting or under repair), the
    GPUs of every node of the pool in the order the engine keeps them (provisioned ones first,
    those it would remove last at the front; then the others in the order it would start them),
    and the active jobs with their current allocations and beliefs."""

    provisioned: int
    node_gpus: tuple[int, ...]
    jobs: tuple[JobView, ...]
    # GPUs the policy gives each job (in ``jobs`` order) on the first n nodes of ``node_gpus``;
    # the engine provides it to rules that ask for it (``probes``), leaving the policy as it was.
    probe: Callable[[int], Sequence[int]] | None = field(default=None, compare=False)

    @property
    def provisioned_gpus(self) -> int:
        return sum(self.node_gpus[: self.provisioned])

    @property
    def max_gpus(self) -> int:
        """GPUs of the largest cluster allowed."""
        return sum(self.node_gpus)

    @property
    def largest_node(self) -> int:
        return max(self.node_gpus, default=0)

    def nodes_for(self, gpus: int) -> int:
        """Fewest nodes, kept in the engine's order, that hold ``gpus`` GPUs (all if none do)."""
        if gpus <= 0:
            return 0
        held = np.cumsum(self.node_gpus)
        return min(int(np.searchsorted(held, gpus)) + 1, len(self.node_gpus))


class Autoscaler:
    """A rule for the cluster size; declares its parameters like a policy. An instance holds the
    history of one simulation (the engine builds one per run)."""

    name: ClassVar[str]
    params: ClassVar[tuple[Param, ...]] = ()
    reads_beliefs: ClassVar[bool] = False  # whether the engine must refresh beliefs for it
    probes: ClassVar[bool] = False  # whether it re-runs the policy at candidate sizes

    def __init__(self, **values: Any):
        self.values = resolve(type(self).params, values, f"autoscaler {self.name}")

    def target(self, view: ScaleView) -> int:
        """Nodes wanted for the next interval (the engine clamps to [min, max])."""
        raise NotImplementedError

    def describe(self) -> dict:
        return {"name": self.name, **self.values}


class UtilityAutoscaler(Autoscaler):
    """Pollux's rule: keep the cluster utility (believed speedup per provisioned GPU), averaged
    over the last ``window`` rounds, between two thresholds."""

    name = "utility"
    reads_beliefs = True
    params = (
        Param("low", float, 0.5, "shrink below this utility", 0.0, 1.0),
        Param("high", float, 0.8, "grow above this utility", 0.0, 1.0),
        Param("target", float, 0.65, "utility the new size aims at", 0.0, 1.0),
        Param(
            "window",
            int,
            15,
            "rounds whose utility is averaged; the rule acts on a full window, cleared after "
            "every resize (1: every round, no smoothing)",
            1,
            10_000,
        ),
    )

    def __init__(self, **values: Any):
        super().__init__(**values)
        if not self.values["low"] <= self.values["target"] <= self.values["high"]:
            raise InputError("--param", "autoscaler utility needs low <= target <= high")
        self._history: deque[float] = deque(maxlen=self.values["window"])
        self._size: int | None = None  # provisioned nodes at the last round
        # Best goodputs by (belief, cap, node shapes): every argument is part of the key.
        self._best_goodputs = BestGoodputs()

    def target(self, view: ScaleView) -> int:
        if view.provisioned != self._size:  # resized since the last round: start afresh
            self._history.clear()
            self._size = view.provisioned
        gains = self._gains(view)
        capacity = view.provisioned_gpus
        held = float(np.sum(gains[:capacity]))  # the best allocation of the GPUs there are
        self._history.append(held / capacity if capacity else 1.0)
        if len(self._history) < self.values["window"]:
            return view.provisioned
        utility = float(np.mean(self._history))
        if self.values["low"] <= utility <= self.values["high"]:
            return view.provisioned
        wanted = self._size_for(view, gains, utility > self.values["high"])
        if utility > self.values["high"]:
            wanted = max(wanted, view.provisioned)
        else:
            wanted = min(wanted, view.provisioned)
        if wanted != view.provisioned:
            self._history.clear()
        return wanted

    def _size_for(self, view: ScaleView, gains: np.ndarray, grow: bool) -> int:
        """The size to move to: the most nodes whose GPUs the best allocation (handed out one
        GPU at a time, largest gain first) uses at a utility of at least ``target``."""
        ideal = np.cumsum(gains) / np.arange(1, len(gains) + 1)  # utility of the best G GPUs
        enough = np.flatnonzero(ideal >= self.values["target"])
        gpus = int(enough[-1]) + 1 if enough.size else 1
        return max(view.nodes_for(gpus), 1)

    def _gains(self, view: ScaleView) -> np.ndarray:
        """Every job's speedup gain of each further GPU, largest first."""
        curves = [
            self._speedups(job, job.belief.max_replicas(view.max_gpus), view) for job in view.jobs
        ]
        return np.sort(np.concatenate([np.diff(c) for c in curves] or [np.zeros(0)]))[::-1]

    def _speedups(self, job: JobView, cap: int, view: ScaleView) -> np.ndarray:
        """The job's speedup on 0..cap GPUs packed on the pool's nodes, against one GPU (its
        believed goodput; linear before it has been profiled, flat past its GPU limit)."""
        cap = min(job.limits.cap(cap), cap)
        model = job.belief.goodput_model
        curve = np.zeros(cap + 1)
        if model is None:
            curve[1:] = np.arange(1, cap + 1)
            return curve
        largest = view.largest_node
        best = self._best_goodputs(model, True, cap, min(len(view.node_gpus), 2), largest)
        r = np.arange(1, cap + 1)
        rows = np.where(r <= largest, 1, 2)  # one node while the largest holds them
        values = best[rows, r]
        curve[1:] = np.maximum.accumulate(values / values[0]) if values[0] > 0 else r
        return curve


class QueueAutoscaler(Autoscaler):
    """Size the cluster to the GPUs the active jobs requested, growing while any job waits and
    shrinking after ``cooldown`` calm rounds."""

    name = "queue"
    params = (
        Param("slack_nodes", int, 0, "nodes kept beyond the requests", 0, 1_000_000),
        Param(
            "cooldown",
            int,
            5,
            "rounds with no job waiting and no resize before the cluster shrinks (0: at once)",
            0,
            10_000,
        ),
    )

    def __init__(self, **values: Any):
        super().__init__(**values)
        self._calm = 0  # rounds since a job last waited or the size changed
        self._size: int | None = None

    def target(self, view: ScaleView) -> int:
        requested = sum(job.requested_replicas for job in view.jobs)
        fits = view.nodes_for(requested)
        if any(not job.allocation.any() for job in view.jobs):
            self._calm, self._size = 0, view.provisioned
            return max(fits, view.provisioned)
        if view.provisioned != self._size:
            self._calm, self._size = 0, view.provisioned
        self._calm += 1
        if self._calm <= self.values["cooldown"]:
            return view.provisioned
        return min(fits + self.values["slack_nodes"], view.provisioned)


class SearchAutoscaler(UtilityAutoscaler):
    """The utility rule, sized by the policy itself: when the averaged utility leaves
    [``low``, ``high``], binary-search the largest size (at least the current one to grow, at
    most it to shrink) whose utility under the policy's own allocation there is at least
    ``target``."""

    name = "search"
    probes = True

    def _size_for(self, view: ScaleView, gains: np.ndarray, grow: bool) -> int:
        if view.probe is None:
            raise RuntimeError("autoscaler search needs the engine's probe of the policy")
        low, high = (view.provisioned, len(view.node_gpus)) if grow else (1, view.provisioned)
        best = low
        while low <= high:
            middle = (low + high) // 2
            if self.probed_utility(view, middle) >= self.values["target"]:
                best, low = middle, middle + 1
            else:
                high = middle - 1
        return best

    def probed_utility(self, view: ScaleView, nodes: int) -> float:
        """Utility of the policy's allocation on the first ``nodes`` nodes: the jobs' believed
        speedups at the GPUs it gives them, per GPU of those nodes."""
        gpus = sum(view.node_gpus[:nodes])
        if gpus == 0:
            return 0.0
        given = view.probe(nodes)
        total = 0.0
        for job, replicas in zip(view.jobs, given, strict=True):
            if replicas > 0:
                curve = self._speedups(job, job.belief.max_replicas(view.max_gpus), view)
                total += float(curve[min(int(replicas), len(curve) - 1)])
        return total / gpus


AUTOSCALERS: Mapping[str, type[Autoscaler]] = {
    cls.name: cls for cls in (UtilityAutoscaler, QueueAutoscaler, SearchAutoscaler)
}


def make_autoscaler(rule: str, values: Mapping[str, Any]) -> Autoscaler:
    """A fresh rule (with an empty history) by name, its parameters checked."""
    if rule not in AUTOSCALERS:
        raise InputError("--autoscaler", f"unknown rule {rule!r}; known: {', '.join(AUTOSCALERS)}")
    return AUTOSCALERS[rule](**values)


def removal_order(allocations: Sequence[np.ndarray], candidates: Sequence[int]) -> list[int]:
    """Nodes to remove first: idle ones, then those with the fewest GPUs in use (ties: the
    highest node id, so the cluster shrinks from its end)."""
    used = np.sum(allocations, axis=0) if len(allocations) else None
    load = {n: int(used[n]) if used is not None else 0 for n in candidates}
    return sorted(candidates, key=lambda n: (load[n], -n))


def pool_groups(groups: Sequence[NodeGroup], max_nodes: int) -> tuple[NodeGroup, ...]:
    """The pool of an autoscaled cluster: ``max_nodes`` nodes taken from ``groups`` in order,
    repeating them as needed, neighbouring groups alike but for their size merged. Where some
    group declares its own bounds, the pool is every group at its ``max_nodes`` (else its
    ``nodes``), kept apart, and ``max_nodes`` bounds only the nodes provisioned at once."""
    if any(g.bounded for g in groups):
        return tuple(replace(g, nodes=g.max_nodes or g.nodes) for g in groups)
    pool: list[NodeGroup] = []
    left = max_nodes
    while left > 0:
        for group in groups:
            take = min(group.nodes, left)
            if take == 0:
                break
            last = pool[-1] if pool else None
            if last is not None and replace(last, nodes=0) == replace(group, nodes=0):
                pool[-1] = replace(last, nodes=last.nodes + take)
            else:
                pool.append(replace(group, nodes=take))
            left -= take
    return tuple(pool)


def pool_cluster(cluster: ClusterSpec, scale: AutoscaleConfig | None) -> ClusterSpec:
    """The machines a run may use: the cluster, or with autoscaling ``max_nodes`` nodes taken
    from the cluster's node groups in order, repeated as needed (:func:`pool_groups`)."""
    if scale is None:
        return cluster
    return replace(cluster, groups=pool_groups(cluster.groups, scale.max_nodes))
