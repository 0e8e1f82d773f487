"""The toy models reproduce the seed document's numbers, and the CLI reports them."""

from __future__ import annotations

import json

import pytest
from click.testing import CliRunner

from goodput_sim.models import toy

TARGET = 1e-4


@pytest.fixture(scope="module")
def counter_rows() -> dict[int, toy.CounterexampleRow]:
    """Counterexample rows keyed by batch size."""
    return {r.batch: r for r in toy.counterexample()}


@pytest.fixture(scope="module")
def recurrence_rows() -> list[toy.RecurrenceRow]:
    """Default noisy-recurrence sweep: 3 sigmas x 8 batches."""
    return toy.noisy_recurrence()


def test_counterexample_needs_15_updates_for_any_batch(counter_rows):
    assert [r.updates for r in counter_rows.values()] == [15, 15]
    for r in counter_rows.values():
        assert r.final_loss <= TARGET
        assert 0.5 * 0.75 ** (2 * (r.updates - 1)) > TARGET  # one fewer update is not enough


def test_counterexample_time_examples_and_throughput(counter_rows):
    small, large = counter_rows[64], counter_rows[1024]
    assert round(small.seconds, 3) == 0.246
    assert round(large.seconds, 3) == 1.686
    assert (small.examples, large.examples) == (960, 15360)
    assert abs(small.examples_per_second - 3902) < 1
    assert abs(large.examples_per_second - 9110) < 1
    # The point of the example: the throughput winner is the time-to-target loser.
    assert large.examples_per_second > 2 * small.examples_per_second
    assert large.seconds > small.seconds


def test_counterexample_raises_when_lr_diverges():
    with pytest.raises(ValueError):
        toy.counterexample(batches=[64], lr=2.5, max_updates=50)


def test_loss_floor_comes_from_eta():
    assert toy.loss_floor(0.8, 512) == pytest.approx(0.64 / (14 * 512))
    assert toy.loss_floor(1.0, 1, eta=0.5) == pytest.approx(0.5 / 1.5 / 2)


def test_recurrence_fastest_per_sigma(recurrence_rows):
    fastest = toy.fastest_per_sigma(recurrence_rows)
    got = {s: (r.batch, round(r.seconds, 4)) for s, r in fastest.items()}
    assert got == {0.0: (16, 0.1740), 0.2: (32, 0.2508), 0.8: (512, 1.1628)}


def test_recurrence_keeps_every_pair_and_marks_unreachable(recurrence_rows):
    pairs = {(r.sigma, r.batch) for r in recurrence_rows}
    assert len(recurrence_rows) == 24
    assert pairs == {(s, b) for s in toy.DEFAULT_SIGMAS for b in toy.DEFAULT_RECURRENCE_BATCHES}
    for r in recurrence_rows:
        if r.floor >= TARGET:
            assert r.sigma > 0
            assert r.status == "unreachable"
            assert (r.updates, r.seconds, r.examples) == (None, None, None)
        else:
            assert r.status == "reached"
            assert r.seconds is not None and r.examples == r.updates * r.batch
    assert all(r.reached for r in recurrence_rows if r.sigma == 0.0)
    unreachable = {(r.sigma, r.batch) for r in recurrence_rows if r.status == "unreachable"}
    assert unreachable == {(0.2, 16), (0.8, 16), (0.8, 32), (0.8, 64), (0.8, 128), (0.8, 256)}


def test_recurrence_step_limit_is_distinct_from_unreachable():
    rows = toy.noisy_recurrence(sigmas=[0.8], batches=[512, 256], max_steps=5)
    assert [r.status for r in rows] == ["not_reached_within_limit", "unreachable"]
    assert rows[0].seconds is None and rows[0].updates is None


def test_cli_counterexample():
    from goodput_sim.cli import main

    runner = CliRunner()
    result = runner.invoke(main, ["toy", "counterexample", "--format", "json"])
    assert result.exit_code == 0, result.output
    rows = {r["batch"]: r for r in json.loads(result.output)["rows"]}
    assert rows[1024]["examples"] == 15360
    assert round(rows[64]["seconds"], 3) == 0.246
    table = runner.invoke(main, ["toy", "counterexample"])
    assert table.exit_code == 0, table.output
    assert "15360" in table.output


def test_cli_recurrence():
    from goodput_sim.cli import main

    runner = CliRunner()
    result = runner.invoke(main, ["toy", "recurrence", "--format", "json"])
    assert result.exit_code == 0, result.output
    data = json.loads(result.output)
    assert len(data["rows"]) == 24
    fastest = {f["sigma"]: (f["batch"], round(f["seconds"], 4)) for f in data["fastest"]}
    assert fastest[0.8] == (512, 1.1628)
    blocked = next(r for r in data["rows"] if (r["sigma"], r["batch"]) == (0.2, 16))
    assert blocked["status"] == "unreachable" and blocked["seconds"] is None
    table = runner.invoke(main, ["toy", "recurrence"])
    assert table.exit_code == 0, table.output
    assert "unreachable (floor" in table.output and "batch 512 in 1.1628 s" in table.output


# ------------------------------------------------------------------ seed 002 and 004 toys
def test_toy_critical_batch_json_and_table():
    from goodput_sim.cli import main

    runner = CliRunner()
    data = json.loads(runner.invoke(main, ["toy", "critical-batch", "--format", "json"]).output)
    rows = {r["application"]: r for r in data["rows"]}
    assert set(rows) == {"bert", "cifar10", "deepspeech2", "imagenet", "ncf", "yolov3"}
    for row in rows.values():
        assert row["noise_scale_end"] > row["noise_scale_start"] > 0
        assert row["growth"] == pytest.approx(row["noise_scale_end"] / row["noise_scale_start"])
        assert row["b_crit"] == pytest.approx(row["e_min"] / row["s_min"])
    table = runner.invoke(main, ["toy", "critical-batch"])
    assert table.exit_code == 0 and "cifar10" in table.output and "B_crit" in table.output


def test_toy_tail_weighted_json_and_table():
    from goodput_sim.cli import main

    runner = CliRunner()
    data = json.loads(runner.invoke(main, ["toy", "tail-weighted", "--format", "json"]).output)
    assert data["setting"] == {"steps": 64, "static_batch": 16, "low": 8, "high": 64}
    for row in data["rows"]:
        assert row["integer_over_continuous"] <= 1.001
        assert row["objective"] <= row["static_objective"]
        assert 8 <= row["min_batch"] <= row["max_batch"] <= 64
    table = runner.invoke(main, ["toy", "tail-weighted", "--steps", "32"])
    assert table.exit_code == 0 and "cosine" in table.output
    bad = runner.invoke(main, ["toy", "tail-weighted", "--static-batch", "100"])
    assert bad.exit_code == 2 and "--static-batch" in bad.output
