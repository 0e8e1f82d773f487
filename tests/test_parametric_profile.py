"""The bundled parametric profiles (traces/profiles/*.yaml): defined everywhere, validated on
load, faithful to the reference measurements and reproducible with `goodput-sim profiles fit`."""

from __future__ import annotations

import copy
import json
import shutil
from pathlib import Path

import numpy as np
import pytest
import yaml
from click.testing import CliRunner

from goodput_sim.errors import InputError
from goodput_sim.profiles import ParametricProfile, bundled_profiles_path, load_profiles

APPS = ("bert", "cifar10", "deepspeech2", "imagenet", "ncf", "yolov3")


@pytest.fixture(scope="module")
def bundled() -> dict[str, ParametricProfile]:
    return load_profiles()


def cli(*args: str):
    from goodput_sim.cli import main

    return CliRunner().invoke(main, list(args))


def spread(nodes: int, replicas: int) -> tuple[int, ...]:
    base, extra = divmod(replicas, nodes)
    return tuple(base + (1 if i < extra else 0) for i in range(nodes))


# ------------------------------------------------------------------------ bundled profiles
def test_bundled_profiles_cover_all_apps(bundled):
    assert sorted(bundled) == list(APPS)
    for name, profile in bundled.items():
        assert isinstance(profile, ParametricProfile)
        assert Path(profile.source) == bundled_profiles_path() / f"{name}.yaml"
    assert bundled["yolov3"].limits.max_local_bsz == 8
    assert bundled["bert"].progress_thresholds[1] == pytest.approx(7387.0)
    assert bundled["cifar10"].total_progress == pytest.approx(39062.9, abs=0.01)


PLACEMENTS = [(1,), (2,), (4,), (1, 3), (2, 2), (4, 4, 4, 4)]
PLACEMENTS += [spread(n, r) for n, r in [(5, 9), (6, 24), (9, 20), (16, 64), (17, 17), (40, 160)]]
PLACEMENTS += [(4,) * 64, (1,) * 100]


@pytest.mark.parametrize("app", APPS)
def test_step_sync_finite_and_positive_everywhere(app, bundled):
    profile = bundled[app]
    knots = profile._knot_bsz
    b = np.array([1.0, knots[0] / 2, knots[0], np.median(knots), knots[-1], 4 * knots[-1], 1e6])
    for placement in PLACEMENTS:
        step, sync = profile.step_sync(placement, b)
        assert step.shape == sync.shape == b.shape
        assert np.all(np.isfinite(step)) and np.all(step > 0), placement
        assert np.all(np.isfinite(sync)) and np.all(sync >= 0), placement
        assert np.all(sync <= step)
        # Beyond the largest knot compute time is extrapolated upwards.
        assert step[-1] > step[-2] > step[-3], placement
    # A single GPU has no gradient exchange; many GPUs across nodes do.
    assert np.all(profile.step_sync((1,), b)[1] == 0)
    assert np.all(profile.step_sync((4, 4), b)[1] > 0)


@pytest.mark.parametrize("app", APPS)
def test_grad_stats_and_iterations_finite_and_positive(app, bundled):
    profile = bundled[app]
    lim = profile.limits
    batches = np.array([1.0, lim.init_batch_size, lim.max_batch_size / 3, lim.max_batch_size, 1e7])
    epochs = np.array([0, lim.max_epochs // 2, lim.max_epochs - 1, lim.max_epochs + 5])
    sqr, var = profile.grad_stats(batches[:, None], epochs[None, :])
    assert sqr.shape == var.shape == (5, 4)
    for table in (sqr, var):
        assert np.all(np.isfinite(table)) and np.all(table > 0)
    iters = profile.iterations(batches[:, None], epochs[None, :])
    assert iters.shape == (5, 4)
    assert np.all(np.isfinite(iters)) and np.all(iters > 0)
    assert np.all(np.diff(iters, axis=1) >= 0)  # cumulative over epochs
    # Over the whole run, larger batches need fewer steps for the same progress.
    assert iters[1, 2] > iters[2, 2] > iters[3, 2]
    # Progress at M0 is counted in M0 steps: the first epoch takes P(1) iterations there.
    assert float(profile.iterations(lim.init_batch_size, 0)) == pytest.approx(
        profile.progress_thresholds[1], rel=1e-9
    )


def test_iterations_broadcast_like_the_measured_profile(bundled):
    profile = bundled["cifar10"]
    scalar = profile.iterations(256, 3)
    assert np.ndim(scalar) == 0
    row = profile.iterations(256, [0, 3, 99])
    assert row.shape == (3,)
    assert row[1] == scalar
    column = profile.iterations([128, 256, 512], 3)
    assert column.shape == (3,) and column[1] == scalar


@pytest.mark.parametrize("app", APPS)
def test_bundled_profiles_agree_with_measurements(app, bundled, measured_profiles):
    profile, truth = bundled[app], measured_profiles[app]
    assert profile.limits == truth.limits
    np.testing.assert_allclose(profile.progress_thresholds, truth.progress_thresholds, rtol=1e-7)
    np.testing.assert_array_equal(profile.batch_sizes, truth.batch_sizes)
    # Step times over every measured batch of a few placements: median error within 10%.
    for placement in [(1,), (2, 2), (4, 4, 4, 4)]:
        b = np.array(sorted(truth.placements["local_bsz"].unique()))
        b = b[(b >= truth.limits.min_local_bsz) & (b <= truth.limits.max_local_bsz)]
        ratio = profile.step_sync(placement, b)[0] / truth.step_sync(placement, b)[0]
        assert np.median(np.abs(ratio - 1)) <= 0.10, placement


# ------------------------------------------------------------------------ malformed profiles
@pytest.fixture()
def bert_data() -> dict:
    return yaml.safe_load((bundled_profiles_path() / "bert.yaml").read_text())


def write(tmp_path: Path, data: dict | None = None, text: str | None = None) -> Path:
    path = tmp_path / "broken.yaml"
    path.write_text(text if text is not None else yaml.safe_dump(data, sort_keys=False))
    return path


def load_error(path: Path) -> InputError:
    with pytest.raises(InputError) as info:
        ParametricProfile.from_yaml(path)
    assert info.value.source == str(path)
    return info.value


def test_malformed_yaml_names_file_and_line(tmp_path):
    path = write(tmp_path, text="application: bert\nlimits: {init_batch_size: 12\nthroughput: 3\n")
    err = load_error(path)
    assert "malformed YAML" in err.problem
    assert err.where == 3
    assert str(err).startswith(f"{path}: line 3: ")


@pytest.mark.parametrize(
    ("section", "key", "field"),
    [
        (None, "application", "application"),
        ("limits", "max_epochs", "limits.max_epochs"),
        ("throughput", "gamma", "throughput.gamma"),
        ("gradient_stats", "log_grad_var", "gradient_stats.log_grad_var"),
        ("progress", "thresholds", "progress.thresholds"),
    ],
)
def test_missing_field_names_file_and_field(tmp_path, bert_data, section, key, field):
    data = copy.deepcopy(bert_data)
    del (data[section] if section else data)[key]
    err = load_error(write(tmp_path, data))
    assert err.where == f"field {field}"
    assert field in str(err) and "missing" in err.problem


def test_missing_nested_field(tmp_path, bert_data):
    data = copy.deepcopy(bert_data)
    del data["throughput"]["network"]["time"]
    err = load_error(write(tmp_path, data))
    assert err.where == "field throughput.network.time"


@pytest.mark.parametrize(
    ("mutate", "field"),
    [
        (lambda d: d["gradient_stats"]["log_grad_sqr"].pop(), "gradient_stats"),
        (lambda d: [row.pop() for row in d["gradient_stats"]["log_grad_var"]], "gradient_stats"),
        (lambda d: d["gradient_stats"]["log_grad_sqr"][0].pop(), "gradient_stats.log_grad_sqr"),
        (lambda d: d["throughput"]["compute"]["accum_time"].pop(), "throughput.compute"),
        (lambda d: d["throughput"]["network"]["nodes"].pop(), "throughput.network"),
        (lambda d: d["progress"]["thresholds"].pop(), "progress.thresholds"),
        (
            lambda d: d["throughput"]["compute"].update(local_bsz=[[4, 6], [8, 11]]),
            "throughput.compute.local_bsz",
        ),
        (lambda d: d["throughput"]["gamma"].update(value="fast"), "throughput.gamma.value"),
        (lambda d: d["gradient_stats"].update(batch_sizes=[384, 192, 96, 48, 24, 12]), None),
        (lambda d: d["limits"].update(max_epochs="two"), "limits"),
    ],
)
def test_wrong_shaped_or_invalid_table(tmp_path, bert_data, mutate, field):
    data = copy.deepcopy(bert_data)
    mutate(data)
    err = load_error(write(tmp_path, data))
    expected = field or "gradient_stats.batch_sizes"
    assert err.where == f"field {expected}"
    assert str(err).startswith(f"{tmp_path / 'broken.yaml'}: field {expected}: ")


def test_not_a_mapping_and_not_text(tmp_path):
    err = load_error(write(tmp_path, text="- just\n- a list\n"))
    assert "mapping" in err.problem
    path = tmp_path / "binary.yaml"
    path.write_bytes(b"\xff\xfe\x00application")
    with pytest.raises(InputError, match="binary.yaml"):
        ParametricProfile.from_yaml(path)
    with pytest.raises(InputError, match="file not found"):
        ParametricProfile.from_yaml(tmp_path / "absent.yaml")


def test_cli_bad_profile_is_one_line(tmp_path, bert_data):
    data = copy.deepcopy(bert_data)
    data["gradient_stats"]["log_grad_sqr"].pop()
    path = write(tmp_path, data)
    result = cli("profiles", "show", "--profiles", str(path))
    assert result.exit_code == 2
    assert "Traceback" not in result.output
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and str(path) in lines[0] and "gradient_stats" in lines[0]


def test_cli_check_with_bad_profile_is_one_line(reference_dir, tmp_path, bert_data):
    data = copy.deepcopy(bert_data)
    del data["throughput"]["gamma"]
    path = write(tmp_path, data)
    result = cli("profiles", "check", str(reference_dir / "traces"), "--profiles", str(path))
    assert result.exit_code == 2
    lines = result.output.strip().splitlines()
    assert len(lines) == 1 and str(path) in lines[0] and "throughput.gamma" in lines[0]


def test_network_table_on_one_line_still_answers(bert_data):
    """A profile fitted from single-node data has collinear (nodes, replicas) points; queries
    elsewhere must fall back to the nearest entry instead of failing to triangulate."""
    data = copy.deepcopy(bert_data)
    data["throughput"]["network"] = {"nodes": [1, 1, 1], "replicas": [2, 3, 4], "time": [0.1] * 3}
    data["throughput"]["network"]["nodes"] += [1, 1]
    data["throughput"]["network"]["replicas"] += [5, 6]
    data["throughput"]["network"]["time"] += [0.2, 0.3]
    profile = ParametricProfile(data, source="single-node.yaml")
    step, sync = profile.step_sync((4, 4, 4), np.array([4.0, 12.0]))
    assert np.all(np.isfinite(step)) and np.all(sync > 0)
    assert profile.network_time(1, 3) == pytest.approx(0.1)


# ------------------------------------------------------------------------ fit quality and refit
def test_check_against_reference_measurements(reference_dir):
    result = cli("profiles", "check", str(reference_dir / "traces"), "--format", "json")
    assert result.exit_code == 0, result.output
    report = json.loads(result.output[result.output.index("{") :])
    assert sorted(report) == list(APPS)
    for app, errors in report.items():
        assert errors["step_time_median"] <= 0.05, app
        assert errors["step_time_p90"] <= 0.15, app
        assert errors["efficiency_median"] <= 0.05, app


def test_refit_reproduces_the_bundled_profile(reference_dir, tmp_path):
    shutil.copytree(reference_dir / "traces" / "bert", tmp_path / "meas" / "bert")
    result = cli("profiles", "fit", str(tmp_path / "meas"), "-o", str(tmp_path / "out"))
    assert result.exit_code == 0, result.output
    fresh = yaml.safe_load((tmp_path / "out" / "bert.yaml").read_text())
    shipped = yaml.safe_load((bundled_profiles_path() / "bert.yaml").read_text())
    assert fresh["limits"] == shipped["limits"]
    for part in ("compute", "network", "gamma"):
        for key, value in shipped["throughput"][part].items():
            np.testing.assert_allclose(
                fresh["throughput"][part][key], value, rtol=2e-5, err_msg=f"{part}.{key}"
            )
    np.testing.assert_allclose(
        fresh["progress"]["thresholds"], shipped["progress"]["thresholds"], rtol=1e-8
    )
    for key in ("log_grad_sqr", "log_grad_var"):
        np.testing.assert_allclose(
            fresh["gradient_stats"][key], shipped["gradient_stats"][key], rtol=1e-4
        )


@pytest.mark.parametrize(
    ("key", "value", "expected"),
    [
        ("max_epochs", float("inf"), "limits must be integers"),
        ("min_local_bsz", 0, "field limits.min_local_bsz: must be an integer in [1, 1e+09]"),
        ("init_batch_size", -128, "field limits.init_batch_size: must be an integer in [1"),
        ("max_local_bsz", 1, "field limits.min_local_bsz: must not exceed max_local_bsz"),
        ("max_batch_size", 1e21, "must be an integer in [1, 1e+09]"),
        ("init_batch_size", 12.5, "limits must be integers"),
    ],
)
def test_profile_limits_are_validated(key, value, expected, tmp_path, bert_data):
    data = copy.deepcopy(bert_data)
    data["limits"][key] = value
    assert expected in str(load_error(write(tmp_path, data)))


def test_two_profiles_of_one_application_are_refused(tmp_path, bert_data):
    from goodput_sim.profiles.parametric import load_parametric_profiles

    for name in ("a.yaml", "b.yaml"):
        (tmp_path / name).write_text(yaml.safe_dump(bert_data, sort_keys=False))
    with pytest.raises(InputError) as info:
        load_parametric_profiles(tmp_path)
    assert "b.yaml" in str(info.value) and "'bert' is also defined by" in str(info.value)


@pytest.mark.parametrize(
    ("mutate", "expected"),
    [
        (lambda d: d.update(schema_version=float("inf")), "field schema_version: must be 1"),
        (lambda d: d.update(schema_version=[1, 2]), "field schema_version: must be 1"),
        (lambda d: d.update(application=float("inf")), "field application: must be an application"),
        (lambda d: d.update(application=""), "field application: must be an application"),
        (
            lambda d: d["gradient_stats"]["log_grad_var"][0].__setitem__(0, 1e308),
            "log statistics must lie within (-700, 700)",
        ),
        (
            lambda d: d["throughput"]["network"].update(
                nodes=list(reversed(d["throughput"]["network"]["nodes"]))
            ),
            "at least one GPU per node (replicas >= nodes)",
        ),
    ],
)
def test_profile_fields_the_corpus_found(mutate, expected, tmp_path, bert_data):
    data = copy.deepcopy(bert_data)
    mutate(data)
    assert expected in str(load_error(write(tmp_path, data)))


def test_fit_never_replaces_profiles_without_force(reference_dir, tmp_path):
    shutil.copytree(reference_dir / "traces" / "bert", tmp_path / "meas" / "bert")
    out = tmp_path / "out"
    out.mkdir()
    (out / "bert.yaml").write_text("keep: me\n")
    result = cli("profiles", "fit", str(tmp_path / "meas"), "-o", str(out))
    assert result.exit_code == 2 and "pass --force to replace profiles" in result.output
    assert (out / "bert.yaml").read_text() == "keep: me\n"
    missing_out = cli("profiles", "fit", str(tmp_path / "meas"))
    assert missing_out.exit_code == 2 and "--out" in missing_out.output
