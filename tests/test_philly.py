"""The real Philly log as a workload (`goodput-sim workload philly`): both layouts, the filter,
slices that agree with the whole log, and one-line errors."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from click.testing import CliRunner

from goodput_sim.cli import main
from goodput_sim.errors import InputError
from goodput_sim.inputs.philly import philly_workload, read_philly_log, reference_log
from goodput_sim.inputs.workload import TUNED_CONFIGURATIONS, load_workload, philly_filter

JOB_LOG = Path(__file__).parent / "data" / "philly_job_log.json"


def test_job_log_json_is_flattened_attempt_by_attempt():
    log = read_philly_log(JOB_LOG)
    # Job 4 never started and job 5 never ended: left out. Job 2 ran 30 min + 2 h and its
    # last attempt held 8 GPUs on two machines.
    assert log["duration"].tolist() == [600.0, 9000.0, 30.0, 259200.0, 7200.0]
    assert log["num_gpus"].tolist() == [2, 8, 1, 8, 1]
    np.testing.assert_array_equal(log["gpu_time"], log["duration"] * log["num_gpus"])


def test_filter_and_buckets_choose_the_applications():
    work = philly_workload(read_philly_log(JOB_LOG), realistic=True)
    # The 30-second job is filtered out (< 60 s); 8 GPUs x 3 days is 576 GPU-hours (>= 100 h).
    assert work["duration"].tolist() == [600.0, 9000.0, 259200.0, 7200.0]
    assert work["time"].tolist() == [0, 3600, 100800, 144000]
    assert work["application"].iloc[0] in ("cifar10", "ncf")  # < 1 GPU-hour
    assert work["application"].iloc[1] == "yolov3"  # 20 GPU-hours
    assert work["application"].iloc[2] == "imagenet"
    assert work["application"].iloc[3] in ("deepspeech2", "bert")  # 2 GPU-hours
    assert work["num_replicas"].tolist() == [2, 8, 8, 1]
    assert work.loc[1, "batch_size"] == 64  # yolov3: M0 8 x 8 GPUs


def test_tuned_sizes_come_from_the_menus(tmp_path):
    work = philly_workload(read_philly_log(JOB_LOG), seed=3)
    for app, replicas, batch in work[["application", "num_replicas", "batch_size"]].itertuples(
        index=False
    ):
        assert (replicas, batch) in TUNED_CONFIGURATIONS[app]


def test_a_slice_holds_the_whole_logs_jobs_unchanged():
    log = read_philly_log(JOB_LOG)
    whole = philly_workload(log, realistic=True, seed=5)
    part = philly_workload(log, start="2017-10-03", days=1, realistic=True, seed=5)
    assert part["time"].tolist() == [43200]  # 12:00 on the start day
    row = whole.iloc[2]
    assert part.iloc[0][["application", "num_replicas", "batch_size"]].tolist() == [
        row["application"],
        row["num_replicas"],
        row["batch_size"],
    ]


def test_cli_writes_a_workload_the_simulator_reads(tmp_path):
    out = tmp_path / "w.csv"
    result = CliRunner().invoke(
        main, ["workload", "philly", str(JOB_LOG), "--realistic", "--max-gpus", "4", "-o", out]
    )
    assert result.exit_code == 0, result.output
    assert "wrote" in result.output
    work = load_workload(out)
    assert len(work) == 4 and work["num_replicas"].max() == 4


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--start", "yesterday-ish"], "expected a date"),
        (["--start", "2018-01-01"], "no job submitted"),
        (["--days", "0"], "positive number of days"),
        (["--days", "inf"], "positive number of days"),
        (["--days", "nan"], "positive number of days"),
        (["--days", "1e9"], "positive number of days"),
        (["--seed", "-1"], "--seed"),
    ],
)
def test_bad_options_get_one_line_errors(tmp_path, args, message):
    result = CliRunner().invoke(
        main, ["workload", "philly", str(JOB_LOG), *args, "-o", tmp_path / "w.csv"]
    )
    assert result.exit_code != 0
    assert message in result.output and "Traceback" not in result.output
    assert not (tmp_path / "w.csv").exists()


@pytest.mark.parametrize(
    ("content", "message"),
    [
        ("{not json", "cannot read Philly job log"),
        ('{"jobid": 1}', "expected a JSON list"),
        ('[{"jobid": "a", "submitted_time": "never", "attempts": []}]', "submitted_time"),
        ('[{"jobid": "a", "submitted_time": "2017-10-02 08:00:00"}]', "attempts must be a list"),
        (
            '[{"jobid": "a", "submitted_time": "2017-10-02 08:00:00", "attempts": '
            '[{"start_time": "2017-10-02 09:00:00", "end_time": "2017-10-02 08:00:00", '
            '"detail": []}]}]',
            "before start_time",
        ),
        (
            '[{"jobid": "a", "submitted_time": "2017-10-02 08:00:00", "attempts": '
            '[{"start_time": "2017-10-02 08:00:00", "end_time": "2017-10-02 09:00:00", '
            '"detail": [{"ip": "m1"}]}]}]',
            "gpus list",
        ),
    ],
)
def test_malformed_job_logs_are_named(tmp_path, content, message):
    path = tmp_path / "log.json"
    path.write_text(content)
    with pytest.raises(InputError, match=message) as err:
        read_philly_log(path)
    assert "log.json" in str(err.value)


PHILLY_HEADER = "timestamp,duration,num_gpus,gpu_time\n"
PHILLY_ROW = "2017-10-02 08:00:00,600,2,1200\n"


@pytest.mark.parametrize(
    ("row", "field"),
    [
        ("2017-10-02 09:00:00,600,-2,1200\n", "num_gpus"),
        ("2017-10-02 09:00:00,600,1.5,900\n", "num_gpus"),
        ("2017-10-02 09:00:00,600,0,0\n", "num_gpus"),
        ("2017-10-02 09:00:00,600,1_6,1200\n", "num_gpus"),
        ("2017-10-02 09:00:00,6_00,2,1200\n", "duration"),
        ("2017-10-02 09:00:00,nan,2,1200\n", "duration"),
        ("2017-10-02 09:00:00,600,2,-1\n", "gpu_time"),
        ("2017-10-02 09:00:00,600,2,inf\n", "gpu_time"),
        ("yesterday,600,2,1200\n", "timestamp"),
    ],
)
def test_bad_philly_csv_cells_name_file_line_and_field(tmp_path, row, field):
    """A num_gpus of -2 or 1.5 was -2 replicas or 1; every bad cell is refused instead."""
    path = tmp_path / "philly.csv"
    path.write_text(PHILLY_HEADER + PHILLY_ROW + "\n" + row)
    with pytest.raises(InputError, match=f"line 4: field {field}: found") as err:
        read_philly_log(path)
    assert str(err.value).startswith(str(path))


def test_a_philly_csv_with_a_repeated_column_is_refused(tmp_path):
    path = tmp_path / "philly.csv"
    path.write_text("timestamp,duration,num_gpus,gpu_time,num_gpus\n" + PHILLY_ROW[:-1] + ",8\n")
    with pytest.raises(InputError, match="line 1: column 'num_gpus' appears twice"):
        read_philly_log(path)


def test_a_job_log_with_a_repeated_key_is_refused(tmp_path):
    path = tmp_path / "log.json"
    path.write_text(
        '[{"jobid": "a", "jobid": "b", "submitted_time": "2017-10-02", "attempts": []}]'
    )
    with pytest.raises(InputError, match="key 'jobid' appears twice"):
        read_philly_log(path)


@pytest.mark.skipif(reference_log() is None, reason="the Pollux reference log is absent")
def test_the_reference_log_gives_the_documented_counts():
    """74,428 jobs pass the filter over the whole log; 10,147 are submitted in the 7 days from
    2017-10-02 (the counts the scale bench replays)."""
    log = read_philly_log(reference_log())
    whole = philly_workload(log, realistic=True)
    week = philly_workload(log, start="2017-10-02", days=7, realistic=True)
    assert len(whole) == 74_428 and len(week) == 10_147
    assert whole["time"].iloc[-1] / 86400 > 105
    first = log.loc[philly_filter(log), "timestamp"].min()  # the whole workload's time 0
    offset = (pd.Timestamp("2017-10-02") - first).total_seconds()
    inside = whole[(whole["time"] >= offset) & (whole["time"] < offset + 7 * 86400)]
    columns = ["application", "num_replicas", "batch_size", "duration"]
    assert inside[columns].reset_index(drop=True).equals(week[columns])
