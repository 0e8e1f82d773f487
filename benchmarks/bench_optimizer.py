"""Goodput optimiser vs a reference-sized genetic search (population 100, 100 generations) on
the same recorded scheduling rounds: objective ratio per round, and time per round.

    python benchmarks/bench_optimizer.py [--rounds 40] [--workload PATH]
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

import numpy as np
from common import machine, save

from goodput_sim.api import bundled_workload
from goodput_sim.inputs.workload import load_workload
from goodput_sim.policies.genetic import solve_genetic
from goodput_sim.policies.greedy import solve_greedy
from goodput_sim.policies.recording import RecordingGoodput, sample_rounds
from goodput_sim.profiles import load_profiles
from goodput_sim.sim.engine import Simulation


def record_problems(workload: Path, profiles=None) -> list:
    policy = RecordingGoodput()
    frame = load_workload(workload)
    Simulation(frame, load_profiles(profiles), policy).run()
    return policy.problems


def compare_on(problems: list, seed: int = 0) -> dict:
    ratios, greedy_times, ga_times = [], [], []
    for index, (problem, total) in enumerate(problems):
        t = time.perf_counter()
        greedy = solve_greedy(problem, total)
        greedy_times.append(time.perf_counter() - t)
        t = time.perf_counter()
        genetic = solve_genetic(problem, seed=seed + index)
        ga_times.append(time.perf_counter() - t)
        ours, theirs = problem.objective(np.array([greedy, genetic]))
        ratios.append(ours / theirs if theirs > 0 else 1.0)
    ratios = np.array(ratios)
    return {
        "rounds": len(problems),
        "objective_ratio_min": float(ratios.min()),
        "objective_ratio_mean": float(ratios.mean()),
        "rounds_greedy_worse": int((ratios < 1 - 1e-9).sum()),
        "greedy_ms_per_round": 1e3 * float(np.mean(greedy_times)),
        "genetic_ms_per_round": 1e3 * float(np.mean(ga_times)),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--workload", type=Path, default=bundled_workload())
    parser.add_argument("--profiles", type=Path, default=None)
    parser.add_argument("--rounds", type=int, default=40, help="rounds sampled evenly from the run")
    args = parser.parse_args()
    report = compare_on(sample_rounds(record_problems(args.workload, args.profiles), args.rounds))
    m = machine()
    report.update(workload=args.workload.name, cpus=m["cpus"], machine=m["platform"])
    print(json.dumps(report, indent=2))
    save("optimizer", report)


if __name__ == "__main__":
    main()
