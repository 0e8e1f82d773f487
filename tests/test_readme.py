"""The README walks a new user through the tool: its ``bash`` blocks and its Python block run
in order on a temporary copy, each command without a refusal or a traceback (lines marked
``# slow`` are skipped), so the README cannot drift from the tool (issue 22)."""

from __future__ import annotations

import re
import shlex
from pathlib import Path

import pytest
from click.testing import CliRunner

from goodput_sim.cli import main

ROOT = Path(__file__).resolve().parents[1]
BLOCK = re.compile(r"^```(bash|python)\n(.*?)^```", re.DOTALL | re.MULTILINE)


def readme_blocks() -> list[tuple[str, str]]:
    """(language, text) of every bash and Python block of the README, in order."""
    return BLOCK.findall((ROOT / "README.md").read_text())


def commands(text: str) -> list[list[str]]:
    """A bash block's commands as argument lists: continuations joined, comments dropped,
    ``# slow`` lines left out."""
    out = []
    for line in text.replace("\\\n", " ").splitlines():
        if not line.strip() or line.rstrip().endswith("# slow"):
            continue
        out.append(shlex.split(line, comments=True))
    return out


def test_the_readme_has_a_walkthrough():
    languages = [lang for lang, _ in readme_blocks()]
    assert languages.count("bash") >= 1 and languages.count("python") == 1
    words = {c[1] for lang, text in readme_blocks() if lang == "bash" for c in commands(text)}
    assert {"run", "compare", "sweep", "report", "plot"} <= words


def test_the_readme_runs_in_order(tmp_path, monkeypatch):
    for folder in ("traces", "configs"):
        (tmp_path / folder).symlink_to(ROOT / folder)
    monkeypatch.chdir(tmp_path)
    runner = CliRunner()
    for lang, text in readme_blocks():
        if lang == "python":
            exec(compile(text, "README.md", "exec"), {})
            continue
        for args in commands(text):
            assert args[0] == "goodput-sim", f"README bash blocks run goodput-sim only: {args}"
            result = runner.invoke(main, args[1:])
            assert result.exception is None or isinstance(result.exception, SystemExit), (
                args,
                result.output,
            )
            assert result.exit_code == 0, (args, result.output)
            assert "error" not in result.output.lower() and "Traceback" not in result.output
    assert len(list(Path("results").glob("goodput-small-*"))) == 2  # two runs, two folders


@pytest.mark.parametrize("line", ["goodput-sim sweep x.yaml  # slow", "  "])
def test_slow_and_blank_lines_are_skipped(line):
    assert commands(line) == []
