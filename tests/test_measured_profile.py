"""MeasuredProfile: the reference oracle of SPEC 1-2 read from measurement folders.

Exact values at measured points, the interpolation rules between them, the documented deviations
(clamping instead of errors, nearest point instead of NaN) and one-line errors for bad folders.
"""

from __future__ import annotations

import csv
import itertools
import shutil
from pathlib import Path

import numpy as np
import pytest
from click.testing import CliRunner

from goodput_sim.errors import InputError
from goodput_sim.profiles import MeasuredProfile, canonical_placement, load_measured_profiles

APPS = ("bert", "cifar10", "deepspeech2", "imagenet", "ncf", "yolov3")


def read_rows(path: Path) -> list[dict[str, float]]:
    """A reference CSV as dicts of floats, read independently of the code under test."""
    with path.open() as handle:
        return [{k: float(v) for k, v in row.items()} for row in csv.DictReader(handle)]


def spread(nodes: int, replicas: int) -> tuple[int, ...]:
    base, extra = divmod(replicas, nodes)
    return tuple(base + (1 if i < extra else 0) for i in range(nodes))


# ------------------------------------------------------------------------ synthetic folders
def linear_step(nodes, replicas, bsz):
    """Step and sync times linear in (nodes, replicas, local batch): what 3-D linear
    interpolation must reproduce exactly inside the convex hull of the measurements."""
    step = 0.05 + 0.01 * nodes + 0.003 * replicas + 0.0002 * bsz
    sync = 0.001 * nodes + 0.0005 * replicas
    return step, sync


TOY_BSZ = (8, 16, 32)


def write_measurements(folder: Path) -> Path:
    """A tiny but complete measurement application folder; returns its path."""
    folder.mkdir(parents=True)
    rows = ["placement,local_bsz,step_time,sync_time"]
    seen = set()
    for n in range(1, 5):
        for digits in itertools.product(range(1, 5), repeat=n):
            key = canonical_placement(digits)
            if key in seen:
                continue
            seen.add(key)
            for b in TOY_BSZ:
                step, sync = linear_step(len(key), sum(key), b)
                rows.append(f"{''.join(map(str, key))},{b},{step!r},{sync!r}")
    (folder / "placements.csv").write_text("\n".join(rows) + "\n")
    rows = ["num_nodes,num_replicas,local_bsz,step_time,sync_time"]
    for n, r, b in itertools.product((6, 8), (1, 2, 4), TOY_BSZ):
        step, sync = linear_step(n, n * r, b)
        rows.append(f"{n},{n * r},{b},{step!r},{sync!r}")
    (folder / "scalability.csv").write_text("\n".join(rows) + "\n")
    header = "progress,iteration,metric,grad_sqr,grad_var\n"
    (folder / "validation-8.csv").write_text(header + "10.0,10,0.5,4.0,1.0\n20.0,20,0.7,2.0,3.0\n")
    (folder / "validation-16.csv").write_text(header + "9.5,6,0.5,6.0,5.0\n21.0,12,0.8,1.0,2.0\n")
    return folder


@pytest.fixture()
def toy_folder(tmp_path) -> Path:
    """A measurement folder ``tmp_path/meas`` with one synthetic application ``toy``."""
    write_measurements(tmp_path / "meas" / "toy")
    return tmp_path / "meas"


def edit_line(path: Path, line: int, new: str | None) -> None:
    """Replace (or with None delete) 1-based ``line`` of a text file."""
    lines = path.read_text().splitlines()
    if new is None:
        del lines[line - 1]
    else:
        lines[line - 1] = new
    path.write_text("\n".join(lines) + "\n")


# ------------------------------------------------------------------------ canonical placement
@pytest.mark.parametrize(
    ("placement", "expected"),
    [
        ((2, 1, 1), (1, 1, 2)),
        ((1, 2, 1), (1, 1, 2)),
        ((4, 3, 2, 1), (1, 4, 3, 2)),
        ((2, 1, 2, 1), (1, 2, 1, 2)),
        ((3, 0, 1, 0), (1, 3)),
        ((0, 0, 4), (4,)),
        ((0, 0), ()),
        ((), ()),
        (np.array([2, 0, 2, 1]), (1, 2, 2)),
    ],
)
def test_canonical_placement_rotates_and_drops_zeros(placement, expected):
    assert canonical_placement(placement) == expected


def test_canonical_placement_is_a_rotation_not_a_sort():
    # (1, 3, 2) and (1, 2, 3) are different rings: sorting would wrongly merge them.
    assert canonical_placement((3, 2, 1)) == (1, 3, 2)
    assert canonical_placement((2, 3, 1)) == (1, 2, 3)


def test_canonical_placement_is_invariant_under_every_rotation():
    for digits in itertools.product(range(1, 5), repeat=4):
        key = canonical_placement(digits)
        rotations = [digits[i:] + digits[:i] for i in range(4)]
        assert {canonical_placement(r) for r in rotations} == {key}
        assert key == min(rotations)


# ------------------------------------------------------------------------ throughput oracle
def test_placements_rows_read_back_exactly(reference_dir, measured_profiles):
    for app in ("cifar10", "bert"):
        rows = read_rows(reference_dir / "traces" / app / "placements.csv")
        profile = measured_profiles[app]
        for row in rows[:: max(1, len(rows) // 40)]:
            digits = tuple(int(d) for d in str(int(row["placement"])))
            rotated = digits[1:] + digits[:1]  # any rotation names the same placement
            step, sync = profile.step_sync(rotated, row["local_bsz"])
            assert float(step) == row["step_time"]
            assert float(sync) == row["sync_time"]


def test_a_known_placements_row(measured_profiles):
    # cifar10 placements.csv: "1,129,0.10385050773620605,0.0005253599941730499"
    step, sync = measured_profiles["cifar10"].step_sync((1,), 129)
    assert float(step) == 0.10385050773620605
    assert float(sync) == 0.0005253599941730499


def test_scalability_rows_read_back(reference_dir, measured_profiles):
    for app in APPS:
        profile = measured_profiles[app]
        rows = read_rows(reference_dir / "traces" / app / "scalability.csv")
        for row in rows[:: max(1, len(rows) // 25)]:
            placement = spread(int(row["num_nodes"]), int(row["num_replicas"]))
            step, sync = profile.step_sync(placement, row["local_bsz"])
            assert float(step) == pytest.approx(row["step_time"], rel=1e-9)
            assert float(sync) == pytest.approx(row["sync_time"], rel=1e-9, abs=1e-15)


def test_linear_interpolation_between_local_batch_sizes(reference_dir, measured_profiles):
    rows = [
        r
        for r in read_rows(reference_dir / "traces" / "cifar10" / "placements.csv")
        if r["placement"] == 22
    ]
    rows.sort(key=lambda r: r["local_bsz"])
    lo, hi = rows[3], rows[4]
    for t in (0.25, 0.5, 0.9):
        b = lo["local_bsz"] + t * (hi["local_bsz"] - lo["local_bsz"])
        step, sync = measured_profiles["cifar10"].step_sync((2, 2), b)
        assert float(step) == pytest.approx(
            lo["step_time"] + t * (hi["step_time"] - lo["step_time"])
        )
        assert float(sync) == pytest.approx(
            lo["sync_time"] + t * (hi["sync_time"] - lo["sync_time"])
        )


def test_step_sync_is_vectorised_over_local_batch(measured_profiles):
    profile = measured_profiles["cifar10"]
    b = np.array([32.0, 100.0, 500.0, 1024.0])
    step, sync = profile.step_sync((1, 2), b)
    assert step.shape == sync.shape == (4,)
    for i, bi in enumerate(b):
        assert step[i] == profile.step_sync((2, 1), bi)[0]
    assert np.all(np.diff(step) > 0)  # bigger local batches take longer


def test_local_batch_outside_measured_range_is_clamped(measured_profiles):
    """Documented deviation: the reference raises; we clamp to the placement's range."""
    profile = measured_profiles["cifar10"]
    low, high = profile.step_sync((1,), 32), profile.step_sync((1,), 1024)
    assert profile.step_sync((1,), 1) == low
    assert profile.step_sync((1,), 31.5) == low
    assert profile.step_sync((1,), 4096) == high
    assert profile.step_sync((1,), 1e6) == high


def test_more_than_four_nodes_interpolates_between_node_counts(toy_folder):
    profile = MeasuredProfile(toy_folder / "toy")
    # 5 nodes lies between the measured 4 and 6; 7 between 6 and 8. Linear data is reproduced.
    for placement, b in [((2, 2, 2, 2, 2), 20.0), ((2, 2, 2, 1, 1, 1, 1), 12.0), ((1,) * 5, 8.0)]:
        step, sync = profile.step_sync(placement, b)
        want_step, want_sync = linear_step(len(placement), sum(placement), b)
        assert float(step) == pytest.approx(want_step, rel=1e-9)
        assert float(sync) == pytest.approx(want_sync, rel=1e-9)


def test_outside_the_point_cloud_takes_the_nearest_measurement(toy_folder):
    """Documented deviation: the reference returns NaN (and asserts) outside the hull."""
    profile = MeasuredProfile(toy_folder / "toy")
    step, sync = profile.step_sync((4,) * 8, 1000.0)  # 8 nodes x 4 GPUs at b=1000 > 32
    assert (float(step), float(sync)) == pytest.approx(linear_step(8, 32, 32))


def test_large_placements_never_return_nan(measured_profiles):
    """SPEC 1.2: cifar10 (12 nodes, 32 GPUs) is only measured up to b=363, so the reference's
    3-D interpolation returns NaN for larger b there; every answer here must be finite."""
    cifar = measured_profiles["cifar10"]
    step, _ = cifar.step_sync(spread(12, 32), np.array([363.0, 513.0, 1024.0]))
    assert np.all(np.isfinite(step)) and np.all(step > 0)
    for profile in measured_profiles.values():
        bsz = np.array([1.0, profile.limits.min_local_bsz, profile.limits.max_local_bsz, 1e5])
        for nodes in (5, 7, 9, 11, 13, 15, 16, 17, 24, 64):
            for replicas in (nodes, 2 * nodes + 1, 4 * nodes):
                step, sync = profile.step_sync(spread(nodes, replicas), bsz)
                assert np.all(np.isfinite(step)) and np.all(step > 0), (profile.name, nodes)
                assert np.all(np.isfinite(sync)) and np.all(sync >= 0), (profile.name, nodes)


def test_more_than_sixteen_nodes_is_treated_as_sixteen(measured_profiles):
    profile = measured_profiles["imagenet"]
    b = np.array([20.0, 50.0, 128.0])
    twenty = profile.step_sync((2,) * 20, b)
    sixteen = profile.step_sync(spread(16, 40), b)
    np.testing.assert_array_equal(twenty[0], sixteen[0])
    np.testing.assert_array_equal(twenty[1], sixteen[1])


# ------------------------------------------------------------------------ statistical oracle
def test_grad_stats_exact_at_validated_batch_sizes(reference_dir, measured_profiles):
    profile = measured_profiles["cifar10"]
    for batch in (128, 512, 4096):
        rows = read_rows(reference_dir / "traces" / "cifar10" / f"validation-{batch}.csv")
        for epoch in (0, 1, 17, 99):
            sqr, var = profile.grad_stats(batch, epoch)
            assert float(sqr) == rows[epoch]["grad_sqr"]
            assert float(var) == rows[epoch]["grad_var"]
            assert float(profile.iterations(batch, epoch)) == rows[epoch]["iteration"]


def test_grad_stats_linear_in_batch_size_between_validated(reference_dir, measured_profiles):
    profile = measured_profiles["cifar10"]
    lo = read_rows(reference_dir / "traces" / "cifar10" / "validation-256.csv")[5]
    hi = read_rows(reference_dir / "traces" / "cifar10" / "validation-512.csv")[5]
    for batch in (300.0, 384.0, 500.0):
        t = (batch - 256) / 256
        sqr, var = profile.grad_stats(batch, 5)
        # Linear in M (SPEC 2.2), not in log M: 384 is the midpoint of 256 and 512.
        assert float(sqr) == pytest.approx((1 - t) * lo["grad_sqr"] + t * hi["grad_sqr"])
        assert float(var) == pytest.approx((1 - t) * lo["grad_var"] + t * hi["grad_var"])
        iters = (1 - t) * lo["iteration"] + t * hi["iteration"]
        assert float(profile.iterations(batch, 5)) == pytest.approx(iters)


def test_grad_stats_vectorised_and_clamped(measured_profiles):
    profile = measured_profiles["cifar10"]
    batches = np.array([[64.0], [128.0], [4096.0], [10000.0]])
    epochs = np.array([[0, 50, 99, 150]])
    sqr, var = profile.grad_stats(batches, epochs)
    assert sqr.shape == var.shape == (4, 4)
    np.testing.assert_array_equal(sqr[0], sqr[1])  # below the smallest validated batch
    np.testing.assert_array_equal(sqr[3], sqr[2])  # above the largest
    np.testing.assert_array_equal(sqr[:, 3], sqr[:, 2])  # past the last epoch


def test_toy_grad_stats_interpolate_by_hand(toy_folder):
    profile = MeasuredProfile(toy_folder / "toy")
    sqr, var = profile.grad_stats(12, 1)  # midway between B=8 (2.0, 3.0) and B=16 (1.0, 2.0)
    assert (float(sqr), float(var)) == pytest.approx((1.5, 2.5))
    np.testing.assert_allclose(profile.progress_thresholds, [0.0, 9.5, 20.0])  # min over B
    assert profile.limits.init_batch_size == 8 and profile.limits.max_batch_size == 16
    assert profile.limits.min_local_bsz == 8 and profile.limits.max_local_bsz == 32
    assert profile.limits.max_epochs == 2


# ------------------------------------------------------------------------ progress and limits
SPEC_PROGRESS = {  # SPEC 1.3: P(1) and P(E)
    "bert": (7387.0, 14774.0),
    "cifar10": (390.7, 39062.9),
    "deepspeech2": (356.7, 28536.0),
    "imagenet": (6405.9, 576525.6),
    "ncf": (19417.6, 194174.0),
    "yolov3": (2069.0, 103444.0),
}


@pytest.mark.parametrize("app", APPS)
def test_progress_thresholds_match_spec_table(app, measured_profiles):
    profile = measured_profiles[app]
    first, total = SPEC_PROGRESS[app]
    assert profile.progress_thresholds[0] == 0.0
    assert profile.progress_thresholds[1] == pytest.approx(first, abs=0.06)
    assert profile.total_progress == pytest.approx(total, abs=0.06)
    assert np.all(np.diff(profile.progress_thresholds) > 0)


def test_progress_threshold_is_min_over_batch_sizes(reference_dir, measured_profiles):
    profile = measured_profiles["cifar10"]
    files = sorted((reference_dir / "traces" / "cifar10").glob("validation-*.csv"))
    tables = [read_rows(f) for f in files]
    for epoch in (1, 2, 50, 100):
        want = min(t[epoch - 1]["progress"] for t in tables)
        assert profile.progress_thresholds[epoch] == want
    assert measured_profiles["bert"].progress_thresholds[1] == 7387.0
    assert profile.total_progress == pytest.approx(39062.9, abs=0.01)


def test_epoch_of_uses_thresholds(measured_profiles):
    profile = measured_profiles["bert"]
    epochs = profile.epoch_of([0.0, 7386.9, 7387.0, 14773.0, 14774.0, 1e9])
    np.testing.assert_array_equal(epochs, [0, 0, 1, 1, 2, 2])


SPEC_LIMITS = {  # SPEC 1.6: M0, max batch, min local, max local, max epochs
    "bert": (12, 384, 4, 12, 2),
    "cifar10": (128, 4096, 32, 1024, 100),
    "deepspeech2": (20, 640, 10, 80, 80),
    "imagenet": (200, 12800, 20, 200, 90),
    "ncf": (256, 32768, 32, 32768, 10),
    "yolov3": (8, 512, 4, 8, 50),  # max local 8 is an override: the trace goes to 16
}


@pytest.mark.parametrize("app", APPS)
def test_limits_match_spec_table(app, measured_profiles):
    lim = measured_profiles[app].limits
    got = (
        lim.init_batch_size,
        lim.max_batch_size,
        lim.min_local_bsz,
        lim.max_local_bsz,
        lim.max_epochs,
    )
    assert got == SPEC_LIMITS[app]


def test_yolov3_trace_really_goes_beyond_the_override(measured_profiles):
    assert measured_profiles["yolov3"].placements["local_bsz"].max() == 16


# ------------------------------------------------------------------------ bad input
def run_check(folder: Path):
    from goodput_sim.cli import main

    return CliRunner().invoke(main, ["profiles", "check", str(folder)])


def assert_one_line_error(result, *needles: str) -> str:
    assert result.exit_code == 2, result.output
    assert "Traceback" not in result.output
    lines = result.output.strip().splitlines()
    assert len(lines) == 1, result.output
    for needle in needles:
        assert needle in lines[0], (needle, lines[0])
    return lines[0]


def test_toy_folder_is_valid(toy_folder):
    profiles = load_measured_profiles(toy_folder)
    assert list(profiles) == ["toy"]


def test_cli_missing_file(toy_folder):
    (toy_folder / "toy" / "scalability.csv").unlink()
    assert_one_line_error(run_check(toy_folder), "scalability.csv", "missing")


def test_cli_no_validation_files(toy_folder):
    for path in (toy_folder / "toy").glob("validation-*.csv"):
        path.unlink()
    assert_one_line_error(run_check(toy_folder), "validation", "missing")


def test_cli_non_numeric_cell(toy_folder):
    path = toy_folder / "toy" / "placements.csv"
    edit_line(path, 5, "1,32,fast,0.001")
    line = assert_one_line_error(run_check(toy_folder), "placements.csv", "line 5", "step_time")
    assert "'fast'" in line


def test_cli_negative_time(toy_folder):
    path = toy_folder / "toy" / "scalability.csv"
    edit_line(path, 3, "6,6,16,-0.2,0.01")
    assert_one_line_error(
        run_check(toy_folder), "scalability.csv", "line 3", "step_time", "positive"
    )


def test_cli_negative_sync_time(toy_folder):
    edit_line(toy_folder / "toy" / "placements.csv", 4, "1,32,0.2,-0.01")
    assert_one_line_error(run_check(toy_folder), "placements.csv", "line 4", "sync_time")


def test_cli_missing_column(toy_folder):
    path = toy_folder / "toy" / "placements.csv"
    rows = [line.rsplit(",", 1)[0] for line in path.read_text().splitlines()]
    path.write_text("\n".join(rows) + "\n")
    assert_one_line_error(run_check(toy_folder), "placements.csv", "missing column", "sync_time")


def test_cli_ragged_row_is_one_line(toy_folder):
    """The CSV parser's own message spans two lines; the CLI must still print one."""
    edit_line(toy_folder / "toy" / "placements.csv", 4, "1,32,0.2,0.01,7")
    assert_one_line_error(run_check(toy_folder), "placements.csv", "line 4")


def test_cli_negative_gradient_statistic(toy_folder):
    edit_line(toy_folder / "toy" / "validation-16.csv", 3, "21.0,12,0.8,1.0,-2.0")
    assert_one_line_error(run_check(toy_folder), "validation-16.csv", "line 3", "grad_var")


def test_cli_line_numbers_count_blank_lines(toy_folder):
    path = toy_folder / "toy" / "placements.csv"
    lines = path.read_text().splitlines()
    lines[3] = "1,32,oops,0.001"
    lines.insert(2, "")
    lines.insert(2, "   ")
    path.write_text("\n".join(lines) + "\n")
    assert_one_line_error(run_check(toy_folder), "placements.csv", "line 6", "'oops'")


def test_cli_corrupted_reference_copy(reference_dir, tmp_path):
    shutil.copytree(reference_dir / "traces" / "bert", tmp_path / "meas" / "bert")
    path = tmp_path / "meas" / "bert" / "validation-48.csv"
    edit_line(path, 2, path.read_text().splitlines()[1].replace(",", ",x", 1))
    assert_one_line_error(run_check(tmp_path / "meas"), "validation-48.csv", "line 2")


@pytest.mark.parametrize(
    ("file", "line", "text", "where", "problem"),
    [
        ("placements.csv", 7, "1,16,abc,0.1", 7, "must be a number"),
        ("placements.csv", 2, "10,8,0.1,0.01", 2, "placement must be digits"),
        ("placements.csv", 3, "1,16,0.1,0.2", 3, "sync_time must lie in [0, step_time]"),
        ("scalability.csv", 4, "6,6,-32,0.1,0.01", 4, "must be positive"),
        ("validation-8.csv", 2, "10.0,-10,0.5,4.0,1.0", 2, "must not be negative"),
    ],
)
def test_direct_input_errors(toy_folder, file, line, text, where, problem):
    edit_line(toy_folder / "toy" / file, line, text)
    with pytest.raises(InputError) as info:
        MeasuredProfile(toy_folder / "toy")
    err = info.value
    assert Path(err.source).name == file
    assert err.where == where
    assert problem in err.problem
    assert str(err).startswith(f"{err.source}: line {where}: ")


def test_direct_input_error_missing_file_and_folder(toy_folder, tmp_path):
    (toy_folder / "toy" / "placements.csv").unlink()
    with pytest.raises(InputError, match="placements.csv: file is missing"):
        MeasuredProfile(toy_folder / "toy")
    with pytest.raises(InputError, match="does not exist"):
        load_measured_profiles(tmp_path / "nowhere")


def test_direct_input_error_epoch_count_mismatch(toy_folder):
    edit_line(toy_folder / "toy" / "validation-16.csv", 3, None)
    with pytest.raises(InputError, match="disagree on the number of epochs"):
        MeasuredProfile(toy_folder / "toy")


PROGRESS_CASES = {
    "reversed": "20.0,20,0.5,4.0,1.0\n10.0,10,0.7,2.0,3.0\n",
    "negated": "-10.0,10,0.5,4.0,1.0\n-20.0,20,0.7,2.0,3.0\n",
    "all zero": "0.0,10,0.5,4.0,1.0\n0.0,20,0.7,2.0,3.0\n",
    "flat iterations": "10.0,10,0.5,4.0,1.0\n20.0,10,0.7,2.0,3.0\n",
}


@pytest.mark.parametrize("case", sorted(PROGRESS_CASES))
def test_progress_must_increase(case, toy_folder):
    path = toy_folder / "toy" / "validation-8.csv"
    path.write_text("progress,iteration,metric,grad_sqr,grad_var\n" + PROGRESS_CASES[case])
    with pytest.raises(InputError) as info:
        MeasuredProfile(toy_folder / "toy")
    assert "validation-8.csv" in str(info.value)
    assert "must be positive and increase with the epoch" in str(info.value)


def test_absurd_batch_in_placements_is_refused(toy_folder):
    path = toy_folder / "toy" / "placements.csv"
    edit_line(path, 2, "1,1e308,0.1,0.01")
    with pytest.raises(InputError) as info:
        MeasuredProfile(toy_folder / "toy")
    assert "placements.csv: line 2: column 'local_bsz' must be a whole batch size" in str(
        info.value
    )


def test_repeated_measurement_is_refused(toy_folder):
    path = toy_folder / "toy" / "placements.csv"
    lines = path.read_text().splitlines()
    path.write_text("\n".join([*lines, lines[1]]) + "\n")
    with pytest.raises(InputError) as info:
        MeasuredProfile(toy_folder / "toy")
    assert "placements.csv: line" in str(info.value) and "repeats the measurement" in str(
        info.value
    )
