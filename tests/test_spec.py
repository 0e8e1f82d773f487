"""The run specification: every engine setting is declared once, and the CLI options, the
``--config`` and experiment-file keys, SimConfig's checks and the manifest's replay all follow
that declaration."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import click
import pytest
import yaml
from click.testing import CliRunner

from goodput_sim import jsonio
from goodput_sim.autoscale import AutoscaleConfig
from goodput_sim.cli import main
from goodput_sim.errors import InputError
from goodput_sim.experiments.grid import load_experiment
from goodput_sim.inputs.failures import Failure, FailureModel
from goodput_sim.spec import (
    BY_NAME,
    SETTINGS,
    SimConfig,
    build_config,
    config_from_record,
    run_key,
    values_of,
    with_settings,
)

SMALL = (
    "name,time,application,num_replicas,batch_size\n"
    "ncf-0,0,ncf,1,32768\ncifar10-1,30,cifar10,4,2048\nncf-2,60,ncf,1,32768\n"
)
INPUTS = {"config", "workload", "profiles", "cluster", "seed", "agent", "params", "manifest"}
INPUTS |= {"policy", "policies", "out", "force", "quiet", "format", "fmt", "workers", "plot"}

# A value other than the default for every setting.
OTHER = {
    "interval": 120.0,
    "restart_delay": 10.0,
    "interference": 0.25,
    "horizon": 900.0,
    "oracle": True,
    "max_wall": 600.0,
    "stall_hours": 48.0,
    "max_events": 30_000_000,
    "placement_order": "node",
    "progress": "lr-aware",
    "lr_schedule": "cifar10:constant,bert:cosine(floor=0.1)",
    "lr_descent": 3.0,
    "seed_objective": True,
    "tail_geometry": "steps",
    "mtbf": 24.0,
    "repair_hours": 2.0,
    "repair": "exponential",
    "failure_trace": "trace.csv",
    "checkpoint_interval": 600.0,
    "checkpoint_seconds": 30.0,
    "reallocation_checkpoint": "charged",
    "job_crash_hours": 48.0,
    "lifetime": "weibull",
    "weibull_shape": 1.5,
    "min_nodes": 2,
    "max_nodes": 4,
    "autoscaler": "queue",
    "startup_delay": 60.0,
    "node_price": 2.5,
    "autoscaler_params": {"slack_nodes": 1},
    "crashes": False,
}


def _beside(name: str) -> dict:
    """The settings ``name`` needs beside it to take effect (failures on, autoscaling on)."""
    group = BY_NAME[name].group
    if name == "tail_geometry":  # the steps geometry is lr-aware's
        return {"progress": "lr-aware"}
    if group == "failures" and name not in ("mtbf", "failure_trace", "job_crash_hours"):
        return {"mtbf": 12.0}
    if group == "autoscale":
        return {"min_nodes": 1, "max_nodes": 3} | (
            {"autoscaler": "queue"} if name == "autoscaler_params" else {}
        )
    return {}


def test_every_setting_has_a_value_in_this_test():
    assert set(OTHER) == {s.name for s in SETTINGS}


@pytest.mark.parametrize("command", ["run", "compare"])
def test_the_engine_options_are_exactly_the_declared_settings(command):
    params = {p.name: p for p in main.commands[command].params}
    options = {s.name: s for s in SETTINGS if s.option}
    assert set(params) - INPUTS == set(options)
    for name, setting in options.items():
        assert params[name].opts == [setting.flag]
        assert params[name].default == setting.default


def test_the_declared_ranges_are_the_ones_simconfig_enforces():
    for setting in SETTINGS:
        if setting.group is not None or setting.kind not in (float, int):
            continue
        for bound, is_open, step in (
            (setting.low, setting.open_low, -1),
            (setting.high, setting.open_high, 1),
        ):
            if bound is None:
                continue
            outside = bound if is_open else bound + step * max(1.0, abs(bound) * 1e-9)
            with pytest.raises(InputError) as error:
                SimConfig(**{setting.field: outside})
            assert str(error.value).startswith(f"{setting.name}: ")  # Python: the argument
            assert error.value.cli_text().startswith(f"{setting.flag}: ")  # the CLI: the flag
            if not is_open:
                SimConfig(**{setting.field: bound})


@pytest.mark.parametrize(
    "setting", [s for s in SETTINGS if s.group is not None and s.kind in (float, int)]
)
def test_nested_ranges_are_the_ones_their_classes_enforce(setting):
    """Failure and autoscaling fields are checked by FailureModel and AutoscaleConfig (whose
    messages name the option); the declared range must be theirs."""
    base = {"mtbf": 5.0} if setting.group == "failures" else {"min_nodes": 1, "max_nodes": 4}
    step = 1 if setting.kind is int else 0.5
    for bound, is_open, sign in (
        (setting.low, setting.open_low, -1),
        (setting.high, setting.open_high, 1),
    ):
        if bound is None:
            continue
        outside = bound if is_open else bound + sign * step
        inside = bound - sign * step if is_open else bound
        with pytest.raises(InputError):
            build_config({**base, setting.name: outside})
        build_config({**base, setting.name: inside})


def test_a_recorded_config_rebuilds_exactly():
    """The manifest records ``asdict`` of the config; its replay rebuilds the same config, and
    the flat settings of a config build it back."""
    config = SimConfig(
        interval=120.0,
        restart_delay=10.0,
        interference=0.25,
        horizon=900.0,
        oracle=True,
        placement_order="node",
        max_wall=60.0,
        failures=FailureModel(None, 2.0, "exponential", (Failure(10.0, 1, 60.0),), 7),
        checkpoint_interval=600.0,
        autoscale=AutoscaleConfig(1, 4, "queue", (("slack_nodes", 1),), 60.0, 2.5),
    )
    record = json.loads(jsonio.dumps(dataclasses.asdict(config)))
    assert config_from_record(record) == config
    assert build_config(values_of(config), seed=7) == config
    # A setting this version does not know may have changed the results: not a replay.
    with pytest.raises(InputError, match="unknown key.*from_a_later_version"):
        config_from_record({**record, "from_a_later_version": 1})
    with pytest.raises(InputError, match="config.failures: unknown key"):
        config_from_record({**record, "failures": {"bogus": 1}})
    with pytest.raises(InputError, match="config.interval"):
        config_from_record({**record, "interval": "abc"})
    assert build_config({}) == SimConfig()


def test_applying_settings_changes_only_the_fields_they_touch():
    scale = AutoscaleConfig(1, 4, "utility", (("low", "0.4"),))
    config = SimConfig(interval=30, autoscale=scale)
    changed = with_settings(config, {"mtbf": 12.0}, seed=3)
    assert changed.failures == FailureModel(12.0, seed=3)
    assert changed.autoscale is scale and changed.interval == 30  # untouched, not rebuilt
    assert with_settings(config, {}) is config


def _run_key(**change) -> str:
    from goodput_sim.inputs.cluster import ClusterSpec

    inputs = dict(
        policy="fifo",
        agent=None,
        params={},
        workload={"file_sha256": "a", "load": 1.0},
        profiles="b",
        cluster=ClusterSpec.uniform(4, 4, "aws"),
        config=SimConfig(),
        seed=0,
    )
    return run_key(**{**inputs, **change})


def test_the_run_key_changes_with_every_input():
    from goodput_sim.inputs.cluster import ClusterSpec

    same = _run_key()
    assert _run_key() == same
    for change in (
        {"policy": "tiresias"},
        {"agent": "fixed"},
        {"params": {"p": -1}},
        {"workload": {"file_sha256": "c", "load": 1.0}},
        {"workload": {"file_sha256": "a", "load": 2.0}},
        {"profiles": "d"},
        {"cluster": ClusterSpec.uniform(4, 4, "rtx")},
        {"cluster": ClusterSpec.uniform(2, 8, "aws")},
        {"seed": 1},
        {"config": SimConfig(failures=FailureModel(trace=(Failure(1.0, 0, 5.0),)))},
        {"config": SimConfig(failures=FailureModel(trace=(Failure(1.0, 0, 6.0),)))},
    ):
        assert _run_key(**change) != same, change


@pytest.mark.parametrize("name", sorted(OTHER))
def test_the_run_key_changes_with_every_setting(name, tmp_path):
    value = str(_trace(tmp_path)) if name == "failure_trace" else OTHER[name]
    base = build_config(_beside(name))
    changed = build_config({**_beside(name), name: value}, nodes=4)
    assert changed != base
    assert _run_key(config=changed) != _run_key(config=base)


def _trace(folder: Path) -> Path:
    path = folder / "trace.csv"
    path.write_text("time,node,duration\n100,0,600\n")
    return path


@pytest.mark.parametrize("name", sorted(OTHER))
def test_every_setting_is_an_experiment_file_key(name, tmp_path):
    (tmp_path / "jobs.csv").write_text(SMALL)
    _trace(tmp_path)
    settings = {**_beside(name), name: OTHER[name]}
    path = tmp_path / "e.yaml"
    if name == "interval":
        path.write_text("policies: [fifo]\nworkloads: [jobs.csv]\nintervals: [120]\n")
        assert load_experiment(path).intervals == [120.0]
        return
    path.write_text(f"policies: [fifo]\nworkloads: [jobs.csv]\nsettings: {json.dumps(settings)}\n")
    if name == "failure_trace":
        settings[name] = str(tmp_path / "trace.csv")  # read from the experiment's folder
    expected = build_config(settings, nodes=16)
    assert load_experiment(path).config == expected != build_config(_beside(name))


def test_settings_given_as_lists_are_axes(tmp_path):
    (tmp_path / "jobs.csv").write_text(SMALL)
    path = tmp_path / "e.yaml"
    path.write_text(
        "policies: [fifo]\nworkloads: [jobs.csv]\nseeds: [0, 1]\n"
        "settings: {restart_delay: [10, 20, 30], oracle: [false, true], mtbf: 5}\n"
    )
    experiment = load_experiment(path)
    assert experiment.runs == 2 * 3 * 2
    assert experiment.settings == {
        "restart_delay": [10.0, 20.0, 30.0],
        "oracle": [False, True],
        "mtbf": [5.0],
    }
    assert experiment.config.failures == FailureModel(5.0)


def test_every_setting_is_a_config_file_key(tmp_path):
    """One ``--config`` file sets every setting (failures by MTBF); the manifest records the
    config the declarations build from them."""
    (tmp_path / "jobs.csv").write_text(SMALL)
    apart = ("failure_trace", "max_wall", "progress", "seed_objective", "tail_geometry")
    # (the progress settings are refused with failures)
    values = {k: v for k, v in OTHER.items() if k not in apart}
    config = tmp_path / "run.yaml"
    config.write_text(
        json.dumps({"policy": "fifo", "workload": str(tmp_path / "jobs.csv"), **values})
    )
    out = tmp_path / "o"
    result = CliRunner().invoke(
        main, ["run", "--config", str(config), "--cluster", "2x4", "--out", str(out), "--quiet"]
    )
    assert result.exit_code == 0, result.output
    manifest = json.loads((out / "manifest.json").read_text())
    wanted = build_config({**values, "autoscaler_params": {"slack_nodes": "1"}})  # as text
    assert config_from_record(manifest["config"]) == wanted


def test_progress_settings_are_config_file_keys(tmp_path):
    """The progress settings are refused with failures, so they get a run of their own."""
    (tmp_path / "jobs.csv").write_text(SMALL)
    names = ("progress", "lr_schedule", "lr_descent", "seed_objective", "tail_geometry")
    values = {k: OTHER[k] for k in names}
    config = tmp_path / "run.yaml"
    config.write_text(
        json.dumps({"policy": "fifo", "workload": str(tmp_path / "jobs.csv"), **values})
    )
    out = tmp_path / "o"
    result = CliRunner().invoke(
        main, ["run", "--config", str(config), "--cluster", "2x4", "--out", str(out), "--quiet"]
    )
    assert result.exit_code == 0, result.output
    manifest = json.loads((out / "manifest.json").read_text())
    assert config_from_record(manifest["config"]) == build_config(values)


def _commands_with_config(group: click.Group = main, path: tuple[str, ...] = ()) -> list:
    """(command line words, command) of every command that takes ``--config``."""
    found = []
    for name, command in sorted(group.commands.items()):
        if isinstance(command, click.Group):
            found += _commands_with_config(command, (*path, name))
        elif any(p.name == "config" for p in command.params):
            found.append(((*path, name), command))
    return found


def _own_names(command: click.Command) -> list[tuple[str, click.Option]]:
    """Each option's own names: its long flags without dashes, ``_`` for ``-``."""
    return [
        (flag[2:].replace("-", "_"), option)
        for option in command.params
        if isinstance(option, click.Option) and option.name not in ("config", "manifest", "help")
        for flag in option.opts
        if flag.startswith("--")
    ]


def _other_value(name: str, option: click.Option) -> object:
    """A valid value for ``option`` in a config file, other than its default."""
    if name in OTHER:
        return OTHER[name]
    if option.is_flag:
        return not option.default
    if isinstance(option.type, click.Choice):
        return next(c for c in option.type.choices if c != option.default)
    if name == "param":
        return {"p": -1}
    if isinstance(option.type, click.types.IntParamType):
        return (option.default or 0) + 1
    return "other"


CONFIG_KEYS = [
    pytest.param(words, name, option, id=f"{' '.join(words)} {name}")
    for words, command in _commands_with_config()
    for name, option in _own_names(command)
]


def test_the_commands_with_config_files_are_found():
    assert {words for words, _ in _commands_with_config()} >= {("run",), ("compare",)}
    assert {"quiet", "force", "format", "param", "seed"} <= {p.values[1] for p in CONFIG_KEYS}


@pytest.mark.parametrize(("words", "name", "option"), CONFIG_KEYS)
def test_every_option_is_a_config_key_under_its_own_name(tmp_path, words, name, option):
    """``quiet: true``, ``force: true`` and ``format: json`` were refused (only the internal
    name ``fmt`` was read): every option of a command is a key of its ``--config`` file under
    the name it has on the command line, and sets what the option sets."""
    config = tmp_path / "c.yaml"
    config.write_text(yaml.safe_dump({name: _other_value(name, option)}))
    command = main
    for word in words:
        command = command.commands[word]
    context = command.make_context(" ".join(words), ["--config", str(config)])
    assert context.params[option.name] not in (option.default, None), (name, context.params)
