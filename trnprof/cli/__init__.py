"""The `trnprof` command line: thin commands over the Python API.

Each command is a module of this package named after it, defining `command`, which parses its
options, calls one `trnprof.api` function and renders the result (it imports no computation:
tests/core/test_layers.py); modules whose names start with `_` are helpers. New commands need no registration.
Errors a user can cause print one line and exit 2; findings at or above --fail-on exit 1
(`trnprof.exitcodes.Exit`). A command that produces a document has `--format` and `-o`
(`_options.document`, `_output.emit`); one that opens a run has `--engine` and `--threads`.

A command imports only what it uses: its module loads when it runs, and `trnprof --help` reads
each command's one-line help from its source (`_listing`) instead of importing it, so neither
`--help` nor `--version` loads duckdb, pandas or pyarrow.
"""

from __future__ import annotations

import importlib
import os
import sys
import threading

import click

from .._version import __version__
from ..errors import TrnprofError, first_line
from ..exitcodes import Exit
from ..progress import show_progress
from . import _listing


def _duckdb_error() -> type[BaseException] | tuple:
    """duckdb.Error once a command has loaded duckdb (nothing raises it before): `except ()`
    catches nothing."""
    duckdb = sys.modules.get("duckdb")
    return duckdb.Error if duckdb is not None else ()


def _fail(message: str, code: Exit) -> None:
    from ..textfmt import terminal

    click.echo(message if code == Exit.INTERRUPTED else f"error: {terminal(message)}", err=True)
    sys.exit(code)


def _is_utf8(text: str) -> bool:
    try:
        text.encode("utf-8")
        return True
    except UnicodeEncodeError:
        return False


def _escaped(text) -> str:
    """A surrogate-escaped name with its undecodable bytes shown as \\xNN, at most 200 characters."""
    text = os.fsencode(text).decode("utf-8", "backslashreplace") if isinstance(text, str) else repr(text)
    return text if len(text) <= 200 else text[:197] + "..."


# Commands whose process ends without tearing the interpreter down (`_Group.__call__`): every
# file they write is closed when they return, so unloading pandas, numpy, pyarrow and duckdb
# module by module (about 0.1 s of CPU, a tenth of a small trace's analyze) serves nothing.
QUICK_EXIT = frozenset({"analyze"})


def _quick_exit(code) -> None:
    """End the process now with `code` (SystemExit's): exit handlers run (weakref finalizers
    remove the sessions' scratch folders), output is flushed, the interpreter is not torn down.
    Returns instead when a tracer or profiler watches (coverage, cProfile) or a thread that is not
    a daemon still runs: the interpreter's own exit waits for it."""
    if sys.gettrace() is not None or sys.getprofile() is not None:
        return
    if any(not t.daemon and t is not threading.main_thread() for t in threading.enumerate()):
        return
    if code is None:
        code = 0
    elif not isinstance(code, int):
        return
    import atexit

    atexit._run_exitfuncs()
    try:
        sys.stdout.flush()
        sys.stderr.flush()
    except (OSError, ValueError):  # a closed or broken pipe: the interpreter's exit reports it
        return
    os._exit(code)


class _Group(click.Group):
    """Loads commands lazily and turns user errors into one line and exit code 2."""

    resolved: str | None = None  # the command this process runs
    process_entry = False  # True when called as the process's entry point

    def __call__(self, *args, **kwargs):
        """The process's entry point (`trnprof ...`, `python -m trnprof`): called with no
        arguments, a command in QUICK_EXIT ends the process at once (`_quick_exit`)."""
        self.process_entry = not args and not kwargs
        try:
            return super().__call__(*args, **kwargs)
        except SystemExit as exc:
            if not args and not kwargs and self.resolved in QUICK_EXIT:
                _quick_exit(exc.code)
            raise

    def resolve_command(self, ctx, args):
        name, command, rest = super().resolve_command(ctx, args)
        self.resolved = name
        return name, command, rest

    def list_commands(self, ctx):
        return list(_listing.names())

    def get_command(self, ctx, name):
        if name not in _listing.names():
            return None
        return importlib.import_module(f"{__name__}.{name}").command

    def format_commands(self, ctx, formatter):
        """The command list of `trnprof --help`, without importing the commands."""
        names = self.list_commands(ctx)
        limit = formatter.width - 6 - max(map(len, names))
        with formatter.section("Commands"):
            formatter.write_dl([(name, _listing.short_help(name, limit)) for name in names])

    def parse_args(self, ctx, args):
        for arg in args:  # a name with bytes that are not UTF-8 (b'\xff') arrives surrogate-escaped
            if not _is_utf8(arg):
                _fail(
                    f"argument '{_escaped(arg)}' is not UTF-8 text: trnprof reads and writes UTF-8 names only "
                    "(rename the file or folder)",
                    Exit.USAGE,
                )
        return super().parse_args(ctx, args)

    def invoke(self, ctx):
        try:
            return super().invoke(ctx)
        except TrnprofError as exc:
            _fail(str(exc), Exit.USAGE)
        except UnicodeEncodeError as exc:  # a name found inside an input folder, not on the command line
            if "surrogates not allowed" not in str(exc):
                raise
            _fail(
                f"a name is not UTF-8 text ('{_escaped(exc.object)}'): trnprof reads and writes UTF-8 names "
                "only (rename the file or folder)",
                Exit.USAGE,
            )
        except _duckdb_error() as exc:  # unreadable run data met in the middle of a query
            _fail(f"reading the run failed: {first_line(exc)}", Exit.USAGE)
        except OSError as exc:  # e.g. an output folder that is missing or not writable
            _fail(f"{exc.strerror or first_line(exc)}: {exc.filename or ''}".rstrip(": "), Exit.USAGE)
        except KeyboardInterrupt:
            _fail("interrupted", Exit.INTERRUPTED)


@click.group(cls=_Group, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, prog_name="trnprof")
def main():
    """trnprof: training-pipeline profiler and bottleneck analyzer for AWS Trainium."""
    show_progress()  # long view computations draw a bar on stderr, like ingest and simulate
