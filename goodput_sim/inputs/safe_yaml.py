"""One YAML reader for every input file: safe types only, with limits on size, nesting depth
and aliases, and every failure a one-line :class:`~goodput_sim.errors.InputError`.

PyYAML's safe loader still builds deeply nested documents recursively (a RecursionError) and
expands aliases into shared structures that later code walks exponentially (a "billion laughs"
document). Project files need neither: nesting is capped and aliases are refused.

Two more things YAML would read silently are refused too: a key repeated in one mapping (PyYAML
keeps the last value) and numbers written in a YAML 1.1 form that reads as other digits than
it shows (``1_000`` is 1000, ``1:30`` is 90, ``017`` is 15). Quoted, each is plain text."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import yaml

from goodput_sim.errors import InputError, regular_file

MAX_BYTES = 16 * 1024 * 1024
MAX_DEPTH = 64
_OCTAL = re.compile(r"[-+]?0[0-9]+")


class _Refused(yaml.MarkedYAMLError):
    """Something the project's YAML refuses, at a line of the file."""


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

    def construct_mapping(self, node, deep=False):
        if isinstance(node, yaml.MappingNode):
            first: dict[Any, int] = {}
            for key_node, _ in node.value:
                if key_node.tag == "tag:yaml.org,2002:merge":
                    continue
                key = self.construct_object(key_node, deep=True)
                try:
                    line = first.get(key)
                except TypeError:  # an unhashable key: PyYAML's own error follows
                    continue
                if line is not None:
                    raise _Refused(
                        problem=f"key {key!r} appears twice in one mapping (first on line "
                        f"{line}); expected each key once",
                        problem_mark=key_node.start_mark,
                    )
                first[key] = key_node.start_mark.line + 1
        return super().construct_mapping(node, deep=deep)

    def construct_yaml_int(self, node):
        _refuse_disguised_number(node)
        return super().construct_yaml_int(node)

    def construct_yaml_float(self, node):
        _refuse_disguised_number(node)
        return super().construct_yaml_float(node)


def _refuse_disguised_number(node) -> None:
    """Refuse an unquoted number whose YAML 1.1 value has other digits than its text shows."""
    text = node.value
    if "_" in text:
        form = "an underscore, which YAML drops"
    elif ":" in text:
        form = "':', which YAML reads as base 60"
    elif _OCTAL.fullmatch(text):
        form = "a leading 0, which YAML reads as octal"
    else:
        return
    raise _Refused(
        problem=f"number {text} is written with {form}; write the plain number (quoted, it is "
        "text)",
        problem_mark=node.start_mark,
    )


_LimitedLoader.add_constructor("tag:yaml.org,2002:int", _LimitedLoader.construct_yaml_int)
_LimitedLoader.add_constructor("tag:yaml.org,2002:float", _LimitedLoader.construct_yaml_float)


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
        if not isinstance(err, _Refused):
            problem = f"malformed YAML ({problem})"
        raise InputError(path, problem, where=mark.line + 1 if mark else None) from None
    except RecursionError:
        raise InputError(path, f"nested deeper than {MAX_DEPTH} levels") from None
