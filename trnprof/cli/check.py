"""`trnprof check RUN [--repair]`: is the run whole? Exit 0 when it is, 2 when not."""

from __future__ import annotations

import sys
from pathlib import Path

import click

from ..errors import TrnprofError
from ..api import check
from ..jsonplain import to_json


@click.command("check")
@click.argument("run", type=click.Path(path_type=Path))
@click.option("--repair", is_flag=True,
              help="first undo what an interrupted writer left: restore a run a --force commit moved "
                   "aside, remove temporary folders of dead writers")
@click.option("--format", "fmt", type=click.Choice(["text", "json"]), default="text", show_default=True)
def command(run, repair, fmt):
    """Verify RUN in full: every Parquet file listed in its manifest is there, has the recorded
    size and row count and reads back; no file was added. Exit 2 when the run is damaged."""
    verdict = check(run, repair=repair)
    repaired = verdict.repaired
    if fmt == "json":
        click.echo(to_json({"run": verdict.run, "ok": verdict.ok, "files": verdict.files, "rows": verdict.rows,
                            "problems": verdict.problems, "repaired": verdict.repaired}))
    else:
        for line in repaired:
            click.echo(f"repaired: {line}")
        if verdict.ok:
            click.echo(f"{run}: whole ({verdict.files} files, {verdict.rows:,} rows checked)")
        for line in verdict.problems:
            click.echo(f"damaged: {line}", err=True)
    if not verdict.ok:
        if fmt == "text":
            raise TrnprofError(f"{run} is damaged ({len(verdict.problems)} problem(s)); re-create it")
        sys.exit(2)
