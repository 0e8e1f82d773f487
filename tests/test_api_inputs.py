"""The Python API refuses what the CLI refuses, by the same checks, in one ``InputError`` that
names the argument (``workload``, ``seed``, ``seeds``), before anything runs: a workload given as
a DataFrame passes the checks of a workload CSV (``check_workload``), and a seed is an integer
in [0, 2**32 - 1] wherever one is taken."""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import pandas as pd
import pytest

from goodput_sim import api
from goodput_sim.errors import InputError
from goodput_sim.experiments.sweep import sweep
from goodput_sim.inputs.workload import WORKLOAD_COLUMNS

JOBS = pd.DataFrame(
    {
        "name": ["ncf-0", "cifar10-1", "bert-2"],
        "time": [0.0, 30.0, 90.0],
        "application": ["ncf", "cifar10", "bert"],
        "num_replicas": [1, 4, 2],
        "batch_size": [32768, 2048, 384],
    }
)


def _cell(column: str, value: object, row: int = 1) -> Callable[[], pd.DataFrame]:
    def make() -> pd.DataFrame:
        frame = JOBS.copy().astype({column: object})
        frame.loc[row, column] = value
        return frame

    return make


def _frame(change: Callable[[pd.DataFrame], pd.DataFrame]) -> Callable[[], pd.DataFrame]:
    return lambda: change(JOBS.copy())


BAD_WORKLOADS = {
    "NaN arrival": _cell("time", np.nan),
    "inf arrival": _cell("time", np.inf),
    "-inf arrival": _cell("time", -np.inf),
    "negative arrival": _cell("time", -1.0),
    "arrival after ten years": _cell("time", 1e12),
    "arrival as text": _cell("time", "soon"),
    "arrival 1_0": _cell("time", "1_0"),
    "arrival True": _cell("time", True),
    "arrival None": _cell("time", None),
    "duplicate names": _cell("name", "ncf-0"),
    "empty DataFrame": _frame(lambda f: f.iloc[:0]),
    "a name that is NaN": _cell("name", np.nan),
    "an empty name": _cell("name", " "),
    "a name with ';'": _cell("name", "a;b"),
    "a name with '='": _cell("name", "a=b"),
    "a number as name": _cell("name", 7),
    "an empty application": _cell("application", ""),
    "an unknown application": _cell("application", "resnet"),
    "an application that is None": _cell("application", None),
    "category bogus": _frame(lambda f: f.assign(category=["adaptive", "bogus", ""])),
    "category 5": _frame(lambda f: f.assign(category=["adaptive", 5, "rigid"])),
    "a column twice": _frame(lambda f: pd.concat([f, f[["time"]]], axis=1)),
    "not a DataFrame": lambda: JOBS.to_dict(),
    "more GPUs than the cluster": _cell("num_replicas", 64),
    "a batch over the largest": _cell("batch_size", 10**6),
}
for _column in WORKLOAD_COLUMNS:
    BAD_WORKLOADS[f"missing column {_column}"] = _frame(lambda f, c=_column: f.drop(columns=[c]))
for _column in ("num_replicas", "batch_size"):
    for _what, _value in {
        "1.5": 1.5,
        "0": 0,
        "-1": -1,
        "NaN": np.nan,
        "inf": np.inf,
        "True": True,
        "'x'": "x",
        "'1_6'": "1_6",
        "1e13": 1e13,
    }.items():
        BAD_WORKLOADS[f"{_column} {_what}"] = _cell(_column, _value)

BAD_SEEDS = {
    "1.5": 1.5,
    "-1": -1,
    "True": True,
    "2**40": 2**40,
    "'3'": "3",
    "2**32": 2**32,
    "None": None,
    "np.float64(2.0)": np.float64(2.0),
}


def _run(workload=JOBS, seed=0, tmp_path=None):
    return api.run("fifo", workload, cluster="2x4", seed=seed, mtbf=1)


def _compare(workload=JOBS, seed=0, tmp_path=None):
    return api.compare(["fifo", "goodput"], workload, cluster="2x4", seed=seed, mtbf=1)


ENTRY_POINTS = {"run": _run, "compare": _compare}


@pytest.mark.parametrize("entry", sorted(ENTRY_POINTS))
@pytest.mark.parametrize("what", sorted(BAD_WORKLOADS))
def test_a_bad_workload_frame_is_refused_naming_the_argument(entry, what):
    with pytest.raises(InputError) as caught:
        ENTRY_POINTS[entry](workload=BAD_WORKLOADS[what]())
    message = str(caught.value)
    assert message.startswith("workload: ") and "\n" not in message, message


@pytest.mark.parametrize("what", sorted(BAD_SEEDS))
@pytest.mark.parametrize("entry", ["run", "compare", "make_policy_and_agent", "sweep"])
def test_a_bad_seed_is_refused_naming_the_argument(entry, what, tmp_path):
    """A seed of 1.5 or -1 crashed mid-run once failures were on; True and 2**40 ran."""
    seed = BAD_SEEDS[what]
    with pytest.raises(InputError) as caught:
        if entry == "make_policy_and_agent":
            api.make_policy_and_agent("goodput-ga", seed=seed)
        elif entry == "sweep":
            sweep(["fifo"], [], tmp_path / "s", seeds=[0, seed], progress=False)
        else:
            ENTRY_POINTS[entry](seed=seed)
    name = "seeds" if entry == "sweep" else "seed"
    assert str(caught.value).startswith(f"{name}: expected an integer in [0, 4294967295]")


def test_the_same_rows_give_the_same_error_as_a_csv(tmp_path):
    """One validation path: the CSV's message, with the file's line for the frame's row."""
    frame = BAD_WORKLOADS["NaN arrival"]()
    path = tmp_path / "w.csv"
    frame.to_csv(path, index=False, na_rep="nan")
    with pytest.raises(InputError) as from_csv:
        api.run("fifo", path, cluster="2x4")
    with pytest.raises(InputError) as from_frame:
        api.run("fifo", frame, cluster="2x4")
    assert str(from_csv.value) == f"{path}: line 3: time 'nan' must lie in [0, 315360000] seconds"
    assert str(from_frame.value) == "workload: row 1: time nan must lie in [0, 315360000] seconds"


def test_valid_frames_run_as_given():
    """Numbers as numpy or text, a numpy seed: the frame is checked, not changed."""
    as_text = JOBS.astype(str)
    result = api.run("fifo", as_text, cluster="2x4", seed=np.int64(3))
    assert result.jobs["finished"].all()
    assert api.run("fifo", JOBS, cluster="2x4", seed=3).jobs.equals(result.jobs)
