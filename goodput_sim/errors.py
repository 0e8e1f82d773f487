"""One error type for bad user input, so the CLI can print one line and exit 2, and the check
every reader of an input file makes first."""

from __future__ import annotations

from pathlib import Path

_ARGUMENTS = {"--param": "params"}  # flags whose Python argument is spelled otherwise


def argument_name(flag: str) -> str:
    """The Python argument a CLI flag stands for: ``--restart-delay`` is ``restart_delay``,
    ``--param`` is ``params``."""
    return _ARGUMENTS.get(flag, flag[2:].replace("-", "_"))


class InputError(Exception):
    """Bad user input: names the source (file), where in it (line, row or field) and the problem.

    A source spelled as a command-line flag (``--policy``) names an argument: ``str()``, what a
    Python caller sees, names the argument (``policy``, ``params``), and :meth:`cli_text`,
    what the command line prints, the flag."""

    def __init__(self, source: str | Path | None, problem: str, where: str | int | None = None):
        self.source = str(source) if source is not None else None
        self.where = where
        self.problem = problem
        super().__init__(str(self))

    def __reduce__(self):
        """Pickle by constructor arguments, so errors in worker processes reach the user."""
        return (type(self), (self.source, self.problem, self.where))

    def __str__(self) -> str:
        """The message on one line, an argument named as in Python: a line break or other
        control character from the input itself (a file name, a key) is shown escaped, never
        printed."""
        return self._text(cli=False)

    def cli_text(self) -> str:
        """The message on one line, an argument named by its command-line flag."""
        return self._text(cli=True)

    def _text(self, cli: bool) -> str:
        source = self.source
        if not cli and source is not None and source.startswith("--"):
            source = argument_name(source)
        parts = [p for p in (source, self._where_text()) if p]
        prefix = ": ".join(parts)
        text = f"{prefix}: {self.problem}" if prefix else self.problem
        return "".join(c if c.isprintable() else repr(c)[1:-1] for c in text)

    def _where_text(self) -> str | None:
        if self.where is None:
            return None
        if isinstance(self.where, int):
            return f"line {self.where}"
        return str(self.where)


class Interrupted(KeyboardInterrupt):
    """Ctrl-C during work that keeps what finished: ``progress`` says how far it got and how to
    go on, for the CLI's one line."""

    def __init__(self, progress: str):
        self.progress = progress
        super().__init__(progress)


def regular_file(path: str | Path, what: str = "file") -> Path:
    """``path`` if it is a regular file; a FIFO, device or folder is refused (reading one could
    block for ever or never end), as is a missing file."""
    path = Path(path)
    if not path.exists():
        raise InputError(path, f"no such {what}")
    if not path.is_file():
        kind = "a folder" if path.is_dir() else "not a regular file (a FIFO, device or socket)"
        raise InputError(path, f"is {kind}; expected a {what}")
    return path
