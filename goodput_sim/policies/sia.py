"""Sia (SOSP'23): goodput across (GPU type, GPU count) configurations, solved exactly each round.

Every round (Sia SPEC 4):

1. Configurations per GPU type: 1, 2, 4 (and 8 on 8-GPU nodes) GPUs on one node, then whole
   nodes, 2 up to the type's nodes that are up: n nodes hold the GPUs of the type's n largest
   nodes up (n x its node size where all its nodes are alike, as in the reference).
2. A job's goodput on each configuration comes from its belief on that type. On a type it has
   not run on, the goodput of the first type (in cluster order) it has a belief for is scaled
   by the ratio of the application's one-GPU throughputs on the two types (measured offline).
   A new job values one GPU of any type at 1 and nothing else.
3. Each row is normalised by its smallest useful entry; every entry but the current
   configuration is multiplied by the job's restart factor (with the reference's per-name
   restart penalties); values are raised to the fairness power ``p`` (< 0: smaller is better),
   rounded to 2 decimals and clipped. Goodputs are priced up to the job's requested batch, and
   the one-GPU ratio is the reference's largest batch over slowest step (SPEC 4.1, 4.4, 4.5,
   4.11: the reference's choices; params name the alternatives).
4. The integer program (:mod:`~goodput_sim.policies.sia_milp`) picks at most one configuration
   per job, within every type's GPUs, minimising sum(A x) + lambda_n (jobs left without GPUs).
   Jobs still in their restart delay keep their configuration.
5. Placement per type, largest jobs first: a job keeps its nodes if its configuration did not
   change, multi-node jobs take whole free nodes (largest first, waiting a round unless they
   hold exactly the configuration's GPUs), the others the fullest node they fit on.

Decisions on the reference's quirks (Sia SPEC 10) are listed in the README.
"""

from __future__ import annotations

import dataclasses
import functools
from dataclasses import dataclass

import numpy as np
from numpy.typing import NDArray

from goodput_sim.inputs.cluster import ClusterSpec, type_nodes
from goodput_sim.models.goodput import frozen_grid, without_statistics
from goodput_sim.models.restart import restart_factor
from goodput_sim.params import Param
from goodput_sim.policies.base import Decision, JobView, Policy, Snapshot, register

EPSILON = 1e-4  # the value of a configuration nothing is known about ("zero-allocation gain")
CLIP = 3000.0
GRID_MEMO = 512  # candidate grids kept (tens of kilobytes each)


@dataclass(frozen=True)
class Config:
    """``gpus`` GPUs of ``gpu_type`` on ``nodes`` nodes."""

    gpu_type: str
    nodes: int
    gpus: int


@dataclass(frozen=True)
class SiaProgram:
    """One round's integer program: the jobs (snapshot order) and configurations, each job's
    normalised goodput row before restart factors (``goodput``), the program's values A
    (``values``), the configurations each job may take and the pinned ones (job index to
    configuration index)."""

    snapshot: Snapshot
    jobs: list[JobView]
    configs: list[Config]
    goodput: NDArray
    values: NDArray
    allowed: NDArray
    pinned: dict[int, int]


def configurations(cluster: ClusterSpec, max_nodes: int = 16) -> list[Config]:
    """Sia's configuration set on the nodes that are up, type by type in cluster order, jobs
    spanning at most ``max_nodes`` nodes (the reference's bound is its largest profiled node
    count per type, 16 at most)."""
    out = []
    capacity, types = cluster.capacity, cluster.node_type_index
    for k, gpu_type in enumerate(cluster.type_order):
        mine = capacity[types == k]
        up = int(np.count_nonzero(mine))
        if not up:
            continue
        whole = np.cumsum(np.sort(mine[mine > 0])[::-1])  # the n largest nodes up, whole
        single = [g for g in (1, 2, 4, 8) if g <= whole[0]]
        out += [Config(gpu_type, 1, g) for g in single]
        out += [Config(gpu_type, n, int(whole[n - 1])) for n in range(2, min(up, max_nodes) + 1)]
    return out


def rigid_configurations(
    cluster: ClusterSpec, counts: list[int], configs: list[Config]
) -> list[Config]:
    """For rigid jobs (Sia SPEC 4.8): ``counts`` GPUs on each type whose nodes up hold them,
    on the fewest of its largest nodes, where the standard set has no such configuration."""
    out = []
    have = {(c.gpu_type, c.gpus) for c in configs}
    capacity, types = cluster.capacity, cluster.node_type_index
    for k, gpu_type in enumerate(cluster.type_order):
        mine = np.sort(capacity[(types == k) & (capacity > 0)])[::-1]
        whole = np.cumsum(mine)
        for count in counts:
            if (gpu_type, count) in have or not len(whole) or count > whole[-1]:
                continue
            nodes = int(np.searchsorted(whole, count)) + 1
            out.append(Config(gpu_type, nodes, count))
    return out


@register("sia")
class Sia(Policy):
    """Sia: goodput across GPU types and counts, exact integer program each round (SOSP'23)."""

    name = "sia"
    default_agent = "goodput"
    type_aware = True
    elastic = True
    claim_baseline = False  # Pollux's successor, not one of the baselines its claim is about
    params = (
        Param("p", float, -0.5, "fairness power (< 0: minimise)", -10.0, 10.0),
        Param("lambda_n", float, 1.1, "value of giving a job any GPUs", 0.0, 1000.0),
        Param("restart_penalty", bool, True, "discount moves by the restart factor"),
        Param("max_nodes", int, 16, "most nodes one job may span", 1, 100_000),
        Param(
            "mip_rel_gap",
            float,
            1e-4,
            "relative gap at which the round's program stops: the reference's (CBC's 0.01%), "
            "or 0 for the exact optimum",
            0.0,
            0.5,
        ),
        # The Sia reference's modelling choices are the defaults; each has a named alternative
        # (README, "Decisions on the reference's quirks").
        Param(
            "price_batch",
            str,
            "requested",
            "largest batch the policy prices: the job's requested (CSV) batch, as the reference "
            "(SPEC 4.11), or the application's largest",
            choices=("requested", "application"),
        ),
        Param("round_values", bool, True, "round A = G^p to 2 decimals, as the reference (4.5)"),
        Param(
            "restart_penalties",
            str,
            "reference",
            "restart factor's delay: the reference's table by job name (4.4) or each "
            "application's true restart delay",
            choices=("reference", "application"),
        ),
        Param(
            "speed_ratio",
            str,
            "peak",
            "one-GPU factor for untried types: largest batch over slowest step among one-GPU "
            "measurements, as the reference (4.1), or one measurement",
            choices=("peak", "measurement"),
        ),
        Param(
            "fit",
            str,
            "artifact",
            "how the throughput beliefs are fitted: as the Sia artifact (from a fixed start at "
            "every new configuration, its solver and tolerance) or as the engine fits them for "
            "every other policy (least squares, warm-started)",
            choices=("artifact", "engine"),
        ),
        Param(
            "same_shape_moves",
            str,
            "free",
            "moving a job to other nodes of its GPU type with the same GPUs per node: free, as "
            "the reference (SPEC 3.6; placement then repacks a type whose free GPUs are split), "
            "or a restart as any other change of allocation",
            choices=("free", "restart"),
        ),
        Param(
            "ties",
            str,
            "solver",
            "which of equally good allocations to take: the solver's first, one preferring each "
            "job's previous configuration and then later configurations in type order (as the "
            "reference's solver mostly does), or a random one (seeded by tie_seed)",
            choices=("solver", "reference", "random"),
        ),
        Param("tie_seed", int, 0, "seed of the random tie order (ties=random)", 0, 2**31 - 1),
        Param(
            "pricing_precision",
            str,
            "single",
            "arithmetic of the batch candidates a configuration is priced over: single "
            "precision as the reference (a one-batch grid then rounds its per-GPU batch up), "
            "or double",
            choices=("single", "double"),
        ),
        Param(
            "solver",
            str,
            "highs",
            "the round's program solver: HiGHS, staged and exact (default), or CBC through "
            "CVXPY as the reference states and solves it, for job-by-job comparison with it "
            "(needs the optional cvxpy and cylp; much slower)",
            choices=("highs", "cbc"),
        ),
    )

    def __init__(self, seed: int = 0, **values):
        super().__init__(seed, **values)
        from goodput_sim.errors import InputError
        from goodput_sim.policies.sia_cbc import cbc_available

        if self.values["p"] == 0:
            raise InputError("--param", "sia needs a fairness power p other than 0")
        if self.values["solver"] == "cbc" and not cbc_available():
            raise InputError(
                "--param", "sia solver=cbc needs CVXPY with CBC: pip install 'goodput-sim[cbc]'"
            )
        from goodput_sim.kernel_cache import warm

        warm(load=False)  # the fits' kernels: compiled once, with a note on stderr, if not yet
        self._previous: dict[str, Config] = {}
        # Memoised per policy (one per simulation) by everything the values are computed from:
        # jobs whose beliefs are equal (one application, the same fits and statistics) and a
        # type's values projected onto another's shapes share them.
        self._goodputs_at = functools.lru_cache(maxsize=16384)(self._best_goodputs_at)
        # Candidate grids by belief without statistics and shapes: a job's statistics change
        # every epoch, its fit only at a new configuration.
        self._grids = functools.lru_cache(maxsize=GRID_MEMO)(frozen_grid)
        # The configurations and each type's nodes of a live cluster, which stays the same
        # object from round to round while no node fails (its own memos then last too).
        self._configurations = functools.lru_cache(maxsize=64)(configurations)
        self._type_nodes = functools.lru_cache(maxsize=64)(type_nodes)
        self._tie_rng = np.random.default_rng(self.values["tie_seed"])

    @property
    def belief_fit(self) -> str:
        return self.values["fit"]

    @property
    def free_same_shape_moves(self) -> bool:
        return self.values["same_shape_moves"] == "free"

    def allocate(self, snapshot: Snapshot) -> Decision:
        program = self.program(snapshot)
        if program is None:
            return Decision({})
        chosen = self.solve(program)
        self._previous = dict(chosen)
        return Decision(place(program.jobs, chosen, snapshot.cluster, self.free_same_shape_moves))

    def program(self, snapshot: Snapshot) -> SiaProgram | None:
        """This round's integer program (None when there is nothing to decide). Forgets the
        previous configurations of jobs that left."""
        jobs = list(snapshot.jobs)
        configs = list(self._configurations(snapshot.cluster, self.values["max_nodes"]))
        rigid = sorted({j.limits.min_replicas for j in jobs if j.limits.min_replicas})
        configs += rigid_configurations(snapshot.cluster, rigid, configs)
        if not jobs or not configs:
            return None
        self._previous = {j.name: self._previous[j.name] for j in jobs if j.name in self._previous}
        index = {c: k for k, c in enumerate(configs)}
        shapes = _shapes(configs)
        on_type = {t: self._type_nodes(snapshot.cluster, t) for t in snapshot.cluster.type_order}
        sizes = np.array([c.gpus for c in configs])
        allowed = np.vstack([self._allowed(job, sizes, snapshot.cluster) for job in jobs])
        goodput = np.vstack(
            [
                self._row(job, shapes, len(configs), snapshot.cluster, on_type, mask)
                for job, mask in zip(jobs, allowed, strict=True)
            ]
        )
        values = self._values(jobs, configs, goodput.copy(), index)
        pinned = {
            i: index[self._previous[job.name]]
            for i, job in enumerate(jobs)
            if job.restarting and self._previous.get(job.name) in index and job.replicas
        }
        for i, c in pinned.items():
            allowed[i, c] = True
        return SiaProgram(snapshot, jobs, configs, goodput, values, allowed, pinned)

    def solve(self, program: SiaProgram) -> dict[str, Config]:
        """The configuration the integer program gives each job that gets GPUs."""
        cluster = program.snapshot.cluster
        type_names = cluster.type_order
        configs = program.configs
        type_of = np.array([type_names.index(c.gpu_type) for c in configs])
        gpus = np.array([c.gpus for c in configs])
        capacity = cluster.type_capacity()
        minimise = self.values["p"] < 0
        values = tie_order(program, self._previous, self.values["ties"], self._tie_rng, minimise)
        args = (values, type_of, gpus, capacity, self.values["lambda_n"], minimise)
        gap = self.values["mip_rel_gap"]
        if self.values["solver"] == "cbc":
            from goodput_sim.policies.sia_cbc import solve_with_cbc

            choice = solve_with_cbc(*args, pinned=program.pinned, mip_rel_gap=gap)
            return {
                job.name: configs[c]
                for job, c in zip(program.jobs, choice, strict=True)
                if c is not None
            }
        from goodput_sim.policies.sia_milp import solve_sia_milp  # loads HiGHS (slow)

        allowed = program.allowed
        try:
            result = solve_sia_milp(*args, pinned=program.pinned, allowed=allowed, mip_rel_gap=gap)
        except ValueError:  # a pinned configuration no longer fits (a node failed): unpin
            result = solve_sia_milp(*args, allowed=allowed, mip_rel_gap=gap)
        return {
            job.name: configs[c]
            for job, c in zip(program.jobs, result.choice, strict=True)
            if c is not None
        }

    # ----------------------------------------------------------------------------- values
    def _row(
        self,
        job: JobView,
        shapes: dict,
        size: int,
        cluster: ClusterSpec,
        on_type: dict[str, ClusterSpec],
        allowed: NDArray[np.bool_],
    ) -> NDArray:
        """Goodput of ``job`` on every configuration it may take (``allowed``), normalised by
        the smallest (EPSILON elsewhere and where unknown; a new job values 1 GPU of any type
        at 1). ``shapes``: each type's configuration indices, nodes and GPUs; ``on_type``: each
        type's nodes up (:func:`type_nodes`)."""
        beliefs = _beliefs(job, cluster)
        known = [t for t in cluster.type_order if _model(beliefs.get(t)) is not None]
        row = np.full(size, EPSILON)
        if not known:
            first = job.limits.min_replicas or 1  # a rigid job runs on its own count only
            for mine, _, gpus in shapes.values():
                row[mine[gpus == first]] = 1.0
            return row
        source = known[0]
        peak = self.values["speed_ratio"] == "peak"
        speeds = (job.type_peak_speeds if peak else job.type_speeds) or {}
        cap = job.requested_batch if self.values["price_batch"] == "requested" else None
        for gpu_type, (mine, nodes, gpus) in shapes.items():
            if gpu_type in known:
                row[mine] = self._goodputs(beliefs[gpu_type], nodes, gpus, cap)
            else:  # projected from the source type (Sia's bootstrap rule)
                nodes = on_type[source].packed_node_counts(gpus)
                ratio = speeds.get(gpu_type, 1.0) / speeds.get(source, 1.0)
                found = self._goodputs(beliefs[source], nodes, gpus, cap)
                row[mine] = found * ratio
        row[~allowed] = EPSILON  # only the configurations it may take set the scale (SPEC 4.3)
        smallest = row[row > EPSILON].min() if (row > EPSILON).any() else 1.0
        return np.maximum(row / smallest, EPSILON)

    def _goodputs(self, belief, nodes: NDArray, gpus: NDArray, cap: int | None) -> NDArray:
        """The belief's best goodputs at these shapes, over batches up to ``cap`` (None: the
        application's largest), memoised by the belief's goodput model, the cap and the shapes
        (every value they are computed from)."""
        model = belief.goodput_model
        return self._goodputs_at(model, cap, tuple(nodes.tolist()), tuple(gpus.tolist()))

    def _best_goodputs_at(
        self, model, cap: int | None, nodes: tuple[int, ...], gpus: tuple[int, ...]
    ) -> NDArray:
        """``model``'s best goodput at each (nodes, GPUs) shape (read-only) over batches up to
        ``cap``, at the pricing precision, as ``model.optimize`` finds it, on a shared grid."""
        single = self.values["pricing_precision"] == "single"
        if cap is not None or single:
            cap = model.max_batch_size if cap is None else cap
            model = dataclasses.replace(model, max_batch_size=cap, single_precision=single)
        grid = self._grids(without_statistics(model), nodes, gpus)
        values = np.array(model.choose(grid, True).goodput, dtype=float)
        values.flags.writeable = False
        return values

    def _allowed(self, job: JobView, sizes: NDArray, cluster: ClusterSpec) -> NDArray[np.bool_]:
        """Which configurations (``sizes``: their GPU counts) are within the job's GPU cap: at
        most twice the most GPUs it has run on, on any type (Sia's shared cap), and within its
        application's own limit (its category's too: a rigid job takes exactly its GPUs, on
        any type)."""
        if job.limits.min_replicas is not None:
            return sizes == job.limits.min_replicas
        beliefs = _beliefs(job, cluster).values()
        profiled = max(b.profiled_replicas for b in beliefs)
        cap = job.limits.cap(max(2 * profiled, 1))
        return sizes <= cap

    def _values(self, jobs, configs, goodput: NDArray, index: dict) -> NDArray:
        """Restart factors, the fairness power and the clip: the program's A matrix."""
        if self.values["restart_penalty"]:
            for i, job in enumerate(jobs):
                previous = self._previous.get(job.name)
                if previous is None or not job.replicas:
                    continue
                delay = (
                    reference_restart_penalty(job.name)
                    if self.values["restart_penalties"] == "reference"
                    else job.restart_delay
                )
                factor = restart_factor(
                    job.age, job.num_restarts, delay, grace=True, loss=job.move_loss
                )
                keep = goodput[i, index[previous]] if previous in index else None
                goodput[i] *= factor
                if keep is not None:
                    goodput[i, index[previous]] = keep
        goodput = np.maximum(goodput, EPSILON)
        values = goodput ** self.values["p"]
        if self.values["round_values"]:
            values = np.round(values, 2)
        return np.minimum(values, CLIP)


TIE_STEP = 1e-7  # far below the 0.01 the values are rounded to, far above HiGHS's tolerances


def tie_order(
    program: SiaProgram,
    previous: dict[str, Config],
    ties: str,
    rng: np.random.Generator,
    minimise: bool = True,
) -> NDArray:
    """The program's values with ties among equally good allocations broken in a given order
    (``ties``): ``"solver"`` leaves them to the solver; ``"reference"`` makes each job's
    previous configuration, then later configurations (later GPU types in cluster order, more
    GPUs within a type), slightly better; ``"random"`` adds a tiny random amount to every value.
    The changes are at most ``20 * TIE_STEP`` per job, so no difference between rounded values
    (0.01) is overturned unless thousands of jobs tie at once."""
    values = program.values
    if ties == "solver":
        return values
    better = -1.0 if minimise else 1.0
    if ties == "random":
        return values + TIE_STEP * rng.random(values.shape)
    jobs, configs = values.shape
    rank = np.arange(configs) / max(configs, 1)  # later configurations favoured
    bonus = np.tile(rank, (jobs, 1))
    index = {c: k for k, c in enumerate(program.configs)}
    for i, job in enumerate(program.jobs):
        k = index.get(previous.get(job.name))
        if k is not None:
            bonus[i, k] = 2.0 + configs
    return values + better * TIE_STEP * bonus


REFERENCE_RESTART_PENALTIES = (  # Sia SPEC 4.4: seconds, by a substring of the job's name
    ("deepspeech", 25.0),
    ("imagenet", 250.0),
    ("cifar", 30.0),
    ("bert", 120.0),
    ("yolov3", 45.0),
)


def reference_restart_penalty(name: str) -> float:
    """The restart delay the Sia reference's policy assumes for a job, from its name (30 s
    for names it does not know); it differs from the true delay for cifar10, yolov3 and ncf."""
    return next((s for key, s in REFERENCE_RESTART_PENALTIES if key in name), 30.0)


def _shapes(configs: list[Config]) -> dict[str, tuple[NDArray, NDArray, NDArray]]:
    """Per GPU type: its configurations' indices, node counts and GPU counts, as arrays."""
    rows: dict[str, list[tuple[int, int, int]]] = {}
    for k, config in enumerate(configs):
        rows.setdefault(config.gpu_type, []).append((k, config.nodes, config.gpus))
    return {t: tuple(np.array(c) for c in zip(*r, strict=True)) for t, r in rows.items()}


def _beliefs(job: JobView, cluster: ClusterSpec) -> dict:
    """The job's beliefs by GPU type (its one belief on profiles of a single type)."""
    return dict(job.type_beliefs) if job.type_beliefs else {cluster.type_order[0]: job.belief}


def _model(belief):
    return None if belief is None else belief.goodput_model


def place(
    jobs: list[JobView], chosen: dict[str, Config], cluster: ClusterSpec, repack: bool = False
) -> dict[str, NDArray[np.int64]]:
    """Rows for the chosen configurations: unchanged ones keep their nodes, then largest first,
    multi-node jobs on whole free nodes and the others on the fullest node they fit (a job that
    cannot be placed waits a round). With ``repack``, a GPU type on which some chosen job could
    not be placed (its free GPUs split across nodes) is placed again from scratch, largest
    first, as the reference places every type every round (SPEC 4.9): jobs may move to other
    nodes there, which costs nothing when the engine lets same-shape moves go free."""
    rows = _place(jobs, chosen, cluster, keep=True)
    if repack:
        order = cluster.type_order
        stuck = {chosen[j.name].gpu_type for j in jobs if j.name in chosen and j.name not in rows}
        for gpu_type in stuck:
            on_type = {n: c for n, c in chosen.items() if c.gpu_type == gpu_type}
            fresh = _place(jobs, on_type, cluster, keep=False)
            if len(fresh) > sum(1 for n in on_type if n in rows):
                mine = cluster.node_type_index == order.index(gpu_type)
                rows = {n: r for n, r in rows.items() if not (r[mine].any())}
                rows.update(fresh)
    return rows


def _place(
    jobs: list[JobView], chosen: dict[str, Config], cluster: ClusterSpec, keep: bool
) -> dict[str, NDArray[np.int64]]:
    """:func:`place`'s one pass (``keep``: unchanged jobs keep their nodes first)."""
    free = cluster.capacity.copy()
    types = cluster.node_type_index
    order = cluster.type_order
    rows: dict[str, NDArray[np.int64]] = {}
    for job in jobs if keep else ():
        config = chosen.get(job.name)
        if config is not None and _holds(job, config, cluster) and (free >= job.allocation).all():
            rows[job.name] = job.allocation.copy()
            free -= job.allocation
    waiting = [j for j in jobs if j.name in chosen and j.name not in rows]
    waiting.sort(key=lambda j: -chosen[j.name].gpus)
    full = np.maximum(cluster.capacity, 1)
    for job in waiting:
        config = chosen[job.name]
        mine = types == order.index(config.gpu_type)
        row = np.zeros_like(free)
        if job.limits.min_replicas is not None and config.nodes > 1:
            row = _rigid_row(config.gpus, free, mine & (cluster.capacity > 0), cluster.capacity)
            if row is None:
                continue
        elif config.nodes > 1:  # whole free nodes, the largest first, holding exactly its GPUs
            empty = np.flatnonzero(mine & (free == cluster.capacity) & (free > 0))
            empty = empty[np.argsort(-free[empty], kind="stable")][: config.nodes]
            if len(empty) < config.nodes or free[empty].sum() != config.gpus:
                continue
            row[empty] = free[empty]
        else:
            fits = np.flatnonzero(mine & (free >= config.gpus))
            if not len(fits):
                continue
            node = fits[np.argmin(free[fits] / full[fits])]  # the fullest node it fits on
            row[node] = config.gpus
        rows[job.name] = row
        free -= row
    return rows


def _rigid_row(
    gpus: int, free: NDArray[np.int64], mine: NDArray[np.bool_], capacity: NDArray[np.int64]
) -> NDArray[np.int64] | None:
    """A rigid job's ``gpus`` on one type (``mine``), as the reference places them (SPEC 4.9):
    whole free nodes, the largest first, while they fit, then the rest on the fullest node
    that holds it, else across the most-free nodes; None if the type's free GPUs fall short."""
    row = np.zeros_like(free)
    need = gpus
    empty = np.flatnonzero(mine & (free == capacity))
    for node in empty[np.argsort(-free[empty], kind="stable")]:
        if 0 < free[node] <= need:
            row[node], need = free[node], need - free[node]
    if need:
        left = np.where(mine & (row == 0), free, 0)
        fits = np.flatnonzero(left >= need)
        if len(fits):
            row[fits[np.argmin(left[fits])]] = need
        else:
            if left.sum() < need:
                return None
            for node in np.argsort(-left, kind="stable"):
                take = min(int(left[node]), need)
                row[node], need = take, need - take
                if not need:
                    break
    return row


def _holds(job: JobView, config: Config, cluster: ClusterSpec) -> bool:
    """Whether the job's allocation is ``config`` already: its shape, or for a rigid job its
    GPUs on the configuration's type (however its nodes split them)."""
    shape = _shape(job, cluster)
    if shape is None or job.limits.min_replicas is None:
        return shape == config
    return (shape.gpu_type, shape.gpus) == (config.gpu_type, config.gpus)


def _shape(job: JobView, cluster: ClusterSpec) -> Config | None:
    """The configuration the job's current allocation has, if any."""
    used = np.flatnonzero(job.allocation)
    if not len(used):
        return None
    gpu_type = cluster.gpu_types[int(used[0])]
    return Config(gpu_type, len(used), int(job.allocation.sum()))
