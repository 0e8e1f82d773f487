"""Numbers from results: JCT statistics, makespan, utilisation, and the paper's claim check."""

from __future__ import annotations

import numpy as np
import pandas as pd

PAPER_CLAIM = (0.37, 0.50)  # Pollux (OSDI'21): 37-50% lower average JCT than its baselines
REFERENCE_POLICY = "goodput"


def summarize(jobs: pd.DataFrame, total_gpus: int) -> dict[str, float | int]:
    """JCT statistics over finished jobs, makespan, GPU utilisation and unfinished count."""
    done = jobs[jobs["finished"]]
    jct = done["jct"].to_numpy(dtype=float)
    end = float(done["finish"].max()) if len(done) else float("nan")
    start = float(jobs["arrival"].min())
    makespan = end - start
    busy = float(jobs["gpu_seconds"].sum())
    return {
        "jobs": int(len(jobs)),
        "finished": int(len(done)),
        "unfinished": int(len(jobs) - len(done)),
        "avg_jct": float(np.mean(jct)) if jct.size else float("nan"),
        "median_jct": float(np.median(jct)) if jct.size else float("nan"),
        "p95_jct": float(np.percentile(jct, 95)) if jct.size else float("nan"),
        "p99_jct": float(np.percentile(jct, 99)) if jct.size else float("nan"),
        "makespan": makespan,
        "gpu_utilization": busy / (total_gpus * makespan) if makespan > 0 else float("nan"),
        "avg_queueing": float(jobs["queueing"].dropna().mean())
        if jobs["queueing"].notna().any()
        else float("nan"),
        "avg_restarts": float(jobs["restarts"].mean()),
        "examples_per_gpu_second": float(jobs["examples"].sum()) / busy
        if busy > 0
        else float("nan"),
    }


def claim_check(summaries: dict[str, dict], reference: str = REFERENCE_POLICY) -> dict:
    """Average-JCT reduction of ``reference`` against each other policy, beside the paper's."""
    if reference not in summaries:
        return {"reference": reference, "available": False}
    ours = summaries[reference]["avg_jct"]
    versus = {}
    for name, summary in summaries.items():
        if name == reference:
            continue
        reduction = 1.0 - ours / summary["avg_jct"]
        versus[name] = {
            "reduction": reduction,
            "within_paper_range": PAPER_CLAIM[0] <= reduction <= PAPER_CLAIM[1],
            "at_least_paper_low": reduction >= PAPER_CLAIM[0],
        }
    return {
        "reference": reference,
        "available": True,
        "paper_range": list(PAPER_CLAIM),
        "versus": versus,
    }
