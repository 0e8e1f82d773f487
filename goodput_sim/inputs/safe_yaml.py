"""One YAML reader for every input file: safe types only, with limits on size, nesting depth
and aliases, and every failure a one-line :class:`~goodput_sim.errors.InputError`.

PyYAML's safe loader still builds deeply nested documents recursively (a RecursionError) and
expands aliases into shared structures that later code walks exponentially (a "billion laughs"
document). Project files need neither: nesting is capped and aliases are refused."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml

from goodput_sim.errors import InputError, regular_file

MAX_BYTES = 16 * 1024 * 1024
MAX_DEPTH = 64


class _LimitedLoader(yaml.SafeLoader):
    """The safe loader, refusing aliases and documents nested deeper than ``MAX_DEPTH``."""

    def __init__(self, stream):
        super().__init__(stream)
        self._depth = 0

    def compose_node(self, parent, index):
        if self.check_event(yaml.AliasEvent):
            event = self.peek_event()
            raise yaml.composer.ComposerError(
                None, None, "aliases (*name) are not supported in project files", event.start_mark
            )
        self._depth += 1
        try:
            if self._depth > MAX_DEPTH:
                event = self.peek_event()
                raise yaml.composer.ComposerError(
                    None, None, f"nested deeper than {MAX_DEPTH} levels", event.start_mark
                )
            return super().compose_node(parent, index)
        finally:
            self._depth -= 1


def load_yaml(path: str | Path) -> Any:
    """The document in ``path``, or a one-line error naming the file and line."""
    path = Path(path)
    if path.exists() and not path.is_dir():
        regular_file(path, "YAML file")  # a FIFO or device would be read for ever
    try:
        size = path.stat().st_size
        if size > MAX_BYTES:
            raise InputError(path, f"is {size} bytes; YAML inputs may be at most {MAX_BYTES}")
        text = path.read_bytes().decode("utf-8")
    except FileNotFoundError:
        raise InputError(path, "file not found") from None
    except IsADirectoryError:
        raise InputError(path, "is a folder, expected a YAML file") from None
    except OSError as err:
        raise InputError(path, f"cannot read file ({err.strerror})") from None
    except UnicodeDecodeError:
        raise InputError(path, "is not UTF-8 text") from None
    try:
        return yaml.load(text, Loader=_LimitedLoader)  # noqa: S506 (a SafeLoader subclass)
    except yaml.YAMLError as err:
        mark = getattr(err, "problem_mark", None)
        problem = getattr(err, "problem", None) or str(err).splitlines()[0]
        raise InputError(
            path, f"malformed YAML ({problem})", where=mark.line + 1 if mark else None
        ) from None
    except RecursionError:
        raise InputError(path, f"nested deeper than {MAX_DEPTH} levels") from None
