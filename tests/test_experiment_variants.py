"""Variants in experiment files: named bundles of a cluster and settings that form one axis of
the grid (fixed clusters beside autoscaled ones), checked before any run, recorded in
summary.csv's ``variant`` column, and distinct in folder and run key."""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd
import pytest
from click.testing import CliRunner

from goodput_sim.api import bundled_workload
from goodput_sim.cli import main
from goodput_sim.errors import InputError
from goodput_sim.experiments.grid import load_experiment
from goodput_sim.experiments.sweep import ID_COLUMNS, Variant, run_grid

TWO = """
name: two
policies: [fifo]
workloads: [jobs.csv]
variants:
  fixed-2: {cluster: 2x4}
  queue: {cluster: 2x4, min_nodes: 1, max_nodes: 4, autoscaler: queue, node_price: 2.5}
"""


def _jobs(folder: Path, count: int = 3) -> Path:
    """The bundled workload's first ``count`` jobs as ``folder/jobs.csv``."""
    path = folder / "jobs.csv"
    pd.read_csv(bundled_workload()).iloc[:count].to_csv(path, index=False)
    return path


def _file(folder: Path, text: str, name: str = "exp.yaml") -> Path:
    _jobs(folder)
    path = folder / name
    path.write_text(text)
    return path


@pytest.fixture(scope="module")
def two_sweep(tmp_path_factory) -> Path:
    """TWO swept through the CLI on 3 jobs: its results folder."""
    folder = tmp_path_factory.mktemp("variants")
    path = _file(folder, TWO)
    out = folder / "out"
    result = CliRunner().invoke(main, ["sweep", str(path), "--out", str(out), "--quiet"])
    assert result.exit_code == 0, result.output
    return out


def test_variants_parse_into_one_axis(tmp_path):
    path = _file(
        tmp_path,
        """
policies: [fifo, tiresias]
workloads: [jobs.csv]
seeds: [0, 1]
clusters: [2x4, 3x4]
settings: {restart_delay: [10, 30], max_nodes: 8, min_nodes: 2}
variants:
  base: {}
  fixed: {cluster: 2x4, min_nodes: null, max_nodes: null}
  quick: {restart_delay: 5, autoscaler: queue, autoscaler_params: {cooldown: 3}}
""",
    )
    experiment = load_experiment(path)
    base, fixed, quick = experiment.variants
    assert [v.label for v in experiment.variants] == ["base", "fixed", "quick"]
    assert base.cluster is None and base.settings == ()
    assert str(fixed.cluster) == "2x4" and dict(fixed.settings) == {
        "min_nodes": None,
        "max_nodes": None,
    }
    assert dict(quick.settings) == {
        "restart_delay": 5.0,
        "autoscaler": "queue",
        "autoscaler_params": (("cooldown", 3),),
    }
    # base: 2 clusters x 2 delays; fixed: its cluster x 2 delays; quick: 2 clusters x its delay
    assert experiment.runs == 2 * 2 * (4 + 2 + 2)


def test_a_variant_bundle_may_name_a_cluster_file_beside_the_experiment(tmp_path):
    (tmp_path / "small.yaml").write_text("nodes: 2\ngpus_per_node: 4\n")
    path = _file(
        tmp_path, "policies: [fifo]\nworkloads: [jobs.csv]\nvariants: {s: {cluster: small.yaml}}\n"
    )
    assert str(load_experiment(path).variants[0].cluster) == "2x4"


@pytest.mark.parametrize(
    ("variants", "where", "message"),
    [
        ("[a, b]", "key variants", "must be a mapping"),
        ("{}", "key variants", "is an empty axis"),
        ("{8: {cluster: 8x4}}", "key variants.8", "a label must be"),
        ("{'a b': {}}", "key variants.a b", "a label must be"),
        ("{a: 3}", "key variants.a", "must be a mapping of cluster and settings"),
        ("{a: {clusters: 2x4}}", "key variants.a", "unknown key(s) ['clusters']"),
        ("{a: {interval: 30}}", "key variants.a", "swept by the intervals key"),
        ("{a: {restart_delay: [1, 2]}}", "key variants.a.restart_delay", "one value per variant"),
        ("{a: {restart_delay: -1}}", "key variants.a.restart_delay", "invalid value -1"),
        ("{a: {cluster: 2by4}}", "key variants.a.cluster", "expected NODESxGPUS"),
        ("{a: {cluster: 3}}", "key variants.a.cluster", "expected NODESxGPUS"),
        ("{a: {node_price: 2}}", "key variants.a", "need --min-nodes and --max-nodes"),
        ("{a: {min_nodes: 2}}", "key variants.a", "give both or neither"),
        ("{a: {failure_trace: gone.csv}}", "key variants.a.failure_trace", "no failure trace"),
        ("{a: {cluster: 2x4}, b: {cluster: 2x4}}", "key variants.b", "same runs as variant 'a'"),
        # the default cluster and the default rule, spelled out: the same runs
        ("{a: {}, b: {cluster: 16x4}}", "key variants.b", "same runs as variant 'a'"),
        (
            "{a: {cluster: 1x4, min_nodes: 1, max_nodes: 2}, "
            "b: {cluster: 1x4, min_nodes: 1, max_nodes: 2, autoscaler: utility}}",
            "key variants.b",
            "same runs as variant 'a'",
        ),
        ("\n  a: {cluster: 2x4}\n  a: {cluster: 3x4}", "line 5", "key 'a' appears twice"),
    ],
)
def test_bad_variants_get_one_line_naming_file_and_key(tmp_path, variants, where, message):
    path = _file(tmp_path, f"policies: [fifo]\nworkloads: [jobs.csv]\nvariants: {variants}\n")
    result = CliRunner().invoke(main, ["sweep", str(path), "--out", str(tmp_path / "o")])
    assert result.exit_code == 2, result.output
    lines = result.output.strip().splitlines()
    assert len(lines) == 1, lines
    assert str(path) in lines[0] and where in lines[0] and message in lines[0], lines[0]
    assert "Traceback" not in result.output
    assert not (tmp_path / "o").exists()


def test_a_file_without_variants_parses_as_before(tmp_path):
    path = _file(tmp_path, "policies: [fifo]\nworkloads: [jobs.csv]\nclusters: [2x4, 3x4]\n")
    experiment = load_experiment(path)
    assert experiment.variants is None and experiment.runs == 2


def test_the_two_variant_sweep_records_its_labels(two_sweep):
    summary = pd.read_csv(two_sweep / "summary.csv")
    assert list(summary.columns[: len(ID_COLUMNS) + 1]) == [
        *ID_COLUMNS[:3],
        "variant",
        *ID_COLUMNS[3:],
    ]
    assert list(summary["variant"]) == ["fixed-2", "queue"]
    assert list(summary["jobs"]) == [3, 3] and summary["run_key"].is_unique
    fixed, queue = summary.itertuples()
    assert json.loads(fixed.settings) == {} and pd.isna(fixed.cost)
    assert json.loads(queue.settings)["autoscaler"] == "queue" and queue.cost > 0


def test_each_variant_has_its_own_folder_and_its_settings_reach_the_run(two_sweep):
    folders = sorted(str(p.parent.relative_to(two_sweep)) for p in two_sweep.glob("*/*/jobs.csv"))
    assert folders == ["jobs-fixed-2/fifo-seed0", "jobs-queue/fifo-seed0"]
    fixed = json.loads((two_sweep / folders[0] / "manifest.json").read_text())
    queue = json.loads((two_sweep / folders[1] / "manifest.json").read_text())
    assert fixed["config"]["autoscale"] is None
    assert queue["config"]["autoscale"]["rule"] == "queue"
    assert queue["config"]["autoscale"]["max_nodes"] == 4
    assert fixed["run_key"] != queue["run_key"]
    record = json.loads((two_sweep / "sweep.json").read_text())["grid"]
    assert [v["label"] for v in record["variants"]] == ["fixed-2", "queue"]


def test_a_resumed_variant_sweep_writes_the_same_bytes(two_sweep):
    before = (two_sweep / "summary.csv").read_bytes()
    stamps = {p: p.stat().st_mtime_ns for p in two_sweep.glob("*/*/summary.json")}
    yaml = two_sweep.parent / "exp.yaml"
    result = CliRunner().invoke(main, ["sweep", str(yaml), "--out", str(two_sweep), "--quiet"])
    assert result.exit_code == 0, result.output
    assert (two_sweep / "summary.csv").read_bytes() == before
    assert {p: p.stat().st_mtime_ns for p in two_sweep.glob("*/*/summary.json")} == stamps


def test_a_sweep_without_variants_has_no_variant_column_or_label(tmp_path):
    path = _file(tmp_path, "policies: [fifo]\nworkloads: [jobs.csv]\nclusters: [2x4]\n")
    out = tmp_path / "o"
    result = CliRunner().invoke(main, ["sweep", str(path), "--out", str(out), "--quiet"])
    assert result.exit_code == 0, result.output
    summary = pd.read_csv(out / "summary.csv")
    assert "variant" not in summary.columns
    assert list(summary.columns[: len(ID_COLUMNS)]) == list(ID_COLUMNS)
    assert [str(p.parent.relative_to(out)) for p in out.glob("*/*/jobs.csv")] == [
        "jobs-2x4/fifo-seed0"
    ]
    assert "variants" not in json.loads((out / "sweep.json").read_text())["grid"]


def test_run_grid_refuses_variants_that_make_the_same_run(tmp_path):
    jobs = _jobs(tmp_path)
    twins = [Variant.of("a", "2x4"), Variant.of("b", "2x4", restart_delay=30)]
    with pytest.raises(InputError, match="'a' and 'b' make the same run"):
        run_grid([("fifo", None, {})], [jobs], tmp_path / "o", variants=twins, progress=False)
    with pytest.raises(InputError, match=r"label\(s\) \['a'\] appear twice"):
        run_grid(
            [("fifo", None, {})],
            [jobs],
            tmp_path / "o",
            variants=[Variant.of("a", "2x4"), Variant.of("a", "3x4")],
            progress=False,
        )
    with pytest.raises(InputError, match="label 'a/b'"):
        Variant.of("a/b")


def test_a_variant_replaces_the_settings_it_names_and_keeps_the_rest(tmp_path):
    """Folders drop what the label stands for; a swept setting the variant leaves alone stays
    an axis and in the folder name."""
    jobs = _jobs(tmp_path)
    table = run_grid(
        [("fifo", None, {})],
        [jobs],
        tmp_path / "o",
        clusters=["3x4"],
        settings={"restart_delay": [10, 20]},
        variants=[Variant.of("small", "2x4"), Variant.of("slow", restart_delay=60)],
        progress=False,
    )
    assert list(zip(table["variant"], table["cluster"], table["settings"], strict=True)) == [
        ("small", "2x4", '{"restart_delay": 10.0}'),
        ("small", "2x4", '{"restart_delay": 20.0}'),
        ("slow", "3x4", '{"restart_delay": 60.0}'),
    ]
    folders = sorted(
        str(p.parent.relative_to(tmp_path / "o")) for p in (tmp_path / "o").glob("*/*/jobs.csv")
    )
    assert folders == [
        "jobs-slow-3x4/fifo-seed0",
        "jobs-small-restart_delay=10/fifo-seed0",
        "jobs-small-restart_delay=20/fifo-seed0",
    ]


def test_a_generated_job_too_large_for_a_variant_is_refused_before_any_run(tmp_path):
    path = tmp_path / "exp.yaml"
    path.write_text(
        "policies: [fifo]\nworkloads: [{generate: {jobs: 40, hours: 1}, name: g}]\n"
        "variants: {tiny: {cluster: 1x1}}\n"
    )
    result = CliRunner().invoke(main, ["sweep", str(path), "--out", str(tmp_path / "o")])
    assert result.exit_code == 2, result.output
    assert "workload g: seed 0 (load 1) draws a job of" in result.output
    assert "cluster 1x1" in result.output
    assert not list((tmp_path / "o").glob("*/*"))
