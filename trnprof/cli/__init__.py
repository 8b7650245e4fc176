"""The `trnprof` command line: thin commands over the Python API.

Each command is a module of this package named after it, defining `command`; modules whose
names start with `_` are helpers. New commands need no registration.
Errors a user can cause print one line and exit 2; findings at or above --fail-on exit 1
(`trnprof.exitcodes.Exit`). A command that produces a document has `--format` and `-o`
(`_options.document`, `_output.emit`); one that opens a run has `--engine` and `--threads`.
"""

from __future__ import annotations

import importlib
import pkgutil
import sys

import click
import duckdb

from .._version import __version__
from ..errors import TrnprofError, first_line
from ..exitcodes import Exit
from ..textfmt import terminal

class _Group(click.Group):
    """Loads commands lazily and turns user errors into one line and exit code 2."""

    def list_commands(self, ctx):
        return sorted(m.name for m in pkgutil.iter_modules(__path__) if not m.name.startswith("_"))

    def get_command(self, ctx, name):
        if name not in self.list_commands(ctx):
            return None
        return importlib.import_module(f"{__name__}.{name}").command

    def invoke(self, ctx):
        try:
            return super().invoke(ctx)
        except TrnprofError as exc:
            click.echo(f"error: {terminal(exc)}", err=True)
            sys.exit(Exit.USAGE)
        except duckdb.Error as exc:  # unreadable run data met in the middle of a query
            click.echo(f"error: reading the run failed: {first_line(exc)}", err=True)
            sys.exit(Exit.USAGE)
        except OSError as exc:  # e.g. an output folder that is missing or not writable
            click.echo(f"error: {exc.strerror or first_line(exc)}: {exc.filename or ''}".rstrip(": "), err=True)
            sys.exit(Exit.USAGE)
        except KeyboardInterrupt:
            click.echo("interrupted", err=True)
            sys.exit(Exit.INTERRUPTED)


@click.group(cls=_Group, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, prog_name="trnprof")
def main():
    """trnprof: training-pipeline profiler and bottleneck analyzer for AWS Trainium."""
    from .. import session
    session.show_progress()  # long view computations draw a bar on stderr, like ingest and simulate
