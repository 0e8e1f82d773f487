"""A seeded, numpy-vectorised genetic search over allocation matrices, with the reference
Pollux operators (SPEC 6.4-6.5): row crossover, reset/thin/grow mutation and repair.

It serves as the yardstick for the greedy optimiser (population 100, 100 generations, as the
reference) and as the ``goodput-ga`` policy. Deviations: one objective (the harmonic mean; the
reference's second objective only diversified NSGA-II), elitist truncation survival, and repair
zeroes only the surplus *distributed* jobs on a node.
"""

from __future__ import annotations

import numpy as np
from numpy.typing import NDArray

from goodput_sim.errors import InputError
from goodput_sim.inputs.cluster import ClusterSpec, distributed_cells
from goodput_sim.params import Param
from goodput_sim.policies.base import Decision, Snapshot, register
from goodput_sim.policies.elastic import ELASTIC_PARAMS, Goodput
from goodput_sim.policies.greedy import solve_greedy
from goodput_sim.policies.problem import AllocationProblem

POPULATION = 100
GENERATIONS = 100
MAX_EVALUATIONS = 200_000  # individuals evaluated per round, at most: 20x the default


def repair(pop: NDArray[np.int64], problem: AllocationProblem, rng: np.random.Generator) -> NDArray:
    """Interference avoidance, per-job caps (random node order), node capacity (job order)."""
    if problem.interference_avoidance:
        distributed = distributed_cells(pop)
        pop = np.where(distributed & (np.cumsum(distributed, axis=1) > 1), 0, pop)
    order = np.argsort(rng.random(pop.shape), axis=2)
    permuted = np.take_along_axis(pop, order, axis=2)
    before = np.cumsum(permuted, axis=2) - permuted
    permuted = np.clip(problem.caps[None, :, None] - before, 0, permuted)
    pop = np.empty_like(pop)
    np.put_along_axis(pop, order, permuted, axis=2)
    before = np.cumsum(pop, axis=1) - pop
    return np.clip(problem.capacity - before, 0, pop)


def mutate(pop: NDArray[np.int64], problem: AllocationProblem, rng: np.random.Generator) -> NDArray:
    """Reset rows to the current allocation, thin rows, then grow into free GPUs."""
    p, j, n = pop.shape
    g = problem.capacity
    reset = rng.random((p, j)) < 0.1
    pop = np.where(reset[:, :, None], problem.current[None], pop)
    thin = (rng.random((p, j)) < 0.1)[:, :, None] & (rng.random(pop.shape) < 0.1)
    pop = np.where(thin, 0, pop)
    free = g - pop.sum(axis=1, keepdims=True)
    fit = np.broadcast_to(free >= 1, pop.shape)
    p1 = fit / np.maximum(fit.sum(axis=2, keepdims=True), 1)
    own = (pop > 0) & fit
    p2 = own / np.maximum(own.sum(axis=2, keepdims=True), 1)
    grow = rng.random(pop.shape) < p1 + p2 - p1 * p2
    grown = pop + np.floor(rng.random(pop.shape) * (g - pop + 1)).astype(pop.dtype)
    return np.where(grow, grown, pop)


def crossover(a: NDArray, b: NDArray, rng: np.random.Generator) -> tuple[NDArray, NDArray]:
    """One-point crossover over whole job rows, applied with probability 0.9 per pair."""
    pairs, jobs = a.shape[0], a.shape[1]
    cut = rng.integers(0, max(jobs, 1), pairs)
    swap = (np.arange(jobs)[None, :] < cut[:, None]) & (rng.random(pairs) < 0.9)[:, None]
    swap = swap[:, :, None]
    return np.where(swap, b, a), np.where(swap, a, b)


def comparable(fitness: NDArray[np.float64], digits: int = 11) -> NDArray[np.float64]:
    """``fitness`` rounded to ``digits`` significant digits of its largest magnitude, so that
    selection does not hang on last-bit differences: numpy's sums and exp/log take different
    SIMD paths on different CPUs (AVX2 or AVX-512), and allocations of equal value would
    otherwise rank by that noise, making a seeded search machine-dependent."""
    scale = float(np.max(np.abs(fitness), initial=0.0))
    if not (np.isfinite(scale) and scale > 0):
        return fitness
    quantum = 10.0 ** (np.floor(np.log10(scale)) + 1 - digits)
    return np.round(fitness / quantum) * quantum


def solve_genetic(
    problem: AllocationProblem,
    seed: int | np.random.SeedSequence = 0,
    population: int = POPULATION,
    generations: int = GENERATIONS,
    starts: NDArray[np.int64] | None = None,
) -> NDArray[np.int64]:
    """Best allocation found by the genetic search, from the current allocation (and the
    feasible ``starts``, if given); deterministic for a given seed."""
    rng = np.random.default_rng(seed)
    if problem.num_jobs == 0:
        return problem.current.copy()
    pop = repair(problem.current[None].astype(np.int64), problem, rng)
    if starts is not None:
        pop = np.concatenate([pop, starts])
    fitness = comparable(problem.objective(pop))
    half = population // 2
    for _ in range(generations - 1):
        pick = rng.integers(0, len(pop), (2, 2, half))
        winners = np.where(fitness[pick[:, 0]] >= fitness[pick[:, 1]], pick[:, 0], pick[:, 1])
        kids = np.concatenate(crossover(pop[winners[0]], pop[winners[1]], rng))
        kids = repair(mutate(kids, problem, rng), problem, rng)
        merged = np.unique(np.concatenate([pop, kids]), axis=0)
        merged_fitness = comparable(problem.objective(merged))
        keep = np.argsort(-merged_fitness, kind="stable")[:population]
        pop, fitness = merged[keep], merged_fitness[keep]
    return pop[int(np.argmax(fitness))]


@register("pollux-ga")
class GoodputGenetic(Goodput):
    """Goodput policy searched by the seeded genetic algorithm (reference-sized by default)."""

    name = "goodput-ga"
    params = (
        *ELASTIC_PARAMS,
        Param("population", int, POPULATION, "individuals per generation", low=2, high=10_000),
        Param("generations", int, GENERATIONS, "generations per round", low=1, high=10_000),
    )

    def __init__(self, seed: int = 0, **values):
        super().__init__(seed, **values)
        self.population, self.generations = self.values["population"], self.values["generations"]
        if self.population * self.generations > MAX_EVALUATIONS:
            raise InputError(
                "--param",
                f"population x generations = {self.population * self.generations} evaluations "
                f"per round exceeds the budget of {MAX_EVALUATIONS} (the default is "
                f"{POPULATION * GENERATIONS})",
            )
        self._round = 0

    def allocate(self, snapshot: Snapshot) -> Decision:
        return self.decide(snapshot, self._search)

    def _search(self, problem: AllocationProblem, cluster: ClusterSpec) -> NDArray[np.int64]:
        """One round's genetic search, seeded by the policy's seed and the round."""
        self._round += 1
        # Random growth seldom hits a rigid job's exact GPU count, so with rigid jobs the
        # search also starts from the greedy optimiser's answer, which honours them.
        starts = None
        if problem.floors is not None:
            starts = solve_greedy(problem, cluster.total_gpus)[None]
        return solve_genetic(
            problem,
            seed=np.random.SeedSequence([self.seed, self._round]),
            population=self.population,
            generations=self.generations,
            starts=starts,
        )

    def describe(self) -> dict:
        return {**super().describe(), "optimizer": "genetic"}
