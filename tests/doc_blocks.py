"""Run the ``bash`` and ``python`` blocks of a Markdown page the way a reader would: in order,
in a fresh folder that sees the repository's ``traces/`` and ``configs/``, each ``goodput-sim``
command through the CLI in-process, each without a refusal or a traceback. Shared by the
README's test and the documentation site's test, so both hold their pages to one rule.

A ``bash`` line whose comment ends with one of ``SKIP_MARKS`` is shown to readers but not run:
``slow`` (minutes of work) or ``needs the artifact`` (it reads a reference artifact that a fresh
checkout does not have), as in ``# slow`` or ``# the whole log; needs the artifact``. Other
shell commands (``make``, ``pip``) belong in ``shell`` blocks, which are never run."""

from __future__ import annotations

import re
import shlex
from pathlib import Path

from click.testing import CliRunner

from goodput_sim.cli import main

ROOT = Path(__file__).resolve().parents[1]
BLOCK = re.compile(r"^```(bash|python)\n(.*?)^```", re.DOTALL | re.MULTILINE)
SKIP_MARKS = ("slow", "needs the artifact")


def blocks(path: Path) -> list[tuple[str, str]]:
    """(language, text) of every bash and Python block of a Markdown file, in order."""
    return BLOCK.findall(path.read_text())


def commands(text: str) -> list[list[str]]:
    """A bash block's commands as argument lists: continuations joined, comments dropped,
    lines marked with one of ``SKIP_MARKS`` left out."""
    out = []
    for line in text.replace("\\\n", " ").splitlines():
        comment = line if line.lstrip().startswith("#") else line.partition(" #")[2]
        if comment.rstrip().endswith(SKIP_MARKS):
            continue
        words = shlex.split(line, comments=True)
        if words:  # not a blank or comment-only line
            out.append(words)
    return out


def in_a_fresh_folder(folder: Path, monkeypatch) -> None:
    """Work in ``folder`` with the repository's data folders beside, as a checkout has them."""
    for name in ("traces", "configs"):
        (folder / name).symlink_to(ROOT / name)
    monkeypatch.chdir(folder)


def run_blocks(page: str, found: list[tuple[str, str]], python: bool = True) -> None:
    """Run the blocks in order in the current folder; a failure names the page and command."""
    runner = CliRunner()
    for lang, text in found:
        if lang == "python":
            if python:
                exec(compile(text, page, "exec"), {})
            continue
        for args in commands(text):
            assert args[0] == "goodput-sim", (
                f"{page}: bash blocks run goodput-sim only (use a shell block): {args}"
            )
            result = runner.invoke(main, args[1:])
            assert result.exception is None or isinstance(result.exception, SystemExit), (
                page,
                args,
                result.output,
            )
            assert result.exit_code == 0, (page, args, result.output)
            assert "error" not in result.output.lower(), (page, args, result.output)
            assert "Traceback" not in result.output, (page, args, result.output)
