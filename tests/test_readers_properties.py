"""Property tests of the readers of saved and hand-written files: whatever a manifest, a results
table or an experiment file holds, reading it gives a checked value or one ``InputError``
naming the file, never another exception (the hand-picked cases are in ``hostile_cases``)."""

from __future__ import annotations

import json
import math
import tempfile
from pathlib import Path

import pandas as pd
import pytest
import yaml
from conftest import TWO_JOBS as WORKLOAD
from hostile_cases import DELETE, EXPERIMENT, json_paths, set_at
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from goodput_sim.errors import InputError
from goodput_sim.experiments.grid import load_experiment
from goodput_sim.inputs.cluster import cluster_from_record
from goodput_sim.inputs.workload import MAX_LOAD
from goodput_sim.results.saved import (
    JOB_COLUMNS,
    ROUND_COLUMNS,
    SWEEP_COLUMNS,
    read_manifest,
    read_table,
)
from goodput_sim.spec import config_from_record

PROFILE = settings(
    max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)

# Any JSON value: what a damaged or hand-edited file may put where a reader expects something.
scalars = (
    st.none()
    | st.booleans()
    | st.integers(-(2**70), 2**70)
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(max_size=12)
)
json_values = st.recursive(
    scalars,
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner),
    max_leaves=12,
)


def _read(path: Path, text: str | bytes):
    """Write ``text`` to ``path`` and read it as a manifest, then its config and cluster
    records as ``run --manifest`` does."""
    path.write_bytes(text if isinstance(text, bytes) else text.encode())
    manifest = read_manifest(path)
    config_from_record(manifest["config"])
    cluster_from_record(manifest["cluster"], path)
    return manifest


@PROFILE
@given(data=st.data(), value=json_values, drop=st.booleans())
def test_a_changed_manifest_reads_or_is_refused_in_one_line(saved_run, data, value, drop):
    """One node of a real manifest replaced by any JSON value, or removed."""
    changed = json.loads((saved_run / "manifest.json").read_text())
    path = data.draw(st.sampled_from(list(json_paths(changed))))
    if path:
        set_at(path, DELETE if drop else value)(changed)
    else:
        changed = value
    with tempfile.TemporaryDirectory() as scratch:
        try:
            read = _read(Path(scratch) / "manifest.json", json.dumps(changed))
        except InputError as error:
            assert "\n" not in str(error)
            return
    # Read without error: what a reader relies on holds.
    assert isinstance(read["policy"]["name"], str) and read["policy"]["name"]
    assert all(math.isfinite(v) for v in read["summary"].values() if v is not None)


@PROFILE
@given(text=st.binary(max_size=300) | st.text(max_size=300))
def test_any_bytes_as_a_manifest_are_refused_in_one_line(text):
    with tempfile.TemporaryDirectory() as scratch, pytest.raises(InputError) as caught:
        _read(Path(scratch) / "manifest.json", text)
    assert "\n" not in str(caught.value)


TABLES = {
    "jobs.csv": (JOB_COLUMNS, "jobs table"),
    "rounds.csv": (ROUND_COLUMNS, "rounds table"),
}
cells = st.sampled_from(
    ["", "x", "nan", "NaN", "inf", "-inf", "-1", "1.5", "1e400", "True", "0", "a=1@2", " 3 "]
) | st.text(max_size=6)


@PROFILE
@given(data=st.data(), table=st.sampled_from(sorted(TABLES)))
def test_a_damaged_results_table_reads_checked_or_is_refused(saved_run, data, table):
    """Cells of a real jobs or rounds table replaced by junk, a column dropped or renamed: the
    reader returns the declared types or refuses naming the file, column and row."""
    columns, what = TABLES[table]
    frame = pd.read_csv(saved_run / table, dtype=str, keep_default_na=False)
    for _ in range(data.draw(st.integers(1, 3))):
        column = data.draw(st.sampled_from(list(frame.columns)))
        action = data.draw(st.sampled_from(["cell", "cell", "drop", "rename"]))
        if action == "cell" and len(frame):
            row = data.draw(st.integers(0, len(frame) - 1))
            frame.loc[row, column] = data.draw(cells)
        elif action == "drop":
            frame = frame.drop(columns=column)
        elif action == "rename":
            frame = frame.rename(columns={column: column.upper()})
    with tempfile.TemporaryDirectory() as scratch:
        path = Path(scratch) / table
        frame.to_csv(path, index=False)
        try:
            read = read_table(path, columns, what)
        except InputError as error:
            assert "\n" not in str(error) and table in str(error)
            return
    for name, column in columns.items():
        values = read[name]
        if column.kind == "number":
            finite = values.dropna()
            assert finite.map(math.isfinite).all()
            assert column.low is None or (finite >= column.low).all()
            assert column.empty or not values.isna().any()
        elif column.kind == "count":
            assert str(values.dtype) == "int64" and (values >= 0).all()
        elif column.kind == "flag":
            assert values.map(lambda v: isinstance(v, bool)).all()


@PROFILE
@given(rows=st.lists(st.lists(cells, min_size=8, max_size=8), max_size=4))
def test_any_sweep_summary_reads_checked_or_is_refused(rows):
    header = list(SWEEP_COLUMNS)
    with tempfile.TemporaryDirectory() as scratch:
        path = Path(scratch) / "summary.csv"
        pd.DataFrame(rows, columns=header).to_csv(path, index=False)
        try:
            read = read_table(path, SWEEP_COLUMNS, "sweep summary")
        except InputError as error:
            assert "\n" not in str(error)
            return
    assert (read["seed"] >= 0).all() and (read["unfinished"] >= 0).all()
    assert read["avg_jct"].dropna().map(math.isfinite).all()


@PROFILE
@given(
    key=st.sampled_from([*EXPERIMENT, "settings", "profiles", "variants", "bogus"]),
    value=json_values,
)
def test_an_experiment_file_loads_checked_or_is_refused(key, value):
    """An experiment file with one key set to any value: it loads with every axis checked, or
    is refused in one line naming the file."""
    data = {**EXPERIMENT, key: value}
    with tempfile.TemporaryDirectory() as scratch:
        folder = Path(scratch)
        (folder / "w.csv").write_text(WORKLOAD)
        path = folder / "e.yaml"
        path.write_text(yaml.safe_dump(data))
        try:
            experiment = load_experiment(path)
        except InputError as error:
            assert "\n" not in str(error) and "e.yaml" in str(error)
            return
    assert experiment.policies and experiment.workloads
    assert all(0 < load <= MAX_LOAD for load in experiment.loads)
    assert all(isinstance(s, int) and s >= 0 for s in experiment.seeds)
    assert len(set(experiment.loads)) == len(experiment.loads)


@PROFILE
@given(text=st.text(max_size=200))
def test_any_text_as_an_experiment_file_loads_or_is_refused(text):
    with tempfile.TemporaryDirectory() as scratch:
        path = Path(scratch) / "e.yaml"
        path.write_text(text)
        try:
            load_experiment(path)
        except InputError as error:
            assert "\n" not in str(error)
        else:
            assume(False)  # some text is a valid experiment naming no file here: rare


@PROFILE
@given(source=st.text(max_size=20), problem=st.text(max_size=40), where=st.text(max_size=10))
def test_every_input_error_is_one_line(source, problem, where):
    """Whatever file name, key or value an error quotes, its message stays on one line."""
    text = str(InputError(source, problem, where))
    assert len(text.splitlines()) <= 1


# ------------------------------------------------------------- ambiguous files are refused


@pytest.mark.parametrize(
    ("text", "line", "problem"),
    [
        ("seed: 1\npolicy: fifo\nseed: 2\n", 3, "key 'seed' appears twice in one mapping"),
        ("a:\n  b: 1\n  b: 2\n", 3, "key 'b' appears twice"),
        ("[{x: 1, x: 2}]\n", 1, "key 'x' appears twice"),
        ("seed: 1_0\n", 1, "number 1_0 is written with an underscore"),
        ("interval: 1_0.5\n", 1, "number 1_0.5 is written with an underscore"),
        ("horizon: 1:30\n", 1, "number 1:30 is written with ':'"),
        ("seed: 017\n", 1, "number 017 is written with a leading 0"),
    ],
)
def test_yaml_that_reads_otherwise_than_it_shows_is_refused(tmp_path, text, line, problem):
    """PyYAML keeps the last of a repeated key and reads 1_0 as 10, 1:30 as 90, 017 as 15."""
    from goodput_sim.inputs.safe_yaml import load_yaml

    path = tmp_path / "c.yaml"
    path.write_text(text)
    with pytest.raises(InputError) as caught:
        load_yaml(path)
    assert str(caught.value).startswith(f"{path}: line {line}: {problem}")


def test_quoted_or_plain_numbers_still_read(tmp_path):
    from goodput_sim.inputs.safe_yaml import load_yaml

    path = tmp_path / "c.yaml"
    path.write_text("a: '1_0'\nb: 0\nc: 0.5\nd: -3\ne: .inf\nf: 1.0e+3\ng: 0x1f\n")
    assert load_yaml(path) == {
        "a": "1_0",
        "b": 0,
        "c": 0.5,
        "d": -3,
        "e": math.inf,
        "f": 1e3,
        "g": 31,
    }


@pytest.mark.parametrize("table", ["jobs.csv", "rounds.csv"])
def test_a_results_table_with_a_repeated_column_is_refused(saved_run, tmp_path, table):
    """pandas would keep the first and rename the second ``name.1``: refused instead."""
    columns = JOB_COLUMNS if table == "jobs.csv" else ROUND_COLUMNS
    frame = pd.read_csv(saved_run / table, dtype=str, keep_default_na=False)
    column = next(iter(columns))
    text = frame.to_csv(index=False).splitlines()
    text[0] += f",{column}"
    text[1:] = [row + ",0" for row in text[1:]]
    path = tmp_path / table
    path.write_text("\n".join(text) + "\n")
    with pytest.raises(InputError, match=f"line 1: column '{column}' appears twice"):
        read_table(path, columns, table)


def test_a_manifest_with_a_repeated_key_is_refused(saved_run, tmp_path):
    text = (saved_run / "manifest.json").read_text()
    with pytest.raises(InputError, match="key 'seed' appears twice"):
        _read(tmp_path / "m.json", text.replace('"seed": 0,', '"seed": 0, "seed": 1,', 1))
