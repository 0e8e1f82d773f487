"""The two seed toys' tables pinned (`toy tail-weighted`, with and without --seed-setting, and
`toy critical-batch` on the bundled and the measured profiles), plus relations that must hold
whatever the numbers.

The pinned literals were measured by running the code (issue 19). What would legitimately move
them: for tail-weighted, a change to ``learning_rates``, ``tail_coefficients``,
``clipped_batches`` or ``rounded_batches`` (or to ``STAGE1_SETTING``); for critical-batch, a
change to the bundled profiles or reference traces, the profile interpolation, the gain model,
the fit (``fit_critical_batch``, its start or the solver) or the fitted batches.
"""

from __future__ import annotations

import itertools
import json

import numpy as np
import pytest
from click.testing import CliRunner

from goodput_sim.cli import main
from goodput_sim.models import tail, tail_stage1
from goodput_sim.models.critical import fit_critical_batch
from goodput_sim.models.efficiency import noise_scale
from goodput_sim.models.limits import Limits
from goodput_sim.profiles import load_profiles
from goodput_sim.profiles.base import ApplicationProfile
from goodput_sim.profiles.critical import critical_batch_report, steps_and_examples_to_finish

RTOL = 1e-9  # tail-weighted objectives: closed-form arithmetic, deterministic
# critical-batch fits: an iterative least-squares solver, stopped at its default tolerances;
# its last digits differ between CPUs (bert's bundled profile-batch fit: 1.7e-6 apart between
# an AVX-512 and an AVX2 machine), so the pins hold to 1e-5.
FIT_RTOL = 1e-5

# ------------------------------------------------------------------------------ tail-weighted
# (schedule, B_1, B_tau, min, max, continuous, integer, static objective) at the default setting
# (64 steps, static batch 16, batches in [8, 64], constant noise). Measured.
TAIL_ROWS = [
    ("constant", 8, 64, 8, 64, 0.11698172828403393, 0.11703159857013631, 0.17900830949080526),
    ("step", 14, 8, 8, 60, 0.0730845879032142, 0.07310102427516169, 0.11136897671635665),
    ("cosine", 16, 8, 8, 19, 0.06761404332956357, 0.06764118748988895, 0.07030382346028868),
]
# tail_stage1.STAGE1_SETTING's row and its distance from the seed's figures. Measured.
STAGE1_ROW = (26, 18, 8, 26, 0.022651090609243647, 0.022659989822981674, 0.02530414532887664)
STAGE1_DISTANCE = 4.001975828168414

# The default `toy tail-weighted` table, which --seed-setting must leave as it was.
DEFAULT_TABLE = """\
schedule  B_1  B_tau  range  objective   integer    static  vs static  int/cont
constant    8     64   8-64    0.11698   0.11703   0.17901    -34.65%   1.00043
    step   14      8   8-60   0.073085  0.073101   0.11137    -34.38%   1.00022
  cosine   16      8   8-19   0.067614  0.067641  0.070304     -3.83%   1.00040

64 steps, budget 1024 examples (static batch 16), batches in [8, 64], constant noise; \
objective = sum_t c_t s_t / B_t.
"""


def _ints_and_objectives(row: dict) -> tuple:
    return (
        row["first_batch"],
        row["last_batch"],
        row["min_batch"],
        row["max_batch"],
        row["objective"],
        row["integer_objective"],
        row["static_objective"],
    )


def _assert_row(got: tuple, want: tuple) -> None:
    assert got[:4] == want[:4]
    assert got[4:] == pytest.approx(want[4:], rel=RTOL, abs=0)


def test_tail_weighted_rows_pinned():
    rows = tail.tail_weighted_report()
    assert [r["schedule"] for r in rows] == [want[0] for want in TAIL_ROWS]
    for row, want in zip(rows, TAIL_ROWS, strict=True):
        _assert_row(_ints_and_objectives(row), want[1:])


def test_stage1_row_pinned_and_not_claimed_exact():
    report = tail_stage1.stage1_report()
    _assert_row(_ints_and_objectives(report["row"]), STAGE1_ROW)
    assert report["distance"] == pytest.approx(STAGE1_DISTANCE, rel=RTOL)
    assert report["integer_miss"] == 0
    # The closest found misses the seed's 1.00043 ratio, so it must not be called exact.
    assert report["matches"] is False
    assert "not an exact reproduction" in report["verdict"]
    assert "cannot be" in report["verdict"] and "recovered" in report["verdict"]
    assert set(tail.tail_weighted_report()[0]) <= set(report["row"])


def _schedules() -> list[tuple[dict, tail.TailSchedule]]:
    """Every pinned schedule with its setting: the three defaults and the stage-1 one."""
    out = []
    for schedule in tail.SCHEDULES:
        setting = dict(tail.SEED_SETTING)
        rates = tail.learning_rates(schedule, setting["steps"])
        budget = setting["steps"] * setting["static_batch"]
        out.append((setting, tail.plan(rates, 1.0, budget, setting["low"], setting["high"])))
    stage1 = tail_stage1.STAGE1_SETTING
    out.append((stage1, tail_stage1.stage1_schedule(stage1)))
    return out


@pytest.mark.parametrize("index", range(4))
def test_integer_schedules_spend_the_budget_within_bounds(index):
    setting, result = _schedules()[index]
    ints = result.integer_batches
    assert int(ints.sum()) == setting["steps"] * setting["static_batch"]
    assert setting["low"] <= ints.min() and ints.max() <= setting["high"]
    assert result.batches.sum() == pytest.approx(result.budget, rel=1e-12)
    assert result.objective <= result.integer_objective  # the continuous optimum is a bound
    assert result.objective <= result.static_objective()


def test_stage1_distance_and_match_of_the_published_figures():
    pub = tail_stage1.STAGE1_PUBLISHED
    assert tail_stage1.stage1_target_reduction() == pytest.approx(0.104466, abs=1e-6)
    # Its two objectives give 10.4466%, which rounds to 10.45%: the seed's "10.44%" truncates.
    assert f"{tail_stage1.stage1_target_reduction():.2%}" == "10.45%"
    assert pub["integer_reduction_vs_static"] == 0.1044
    row = {k: pub[k] for k in ("first_batch", "last_batch", "min_batch", "max_batch")}
    row |= {
        "integer_reduction_vs_static": tail_stage1.stage1_target_reduction(),
        "integer_over_continuous": pub["integer_over_continuous"],
    }
    assert tail_stage1.stage1_distance(row) == 0 and tail_stage1.stage1_matches(row)
    row["last_batch"] = 17
    assert tail_stage1.stage1_distance(row) == 1 and not tail_stage1.stage1_matches(row)


def _neighbourhood(radius: int = 2) -> list[dict]:
    """STAGE1_SETTING's neighbours on the finest search grid (floor, end, time constant steps
    0.0005, 0.0005, 0.05), itself first."""
    base = tail_stage1.STAGE1_SETTING
    offsets = sorted(
        itertools.product(range(-radius, radius + 1), repeat=3), key=lambda o: o != (0, 0, 0)
    )
    return [
        base
        | {
            "lr_floor": round(base["lr_floor"] + 0.0005 * i, 5),
            "noise_end": round(base["noise_end"] + 0.0005 * j, 5),
            "noise_time_constant": round(base["noise_time_constant"] + 0.05 * k, 3),
        }
        for i, j, k in offsets
    ]


def test_stage1_setting_is_best_in_its_search_neighbourhood():
    """The last round of the documented search, in small: no neighbour ranks better."""
    ranked = tail_stage1.stage1_search(_neighbourhood())
    assert len(ranked) == 125
    assert ranked[0][1] == tail_stage1.STAGE1_SETTING
    assert ranked[0][0] == (0, pytest.approx(STAGE1_DISTANCE, rel=RTOL))


def test_falling_noise_shapes():
    assert tail_stage1.falling_noise(5, "constant").tolist() == [1.0] * 5
    assert tail_stage1.falling_noise(5, "linear", 0.2) == pytest.approx([1, 0.8, 0.6, 0.4, 0.2])
    assert tail_stage1.falling_noise(3, "geometric", 0.25) == pytest.approx([1, 0.5, 0.25])
    exp = tail_stage1.falling_noise(64, "exponential", 0.1, 10.0)
    assert exp[0] == 1 and exp[-1] == pytest.approx(0.1 + 0.9 * np.exp(-6.3))
    with pytest.raises(ValueError):
        tail_stage1.falling_noise(5, "wavy")
    with pytest.raises(ValueError):
        tail_stage1.floored_learning_rates("cosine", 8, 1.0)


def test_cli_tail_weighted_default_table_unchanged():
    result = CliRunner().invoke(main, ["toy", "tail-weighted"])
    assert result.exit_code == 0, result.output
    assert result.output == DEFAULT_TABLE


def test_cli_tail_weighted_seed_setting():
    runner = CliRunner()
    data = json.loads(
        runner.invoke(main, ["toy", "tail-weighted", "--seed-setting", "--format", "json"]).output
    )
    assert data["setting"] == tail_stage1.STAGE1_SETTING
    assert data["published"] == tail_stage1.STAGE1_PUBLISHED
    _assert_row(_ints_and_objectives(data["row"]), STAGE1_ROW)
    assert data["matches"] is False
    table = runner.invoke(main, ["toy", "tail-weighted", "--seed-setting"])
    assert table.exit_code == 0, table.output
    assert "published" in table.output and "ours: cosine (floor 0.108)" in table.output
    assert "-10.447%" in table.output and "-10.449%" in table.output
    assert "not an exact reproduction" in table.output
    clash = runner.invoke(main, ["toy", "tail-weighted", "--seed-setting", "--steps", "32"])
    assert clash.exit_code == 2 and "--seed-setting" in clash.output
    assert "--steps" in clash.output and "Traceback" not in clash.output


# ----------------------------------------------------------------------------- critical batch
# application: (b_crit, extrapolated, b_crit_iterations, its extrapolated flag,
# b_crit_iterations at the profile's own batches). Measured.
BUNDLED = {
    "bert": (15576.302131607657, True, 15576.302131607657, True, 15228.306364172375),
    "cifar10": (5400.860130176198, True, 5400.860131654702, True, 5346.1761478133985),
    "deepspeech2": (1124.1720050674835, True, 1124.1720041269652, True, 1120.2735883315224),
    "imagenet": (18778.305738186104, True, 18778.305727326442, True, 19272.69231214416),
    "ncf": (1166726.8315093736, True, 1166726.8315093736, True, 1323982.454055057),
    "yolov3": (232.36948154810952, False, 232.36948154017276, False, 232.64852469619197),
}
MEASURED = {
    "bert": (15569.524130923748, True, 590370.411092072, True, 10760.528176045718),
    "cifar10": (5325.995723265988, True, 7055.5918694036955, True, 6311.681269170834),
    "deepspeech2": (1124.4558400195322, True, 1202.5116840245164, True, 1062.661689367705),
    "imagenet": (18326.965020597134, True, 22629.247916132583, True, 20639.492542681404),
    "ncf": (1166760.0840498246, True, 66726101172731.664, True, 1591108.6399451583),
    "yolov3": (233.35270636147106, False, 573.1950187263627, True, 529.690870985294),
}
# measured ncf at the 12 fit batches: no bend, S_min ~ 8e-7; a 1e-12 change in the counts moves
# this B_crit by ~1e-5, so it is pinned loosely (it is an artefact of an ill-determined fit).
# measured bert's iteration-count fit has a flat optimum 38x past its largest batch: restarts
# from nearby starting points land up to 1% apart, and two CPUs gave 590,370 and 590,318.
ILL_DETERMINED = {("measured", "ncf"): 1e-3, ("measured", "bert"): 2e-2}


def _check_rows(rows: list[dict], expected: dict, source: str) -> None:
    got = {r["application"]: r for r in rows}
    assert set(got) == set(expected)
    for name, (b_crit, extra, b_iter, iter_extra, b_own) in expected.items():
        row = got[name]
        assert row["b_crit"] == pytest.approx(b_crit, rel=FIT_RTOL)
        assert row["b_crit_extrapolated"] is extra
        rtol = ILL_DETERMINED.get((source, name), FIT_RTOL)
        assert row["b_crit_iterations"] == pytest.approx(b_iter, rel=rtol)
        assert row["b_crit_iterations_extrapolated"] is iter_extra
        assert row["b_crit_iterations_profile_batches"] == pytest.approx(b_own, rel=FIT_RTOL)


def _check_relations(rows: list[dict]) -> None:
    for row in rows:
        largest = row["max_batch_size"]
        assert row["b_crit_extrapolated"] is (row["b_crit"] > largest)
        assert row["b_crit_iterations_extrapolated"] is (row["b_crit_iterations"] > largest)
        assert row["b_crit_over_max"] == pytest.approx(row["b_crit"] / largest, rel=1e-12)
        assert row["b_crit"] == pytest.approx(row["e_min"] / row["s_min"], rel=1e-12)


@pytest.fixture(scope="module")
def bundled_rows() -> list[dict]:
    return critical_batch_report(load_profiles())


@pytest.fixture(scope="module")
def measured_rows(reference_dir) -> list[dict]:
    return critical_batch_report(load_profiles(reference_dir / "traces"))


def test_critical_batch_bundled_pinned(bundled_rows):
    _check_rows(bundled_rows, BUNDLED, "bundled")
    _check_relations(bundled_rows)
    # The bundled profiles derive their iteration counts from the same gain: the same fit.
    for row in bundled_rows:
        assert row["b_crit_iterations"] == pytest.approx(row["b_crit"], rel=FIT_RTOL)
    over = {r["application"]: r["b_crit_over_max"] for r in bundled_rows}
    assert over["bert"] > 40 and over["ncf"] > 35 and over["yolov3"] < 1


def test_critical_batch_measured_pinned(measured_rows):
    _check_rows(measured_rows, MEASURED, "measured")
    _check_relations(measured_rows)
    yolo = next(r for r in measured_rows if r["application"] == "yolov3")
    # The measured counts put yolov3's critical batch above 2x the gain model's.
    assert yolo["b_crit_iterations_profile_batches"] > 2 * yolo["b_crit"]


def test_cli_critical_batch_marks_extrapolation():
    runner = CliRunner()
    data = json.loads(runner.invoke(main, ["toy", "critical-batch", "--format", "json"]).output)
    _check_rows(data["rows"], BUNDLED, "bundled")
    table = runner.invoke(main, ["toy", "critical-batch"])
    assert table.exit_code == 0, table.output
    lines = {line.split()[0]: line for line in table.output.splitlines() if line.strip()}
    assert "1.558e+04*" in lines["bert"] and "40.6x" in lines["bert"]
    assert "232.4*" not in lines["yolov3"]
    assert "* B_crit beyond max B" in table.output and "close by construction" in table.output


class _FixedStatsProfile(ApplicationProfile):
    """Gradient statistics that do not depend on the batch: the fit must then be exact."""

    name = "fixed"
    limits = Limits(
        init_batch_size=8, max_batch_size=512, min_local_bsz=1, max_local_bsz=512, max_epochs=5
    )
    progress_thresholds = np.array([0.0, 100.0, 250.0, 400.0, 600.0, 900.0])
    sqr = np.array([5.0, 3.0, 2.0, 1.0, 0.5])
    var = np.array([1.0, 2.0, 4.0, 8.0, 16.0])

    def step_sync(self, placement, local_bsz):
        raise NotImplementedError

    def grad_stats(self, batch_size, epoch):
        return self.sqr[np.asarray(epoch)], self.var[np.asarray(epoch)]

    def iterations(self, batch_size, epoch):
        raise NotImplementedError


def test_gain_fit_is_exact_by_construction():
    """With batch-independent statistics the simulator's steps are exactly S_min (1 + B_crit/B):
    S_min = sum_e P_e sqr_e/(sqr_e + var_e), B_crit the S-weighted mean of B_noise."""
    profile = _FixedStatsProfile()
    batches = np.geomspace(8, 512, 12)
    fit = fit_critical_batch(*steps_and_examples_to_finish(profile, batches))
    needed = np.diff(profile.progress_thresholds)
    per_epoch = needed * profile.sqr / (profile.sqr + profile.var)
    b_noise = noise_scale(8, profile.sqr, profile.var)
    assert fit.rms_log_error < 1e-9
    assert fit.s_min == pytest.approx(per_epoch.sum(), rel=1e-7)
    assert fit.b_crit == pytest.approx(np.sum(per_epoch * b_noise) / per_epoch.sum(), rel=1e-7)
