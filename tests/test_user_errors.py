"""What users trip over: a misspelt name or key gets "did you mean", a list of known names
names each once, and an error names what the user wrote: the argument of a Python call, the
flag on the command line."""

from __future__ import annotations

import re

import pytest
from click.testing import CliRunner

from goodput_sim import api
from goodput_sim.agents import agent_class
from goodput_sim.cli import main
from goodput_sim.errors import InputError, argument_name
from goodput_sim.inputs.cluster import parse_cluster
from goodput_sim.policies import policy_class
from goodput_sim.sim.dynamics import named_dynamic

SMALL = "name,time,application,num_replicas,batch_size\nncf-0,0,ncf,1,32768\n"


def _error(call) -> InputError:
    with pytest.raises(InputError) as info:
        call()
    return info.value


def _cli(tmp_path, *args: str) -> str:
    """The one line a refused command prints (exit code 2)."""
    result = CliRunner().invoke(main, list(args))
    assert result.exit_code == 2, result.output
    lines = result.output.strip().splitlines()
    assert len(lines) == 1, lines
    return lines[0]


def test_an_unknown_policy_gets_the_closest_name_and_each_known_policy_once():
    error = _error(lambda: policy_class("tiresais"))
    text = str(error)
    assert "unknown policy 'tiresais' (did you mean 'tiresias'?)" in text
    known = text.split("; known: ", 1)[1]
    entries = [re.sub(r" \(.*\)$", "", entry) for entry in re.split(r", (?![^(]*\))", known)]
    assert len(entries) == len(set(entries))
    assert "goodput (pollux)" in known  # an alias beside its policy, not a name of its own
    assert "did you mean 'pollux'" in str(_error(lambda: policy_class("polux")))
    assert "did you mean" not in str(_error(lambda: policy_class("zzzz")))


def test_unknown_agents_dynamics_and_parameters_get_the_closest_name():
    assert "did you mean 'tail-weighted'?" in str(_error(lambda: agent_class("tail-weigted")))
    assert "did you mean 'queue_threshold'?" in str(
        _error(lambda: api.make_policy_and_agent("tiresias", params={"queue_treshold": 60}))
    )
    unknown = str(_error(lambda: named_dynamic("no-such-dynamic")))
    assert unknown.startswith("dynamics: unknown dynamic 'no-such-dynamic'")
    built_in = str(_error(lambda: named_dynamic("checkpoints")))
    assert "built in: every run has it, switched on by its settings" in built_in
    setting = str(_error(lambda: api.run("fifo", intervl=60)))
    assert setting.startswith("settings: unknown setting 'intervl' (did you mean 'interval'?)")


@pytest.mark.parametrize(
    ("call", "argument", "flag"),
    [
        (lambda: api.run("fifoo"), "policy", "--policy"),
        (lambda: api.compare(["fifo", "goodputt"]), "policies", "--policies"),
        (lambda: api.compare([]), "policies", "--policies"),
        (lambda: api.run("fifo", agent="fixd"), "agent", "--agent"),
        (lambda: api.run("fifo", params={"p": 1}), "params", "--param"),
        (lambda: api.run("goodput", params={"p": 5}), "params", "--param"),
        (lambda: api.run("fifo", mtbf=-1), "mtbf", "--mtbf"),
        (lambda: api.run("fifo", restart_delay=-1), "restart_delay", "--restart-delay"),
    ],
)
def test_python_errors_name_the_argument_and_the_cli_the_flag(call, argument, flag):
    error = _error(call)
    assert str(error).startswith(f"{argument}: ")
    assert error.cli_text().startswith(f"{flag}: ")
    assert "--" not in str(error).split(":")[0]
    assert argument_name(flag) == argument


def test_the_command_line_still_names_its_flags(tmp_path):
    (tmp_path / "w.csv").write_text(SMALL)
    run = ["run", "--workload", str(tmp_path / "w.csv"), "--cluster", "1x4"]
    line = _cli(tmp_path, *run, "--policy", "fifoo", "--out", str(tmp_path / "o"))
    assert line.startswith("error: --policy: unknown policy 'fifoo' (did you mean 'fifo'?)")
    line = _cli(tmp_path, *run, "--policy", "goodput", "--param", "pp=1")
    assert line.startswith("error: --param: policy goodput has no parameter 'pp'")
    assert "(did you mean 'p'?)" in line


def test_a_misspelt_key_of_a_config_file_gets_the_closest_key(tmp_path):
    config = tmp_path / "run.yaml"
    config.write_text("policy: fifo\nrestart_dely: 30\n")
    line = _cli(tmp_path, "run", "--config", str(config))
    assert "unknown option 'restart_dely' (did you mean 'restart_delay'?)" in line


def test_a_misspelt_key_of_an_experiment_file_gets_the_closest_key(tmp_path):
    (tmp_path / "w.csv").write_text(SMALL)
    cases = {
        "polices: [fifo]\nworkloads: [w.csv]\n": "(did you mean 'policies'?)",
        "policies: [{policy: fifo, agnt: fixed}]\nworkloads: [w.csv]\n": "(did you mean 'agent'?)",
        "policies: [fifoo]\nworkloads: [w.csv]\n": "(did you mean 'fifo'?)",
    }
    for k, (text, hint) in enumerate(cases.items()):
        path = tmp_path / f"e{k}.yaml"
        path.write_text(text)
        line = _cli(tmp_path, "sweep", str(path), "--out", str(tmp_path / "out"))
        assert str(path) in line and hint in line, line
    assert not (tmp_path / "out").exists()


@pytest.mark.parametrize(
    ("text", "hint"),
    [
        ("nodes: 2\ngpus_per_nod: 4\n", "(did you mean 'gpus_per_node'?)"),
        ("groups:\n  - {nodes: 2, gpus_per_node: 4}\ndomain: {}\n", "(did you mean 'domains'?)"),
    ],
)
def test_a_misspelt_key_of_a_cluster_file_gets_the_closest_key(tmp_path, text, hint):
    path = tmp_path / "cluster.yaml"
    path.write_text(text)
    error = _error(lambda: parse_cluster(path))
    assert str(path) in str(error) and hint in str(error)
