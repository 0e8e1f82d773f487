"""The plugin API end to end: the example plugin (examples/goodput-sim-example-plugin) is
installed with pip into a folder of its own, and processes that see it list its policy, agent
and dynamic and run them through every command that takes a policy. This process never
imports the plugin: installing one changes nothing here.

The entry-point machinery itself (a broken plugin, a plugin taking a built-in name, loading
once) is tested in this process with entry points of its own, the registries restored after."""

from __future__ import annotations

import importlib.util
import io
import json
import os
import re
import subprocess
import sys
from importlib.metadata import EntryPoint
from pathlib import Path

import pandas as pd
import pytest

from goodput_sim import api, plugins
from goodput_sim.agents import base as agent_base
from goodput_sim.errors import InputError
from goodput_sim.policies import base as policy_base
from goodput_sim.sim import dynamics as dynamics_module
from goodput_sim.sim.dynamics import Dynamic, named_dynamic, plugin_dynamics

ROOT = Path(__file__).resolve().parents[1]
PLUGIN = ROOT / "examples" / "goodput-sim-example-plugin"
DIST = "goodput-sim-example-plugin"
WORKLOAD = """name,time,application,num_replicas,batch_size
cifar10-a,0,cifar10,8,2048
ncf-b,60,ncf,1,32768
yolov3-c,120,yolov3,4,64
cifar10-d,180,cifar10,2,2048
ncf-e,240,ncf,1,32768
"""


def _builds_wheels() -> bool:
    """Whether this environment can build the plugin's wheel without downloading anything."""
    from importlib.metadata import version

    major, minor = (int(part) for part in version("setuptools").split(".")[:2])
    return (major, minor) >= (70, 1) or importlib.util.find_spec("wheel") is not None


@pytest.fixture(scope="module")
def installed(tmp_path_factory) -> dict[str, str]:
    """The example plugin installed into a folder of its own; the environment of a process
    that sees it beside this checkout and this environment's packages."""
    target = tmp_path_factory.mktemp("plugin")
    command = [sys.executable, "-m", "pip", "install", "--quiet", "--no-deps"]
    # setuptools 70.1 and later build wheels themselves (the dev extra asks for 77); an older
    # one needs the wheel package, or pip builds in an isolated environment it downloads.
    if _builds_wheels():
        command.append("--no-build-isolation")
    subprocess.run(
        [*command, "--target", str(target), str(PLUGIN)],
        check=True,
        capture_output=True,
        env={**os.environ, "PIP_DISABLE_PIP_VERSION_CHECK": "1"},
    )
    assert list(target.glob("goodput_sim_example_plugin-*.dist-info"))
    path = os.pathsep.join(p for p in (str(ROOT), str(target), os.environ.get("PYTHONPATH")) if p)
    return {**os.environ, "PYTHONPATH": path}


def _entry(listing: str, name: str) -> list[str]:
    """The lines of ``name``'s entry in ``goodput-sim policies``."""
    lines = listing.splitlines()
    start = next(k for k, line in enumerate(lines) if line.startswith(f"  {name}: "))
    end = next(
        (k for k in range(start + 1, len(lines)) if not lines[k].startswith("    ")), len(lines)
    )
    return lines[start:end]


# Every command in one process (each through the CLI's own entry, as `goodput-sim` runs
# them), so that the test pays for one start-up of the package and its plugin.
SCRIPT = """
import json, sys
from click.testing import CliRunner
from goodput_sim.cli import main
out = {}
for key, args in json.loads(sys.argv[1]).items():
    result = CliRunner().invoke(main, args)
    out[key] = [result.exit_code, result.output]
from goodput_sim import api
from goodput_sim.sim.dynamics import named_dynamic
maintenance = named_dynamic("rolling-maintenance", {"start_hours": 0.02, "hours": 0.25})
hit = api.run("fifo", "w.csv", cluster="2x4", dynamics=[maintenance])
out["maintenance"] = [
    int(hit.jobs["maintenance_stops"].sum()), hit.cluster_summary["maintenance_node_hours"]
]
out["fifo_jobs"] = api.run("fifo", "w.csv", cluster="2x4").jobs.to_csv(index=False)
print(json.dumps(out))
"""
SMALL = ["--workload", "w.csv", "--cluster", "2x4"]
COMMANDS = {
    "policies": ["policies"],
    "policies-json": ["policies", "--format", "json"],
    "run": ["run", "--policy", "smallest-job-first", "--param", "max_gpus=4",
            "--agent", "linear-scaling", "--param", "base_gpus=2", *SMALL, "--out", "run"],
    "replay": ["run", "--manifest", "run/manifest.json", "--out", "replayed"],
    "compare": ["compare", "--policies", "fifo,smallest-job-first", *SMALL,
                "--workers", "1", "--out", "compare"],
    "sweep": ["sweep", "--policies", "smallest-job-first,fifo", "--workloads", "w.csv",
              "--cluster", "2x4", "--workers", "1", "--quiet", "--out", "sweep"],
    "experiment-file": ["sweep", "e.yaml", "--workers", "1", "--quiet", "--out", "swept"],
    "report": ["report", "sweep"],
    "limited-adaptivity": ["experiment", "limited-adaptivity",
                           "--policies", "smallest-job-first,fifo", "--workloads", "w.csv",
                           "--cluster", "2x4", "--shares", "0,1", "--workers", "1",
                           "--out", "limited"],
}  # fmt: skip
EXPERIMENT = """name: plugin
policies:
  - fifo
  - {policy: smallest-job-first, agent: linear-scaling, params: {max_gpus: 4, base_gpus: 2}}
workloads: [w.csv]
clusters: [2x4]
"""


@pytest.fixture(scope="module")
def ran(installed, tmp_path_factory) -> tuple[Path, dict]:
    """Every command run once with the plugin installed: the folder and what each gave."""
    folder = tmp_path_factory.mktemp("runs")
    (folder / "w.csv").write_text(WORKLOAD)
    (folder / "e.yaml").write_text(EXPERIMENT)
    done = subprocess.run(
        [sys.executable, "-c", SCRIPT, json.dumps(COMMANDS)],
        env=installed,
        cwd=folder,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr
    out = json.loads(done.stdout.strip().splitlines()[-1])
    for key in COMMANDS:
        assert out[key][0] == 0, (key, out[key][1])
    return folder, out


def test_the_installed_plugin_is_listed_with_its_parameters(ran):
    _, out = ran
    text = out["policies"][1]
    for name, param in [
        ("smallest-job-first", "    --param max_gpus=16  (int in [1, 4096]) most GPUs one job"),
        ("linear-scaling", "    --param base_gpus=1  (int in [1, 4096]) GPUs the requested"),
        ("rolling-maintenance", "    hours=0.5  (float in [0.01, 10000]) how long each node"),
    ]:
        block = _entry(text, name)
        assert f"    installed by {DIST}" in block and param in "\n".join(block)
    data = json.loads(out["policies-json"][1])
    assert data["policies"]["smallest-job-first"]["plugin"] == DIST
    assert data["policies"]["fifo"]["plugin"] is None
    assert data["agents"]["linear-scaling"]["plugin"] == DIST
    assert data["dynamics"]["rolling-maintenance"]["opt_in"] is True
    assert data["dynamics"]["checkpoints"]["opt_in"] is False


def test_run_and_replay_record_and_reproduce_the_plugin(ran):
    folder, _ = ran
    manifest = json.loads((folder / "run" / "manifest.json").read_text())
    assert manifest["policy"]["name"] == "smallest-job-first"
    assert manifest["agent"] == {"name": "linear-scaling", "base_gpus": 2}
    replayed = (folder / "replayed" / "jobs.csv").read_bytes()
    assert replayed == (folder / "run" / "jobs.csv").read_bytes()


def test_compare_aligns_a_long_policy_name(ran):
    _, out = ran
    lines = out["compare"][1].splitlines()
    header = next(line for line in lines if line.startswith("policy "))
    rows = [line for line in lines if line.startswith(("fifo ", "smallest-job-first "))][:2]
    assert len(rows) == 2
    column = header.index("avg JCT") + len("avg JCT")  # right-aligned cells end here
    for row in rows:
        assert row[column - 1] != " " and row[column] == " ", (header, row)


def test_sweeps_and_experiments_run_the_plugin(ran):
    folder, out = ran
    assert "smallest-job-first" in out["report"][1]
    for name in ("sweep", "swept"):
        summary = pd.read_csv(folder / name / "summary.csv")
        assert summary["policy"].str.contains("smallest-job-first").any(), summary
    limited = pd.read_csv(folder / "limited" / "report.csv")
    assert set(limited["policy"]) == {"smallest-job-first", "fifo"}


def test_the_dynamic_runs_where_named_and_installing_changes_no_other_run(ran):
    folder, out = ran
    stops, node_hours = out["maintenance"]
    assert stops >= 1 and node_hours == pytest.approx(2 * 0.25)
    here = api.run("fifo", folder / "w.csv", cluster="2x4").jobs.to_csv(index=False)
    assert out["fifo_jobs"] == here  # this process has no plugin


def test_the_examples_own_tests_pass(monkeypatch):
    """The plugin's tests (examples/.../tests, which the docs show), run here: they import its
    classes and register nothing."""
    monkeypatch.syspath_prepend(str(PLUGIN))
    path = PLUGIN / "tests" / "test_example.py"
    spec = importlib.util.spec_from_file_location("example_plugin_tests", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    tests = {name: test for name, test in vars(module).items() if name.startswith("test_")}
    assert len(tests) == 3
    for test in tests.values():
        marks = [m for m in getattr(test, "pytestmark", []) if m.name == "parametrize"]
        cases = [{marks[0].args[0]: value} for value in marks[0].args[1]] if marks else [{}]
        for case in cases:
            test(**case)


def test_limited_adaptivity_refuses_an_unknown_policy_with_a_hint(tmp_path):
    from click.testing import CliRunner

    from goodput_sim.cli import main

    result = CliRunner().invoke(
        main, ["experiment", "limited-adaptivity", "--policies", "goodputt", "--out", "x"]
    )
    assert result.exit_code == 2
    assert "--policies: unknown policy 'goodputt' (did you mean 'goodput'?)" in result.output
    assert not (tmp_path / "x").exists()


# ----------------------------------------------------- the "Extending" pages show this code


@pytest.mark.parametrize("page", ["policy", "agent", "dynamic"])
def test_the_extending_pages_include_the_example_and_name_what_exists(page):
    """Each page includes the example's files (pymdownx.snippets, so the code shown is the
    code tested) and every ``goodput_sim.x.y`` it names exists."""
    text = (ROOT / "docs" / "extending" / f"{page}.md").read_text()
    included = re.findall(r'^--8<-- "([^"]+)"$', text, flags=re.MULTILINE)
    assert f"examples/goodput-sim-example-plugin/goodput_sim_example/{page}.py" in included
    for item in included:
        path, _, section = item.partition(":")
        source = (ROOT / path).read_text()
        if section:
            assert f"# --8<-- [start:{section}]" in source and f"# --8<-- [end:{section}]" in source
    for dotted in set(re.findall(r"`(goodput_sim(?:\.\w+)+)", text)):
        module, attribute = dotted, None
        while True:
            try:
                loaded = importlib.import_module(module)
                break
            except ModuleNotFoundError:
                module, _, last = module.rpartition(".")
                attribute = last if attribute is None else f"{last}.{attribute}"
        for part in (attribute or "").split(".") if attribute else ():
            loaded = getattr(loaded, part)


# ------------------------------------------------------------ the entry-point machinery


@pytest.fixture
def fake_entry_points(monkeypatch):
    """Entry points of this test's choosing in place of the installed ones, every registry
    and the load-once record restored afterwards."""
    monkeypatch.setattr(plugins, "_LOADED", set())
    monkeypatch.setattr(plugins, "_ORIGINS", {})
    monkeypatch.setattr(policy_base, "_REGISTRY", dict(policy_base._REGISTRY))
    monkeypatch.setattr(policy_base, "_ALIASES", dict(policy_base._ALIASES))
    monkeypatch.setattr(agent_base, "_REGISTRY", dict(agent_base._REGISTRY))
    monkeypatch.setattr(dynamics_module, "_PLUGINS", {})
    table: dict[str, list[EntryPoint]] = {}
    calls: list[str] = []

    def entry_points(group: str):
        calls.append(group)
        return table.get(group, [])

    monkeypatch.setattr("importlib.metadata.entry_points", entry_points)

    def add(group: str, name: str, target: str) -> None:
        table.setdefault(group, []).append(EntryPoint(name, target, group))

    add.calls = calls
    return add


class _Lazy(policy_base.Policy):
    """A policy that only an entry point registers."""

    name = "lazy-test-plugin"

    def allocate(self, snapshot):
        return policy_base.Decision({})


class _Squatter(_Lazy):
    """A policy that wants a built-in policy's name."""

    name = "fifo"


def test_a_plugin_policy_is_loaded_once_when_a_name_is_looked_up(fake_entry_points):
    fake_entry_points("goodput_sim.policies", "lazy-test-plugin", f"{__name__}:_Lazy")
    assert "lazy-test-plugin" not in policy_base._REGISTRY  # nothing at import
    assert "lazy-test-plugin" in policy_base.policy_names()
    assert policy_base.policy_class("lazy-test-plugin") is _Lazy
    assert policy_base.policy_plugin("fifo") is None
    assert fake_entry_points.calls.count("goodput_sim.policies") == 1


def test_policies_a_plugin_module_registers_as_it_loads_are_the_plugins(
    fake_entry_points, tmp_path, monkeypatch
):
    """A plugin whose module also registers a policy with the decorator: both are the
    plugin's, so the built-in policies' tests leave both alone."""
    (tmp_path / "two_policies_test_plugin.py").write_text(
        "from goodput_sim.policies import Decision, Policy, register\n"
        "@register()\n"
        "class Extra(Policy):\n"
        "    name = 'extra-test-plugin'\n"
        "    def allocate(self, snapshot):\n"
        "        return Decision({})\n"
        "class Main(Extra):\n"
        "    name = 'main-test-plugin'\n"
    )
    monkeypatch.syspath_prepend(str(tmp_path))
    fake_entry_points("goodput_sim.policies", "main-test-plugin", "two_policies_test_plugin:Main")
    try:
        names = policy_base.policy_names()
        assert {"main-test-plugin", "extra-test-plugin"} <= set(names)
        for name in ("main-test-plugin", "extra-test-plugin"):
            assert policy_base.policy_plugin(name) == "two_policies_test_plugin"
    finally:
        sys.modules.pop("two_policies_test_plugin", None)


def test_a_broken_plugin_or_one_taking_a_built_in_name_is_skipped_with_a_warning(
    fake_entry_points,
):
    fake_entry_points("goodput_sim.policies", "fifo", f"{__name__}:_Squatter")
    fake_entry_points("goodput_sim.policies", "gone", "no_such_module_here:Policy")
    fake_entry_points("goodput_sim.agents", "fixed", f"{__name__}:_Lazy")  # not an agent
    with pytest.warns(UserWarning) as caught:
        names = policy_base.policy_names()
        agent_base.agent_names()
    messages = " ".join(str(w.message) for w in caught)
    assert "'fifo' of goodput_sim.policies" in messages and "registered already" in messages
    assert "'gone' of goodput_sim.policies" in messages and "ModuleNotFoundError" in messages
    assert "expected a BatchAgent subclass" in messages
    assert "gone" not in names
    assert policy_base.policy_class("fifo").__name__ == "Fifo"  # the built-in one stays


def test_an_installed_dynamic_runs_only_where_a_run_names_it(fake_entry_points):
    fake_entry_points("goodput_sim.dynamics", "counting-test", f"{__name__}:_Counting")
    assert list(plugin_dynamics()) == ["counting-test"]
    jobs = pd.read_csv(io.StringIO(WORKLOAD)).iloc[1:3]
    plain = api.run("fifo", jobs, cluster="2x4")
    named = api.run("fifo", jobs, cluster="2x4", dynamics=["counting-test"])
    assert "counted" not in plain.jobs and list(named.jobs["counted"]) == [1, 1]
    compared = api.compare(["fifo", "tiresias"], jobs, cluster="2x4", dynamics=["counting-test"])
    assert all(list(r.jobs["counted"]) == [1, 1] for r in compared.results.values())
    with pytest.raises(InputError) as error:
        named_dynamic("counting-test", {"every": 1})
    assert str(error.value).startswith("params: dynamic counting-test has no parameter 'every'")


class _Counting(Dynamic):
    """Counts the jobs made, in a ``counted`` column."""

    name = "counting-test"

    def __init__(self, world, **values):
        super().__init__(world, **values)
        self.columns = ("counted",)

    def job_columns(self, job):
        return {"counted": 1}
