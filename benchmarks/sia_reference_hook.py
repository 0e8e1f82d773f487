"""Record the Sia reference simulator's round programs, for ``trace_sia.py programs``.

Run it with the reference's own Python (its requirements: numpy < 2, pandas < 2, cvxpy with
CBC), from anywhere:

    python benchmarks/sia_reference_hook.py --simulator ARTIFACTS/sia-simulator \\
        --workloads DIR_WITH_ONE_WORKLOAD_CSV --rounds 60 --out reference-programs.json

It runs the simulator as the artifact runs Sia (p = -0.5, lambda_n = 1.1, 60-s rounds,
projected throughputs, shared replica caps) with three observers attached, and stops after
``--rounds`` solved rounds. For every round it writes the jobs in the program's order, the
program's values A (jobs x configurations, after rounding) with the configurations as
``type:nodes:gpus``, and for every job and GPU type the fitted throughput parameters and the
gradient statistics the policy read. Nothing of the simulator is changed or copied.
"""

from __future__ import annotations

import argparse
import json
import os
import runpy
import sys
import tempfile
import types


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--simulator", required=True, help="the artifact's sia-simulator folder")
    parser.add_argument("--workloads", required=True, help="a folder holding one workload CSV")
    parser.add_argument("--rounds", type=int, default=60)
    parser.add_argument("--out", required=True)
    args = parser.parse_args()
    out = os.path.abspath(args.out)
    workloads = os.path.abspath(args.workloads)
    sys.path.insert(0, os.path.abspath(args.simulator))
    os.chdir(args.simulator)

    import numpy as np
    import sia

    rounds: list[dict] = []
    beliefs: list[dict] = []
    rounded = types.ModuleType("numpy_observed")  # numpy, with np.round(x, 2) observed
    rounded.__dict__.update(np.__dict__)

    def observed_round(a, decimals=0, out=None):
        result = np.round(a, decimals=decimals, out=out)
        if decimals == 2 and rounds:
            rounds[-1]["values"] = np.asarray(result, dtype=float).tolist()
        return result

    rounded.round = observed_round
    sia.np = rounded

    def params_of(function):
        if function is None:
            return None
        goodput = function._goodput_fn
        return [list(map(float, goodput._perf_params)), list(map(float, goodput._grad_params))]

    optimize_mip = sia.SiaPolicy.optimize_mip

    def observed_optimize(self, jobs, nodes, prev_allocations):
        beliefs.append(
            {
                name: {t: params_of(f) for t, f in job.speedup_fn.items()}
                for name, job in jobs.items()
                if isinstance(job.speedup_fn, dict)
            }
        )
        return optimize_mip(self, jobs, nodes, prev_allocations)

    sia.SiaPolicy.optimize_mip = observed_optimize
    solve = sia.SiaPolicy._SiaPolicy__solve_mip_rescaled

    def observed_solve(self, optim_params, free_gpus, job_weights, non_preemptible):
        table = self.idx_to_config_map
        configs = [":".join(map(str, table[k])) for k in sorted(table)]
        rounds.append({"jobs": list(optim_params["adaptive"][0]), "configs": configs})
        answer = solve(self, optim_params, free_gpus, job_weights, non_preemptible)
        rounds[-1]["beliefs"] = beliefs[-1]
        if len(rounds) >= args.rounds:
            with open(out, "w") as handle:
                json.dump(rounds, handle)
            os._exit(0)
        return answer

    sia.SiaPolicy._SiaPolicy__solve_mip_rescaled = observed_solve
    sys.argv = [
        "multi_simulator.py",
        workloads,
        "--policy=sia",
        "--policy_p_val=-0.5",
        "--mip_lambda_a=0.01",
        "--mip_lambda_n=1.1",
        "--interval=60",
        "--project_throughputs",
        "--share_max_replicas",
        f"--output={tempfile.mkdtemp(prefix='sia-reference-')}",
    ]
    runpy.run_path("multi_simulator.py", run_name="__main__")
    with open(out, "w") as handle:  # the workload ended first
        json.dump(rounds, handle)


if __name__ == "__main__":
    main()
