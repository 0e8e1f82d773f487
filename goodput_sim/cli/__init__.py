"""Command-line entry point: `goodput-sim GROUP COMMAND ...`.

Each submodule registers its commands on :data:`main`; user-input errors become one line on
stderr and exit code 2, never a traceback.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

# A command runs on one BLAS thread (goodput_sim.sim.threads), but OpenBLAS starts a thread per
# core when numpy loads, and they spin: a tenth to a third of a second of CPU per command. Said
# before numpy loads, unless the user said otherwise; workers started by a command inherit it.
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

import click

from goodput_sim import __version__
from goodput_sim.errors import InputError, Interrupted
from goodput_sim.sim.threads import one_blas_thread


class _Main(click.Group):
    """Click group that turns :class:`InputError` and bad option values into a one-line message
    and exit code 2."""

    def make_context(self, info_name, args, parent=None, **extra):
        """Parse the top-level options; a bad one is one line too (not click's usage block),
        while no arguments at all still shows the help."""
        nul = next((k for k, arg in enumerate(args) if "\x00" in str(arg)), None)
        if nul is not None:  # only a caller in Python can pass one: a shell cannot
            click.echo(f"error: argument {nul + 1} ({args[nul]!r}) holds a NUL byte", err=True)
            sys.exit(2)
        try:
            return super().make_context(info_name, args, parent, **extra)
        except click.exceptions.NoArgsIsHelpError:
            raise
        except click.UsageError as err:
            click.echo(f"error: {err.format_message()}", err=True)
            sys.exit(2)

    def main(self, args=None, *rest, standalone_mode: bool = True, **extra):
        """As click's; from the command line itself (no ``args`` given), the process ends at
        once when the command has ended: outputs flushed and closed, nothing else running."""
        if args is not None or not standalone_mode:  # called from Python (tests): click's way
            return super().main(args, *rest, standalone_mode=standalone_mode, **extra)
        try:
            super().main(None, *rest, standalone_mode=True, **extra)
            code = 0
        except SystemExit as stop:
            code = stop.code
        _exit(code)

    def invoke(self, ctx: click.Context):
        """Run the command on one BLAS thread (:mod:`goodput_sim.sim.threads`)."""
        try:
            with one_blas_thread():
                return super().invoke(ctx)
        except InputError as err:
            click.echo(f"error: {err.cli_text()}", err=True)
            sys.exit(2)
        except click.UsageError as err:  # a bad option value: one line too, not click's three
            click.echo(f"error: {err.format_message()}", err=True)
            sys.exit(2)
        except Interrupted as err:
            click.echo(f"interrupted: {err.progress}", err=True)
            sys.exit(130)
        except KeyboardInterrupt:
            click.echo(
                "interrupted: results folders are swapped in only when complete; earlier "
                "results are intact",
                err=True,
            )
            sys.exit(130)


def _exit(code) -> None:
    """End the process with ``code``: skipping the interpreter's teardown (a third of a second
    after a run) once stdout and stderr are flushed, when no other thread or child process runs;
    else the ordinary way."""
    import threading

    children = "multiprocessing" in sys.modules and sys.modules["multiprocessing"].active_children()
    if isinstance(code, int | None) and threading.active_count() == 1 and not children:
        try:
            sys.stdout.flush()
            sys.stderr.flush()
        except (OSError, ValueError):  # a closed pipe: leave it to the ordinary exit
            sys.exit(code)
        os._exit(code or 0)
    sys.exit(code)


profiles_option = click.option(
    "--profiles",
    type=click.Path(path_type=Path),
    default=None,
    help="Folder of YAML profiles or a measurement folder (default: bundled).",
)
"""The ``--profiles`` option every command that reads application profiles shares."""

force_option = click.option(
    "--force", is_flag=True, help="Replace the output if it exists (never done silently)."
)
"""``--force``: the one way to replace an output a command was told to write."""


def writable_file(path: Path, option: str = "--output", force: bool = False) -> Path:
    """:func:`goodput_sim.api.writable_file`, imported only when a command writes a file."""
    from goodput_sim.api import writable_file as check

    return check(path, option, force)


def writing(path: Path, option: str = "--output"):
    """:func:`goodput_sim.api.writing`: an output's write errors as one line."""
    from goodput_sim.api import writing as guard

    return guard(path, option)


@click.group(cls=_Main)
@click.version_option(__version__, prog_name="goodput-sim")
def main() -> None:
    """Simulate GPU-cluster schedulers for deep-learning training jobs and compare their JCT."""


def _register() -> None:
    from goodput_sim.cli import (  # noqa: F401
        experiment_cmd,
        plot_cmd,
        profiles_cmd,
        report_cmd,
        sim_cmd,
        toy_cmd,
        workload_cmd,
    )


_register()
