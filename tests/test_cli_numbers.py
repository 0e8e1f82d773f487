"""Every number option of every command reads plain ASCII digits, as every user file does:
``1_0`` is refused in one line, never read as 10."""

from __future__ import annotations

import click
import pytest
from click.testing import CliRunner

from goodput_sim.cli import main


def _commands(group: click.Group, path: tuple[str, ...] = ()):
    for name, command in group.commands.items():
        if isinstance(command, click.Group):
            yield from _commands(command, (*path, name))
        else:
            yield (*path, name), command


NUMBER_OPTIONS = [
    (path, option)
    for path, command in _commands(main)
    for option in command.params
    if isinstance(option, click.Option)
    and isinstance(option.type, click.types.IntParamType | click.types.FloatParamType)
]


def test_every_number_option_uses_the_strict_reader():
    loose = [
        f"{' '.join(path)} {option.opts[0]}"
        for path, option in NUMBER_OPTIONS
        if type(option.type).__module__ != "goodput_sim.cli.numbers"
    ]
    assert NUMBER_OPTIONS and not loose, loose


@pytest.mark.parametrize(
    ("path", "option"),
    NUMBER_OPTIONS,
    ids=[f"{' '.join(p)} {o.opts[0]}" for p, o in NUMBER_OPTIONS],
)
def test_underscores_in_a_number_option_are_refused(path, option, tmp_path):
    result = CliRunner().invoke(main, [*path, option.opts[0], "1_0"], catch_exceptions=False)
    assert result.exit_code == 2, result.output
    assert "is not a plain number" in result.output
