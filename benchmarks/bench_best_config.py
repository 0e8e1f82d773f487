"""Benchmark: best batch configuration (SPEC 4.2) for 10,000 allocations in one call.

The Pollux policy evaluates every job's speedup over thousands of candidate (nodes, GPUs) pairs
per scheduling round, so ``GoodputModel.optimize`` must answer a 10,000-pair batch in at most
50 ms. The belief is realistic: a throughput model fitted to a few cifar10 observations (taken
from the bundled parametric profile, as a running job would see them) and its gradient
statistics in mid-training.

Two cases, each the median of 20 timed calls after warm-up:
* ``random``: 10,000 random pairs (nodes 1-256, GPUs nodes..4*nodes, seeded), with repeats;
* ``distinct``: 10,000 all-distinct pairs, the worst case (nothing to deduplicate).

Run: ``python benchmarks/bench_best_config.py`` (writes benchmarks/results/best_config.json).
"""

from __future__ import annotations

import statistics
import sys
import time
from pathlib import Path

import numpy as np
from common import RESULTS, machine, save

from goodput_sim.models.goodput import GoodputModel
from goodput_sim.models.throughput import ThroughputModel
from goodput_sim.profiles import load_profiles

PAIRS = 10_000
MAX_NODES = 256
REPEATS = 20
WARMUP = 3
BAR_MS = 50.0
SEED = 2021
ROOT = Path(__file__).resolve().parents[1]

# (placement, per-GPU batch) a cifar10 job would have profiled after a few reallocations.
OBSERVATIONS = [((1,), 128), ((2,), 64), ((4,), 64), ((2, 2), 64), ((4, 4), 32), ((4, 4, 4, 4), 32)]


def belief() -> GoodputModel:
    """A GoodputModel fitted like a running cifar10 job's."""
    profile = load_profiles()["cifar10"]
    nodes, replicas, bsz, accum, step = [], [], [], [], []
    for placement, b in OBSERVATIONS:
        t_step, t_sync = profile.step_sync(placement, b)
        nodes.append(len(placement))
        replicas.append(sum(placement))
        bsz.append(b)
        accum.append(float(t_step - t_sync))
        step.append(float(t_step))
    params = ThroughputModel().fit(nodes, replicas, bsz, accum, step).params_
    lim = profile.limits
    sqr, var = profile.grad_stats(4 * lim.init_batch_size, lim.max_epochs // 3)
    return GoodputModel(
        params,
        lim.init_batch_size,
        lim.max_batch_size,
        lim.min_local_bsz,
        lim.max_local_bsz,
        float(sqr),
        float(var),
    )


def random_pairs(rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
    nodes = rng.integers(1, MAX_NODES + 1, PAIRS)
    gpus = rng.integers(nodes, 4 * nodes + 1)
    return nodes, gpus


def distinct_pairs(rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
    every = np.array([(n, g) for n in range(1, MAX_NODES + 1) for g in range(n, 4 * n + 1)])
    chosen = every[rng.choice(len(every), PAIRS, replace=False)]
    return chosen[:, 0], chosen[:, 1]


def time_ms(model: GoodputModel, nodes: np.ndarray, gpus: np.ndarray) -> dict[str, float]:
    for _ in range(WARMUP):
        model.optimize(nodes, gpus)
    samples = []
    for _ in range(REPEATS):
        start = time.perf_counter()
        model.optimize(nodes, gpus)
        samples.append((time.perf_counter() - start) * 1e3)
    return {
        "median_ms": statistics.median(samples),
        "min_ms": min(samples),
        "max_ms": max(samples),
        "distinct_pairs": int(len(np.unique(np.stack([nodes, gpus], axis=1), axis=0))),
    }


def main() -> int:
    rng = np.random.default_rng(SEED)
    model = belief()
    cases = {
        "random": time_ms(model, *random_pairs(rng)),
        "distinct": time_ms(model, *distinct_pairs(rng)),
    }
    worst = max(case["median_ms"] for case in cases.values())
    m = machine()
    result = {
        "benchmark": "GoodputModel.optimize over 10,000 (nodes, GPUs) pairs",
        "pairs": PAIRS,
        "repeats": REPEATS,
        "bar_ms": BAR_MS,
        "meets_bar": worst <= BAR_MS,
        "cases": cases,
        "belief": model.params.as_dict(),
        "machine": {
            "cpu_count": m["cpus"],
            "platform": m["platform"],
            "python": m["python"],
            "numpy": m["numpy"],
        },
    }
    print(f"machine: {m['cpus']} CPUs, {m['platform']}, Python {m['python']}")
    for name, case in cases.items():
        print(
            f"{name:>8}: median {case['median_ms']:.1f} ms (min {case['min_ms']:.1f}, "
            f"max {case['max_ms']:.1f}) for {PAIRS} pairs, {case['distinct_pairs']} distinct"
        )
    print(f"     bar: <= {BAR_MS:.0f} ms -> {'PASS' if result['meets_bar'] else 'FAIL'}")
    save("best_config", result)
    print(f"wrote {(RESULTS / 'best_config.json').resolve().relative_to(ROOT)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
