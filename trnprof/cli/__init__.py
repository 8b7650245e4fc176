"""The `trnprof` command line: thin commands over the Python API.

Each command lives in its own module of this package and is listed in COMMANDS.
Errors a user can cause print one line and exit 2; findings at or above --fail-on exit 1.
"""

from __future__ import annotations

import importlib
import sys

import click

from .._version import __version__
from ..errors import TrnprofError

# module name -> command name; each module defines `command`
COMMANDS = {
    "demo": "demo",
    "info": "info",
    "query": "query",
}

EXIT_USAGE = 2


class _Group(click.Group):
    """Loads commands lazily and turns user errors into one line and exit code 2."""

    def list_commands(self, ctx):
        return sorted(COMMANDS.values())

    def get_command(self, ctx, name):
        module = {cmd: mod for mod, cmd in COMMANDS.items()}.get(name)
        if module is None:
            return None
        return importlib.import_module(f"{__name__}.{module}").command

    def invoke(self, ctx):
        try:
            return super().invoke(ctx)
        except TrnprofError as exc:
            click.echo(f"error: {exc}", err=True)
            sys.exit(EXIT_USAGE)
        except KeyboardInterrupt:
            click.echo("interrupted", err=True)
            sys.exit(130)


@click.group(cls=_Group, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, prog_name="trnprof")
def main():
    """trnprof: training-pipeline profiler and bottleneck analyzer for AWS Trainium."""
