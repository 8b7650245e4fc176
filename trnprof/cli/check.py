"""`trnprof check RUN [--repair]`: is the run whole? Exit 0 when it is, 2 when not."""

from __future__ import annotations

import sys
from pathlib import Path

import click

from ..errors import TrnprofError
from ..api import check
from ..exitcodes import Exit
from ..jsonplain import to_json
from . import _options as options
from ._output import check_destination, emit


@click.command("check")
@click.argument("run", type=click.Path(path_type=Path))
@click.option("--repair", is_flag=True,
              help="first undo what an interrupted writer left: restore a run a --force commit moved "
                   "aside, remove temporary folders of dead writers")
@options.document("text", "json")
def command(run, repair, fmt, out):
    """Verify RUN in full: every Parquet file listed in its manifest is there, has the recorded
    size and row count and reads back; no file was added. Exit 2 when the run is damaged."""
    check_destination(out)
    verdict = check(run, repair=repair)
    repaired = verdict.repaired
    if fmt == "json":
        emit(to_json({"run": verdict.run, "ok": verdict.ok, "files": verdict.files, "rows": verdict.rows,
                      "problems": verdict.problems, "repaired": verdict.repaired}), out)
    else:
        lines = [f"repaired: {line}" for line in repaired]
        if verdict.ok:
            lines.append(f"{run}: whole ({verdict.files} files, {verdict.rows:,} rows checked)")
        if lines:
            emit("\n".join(lines), out)
        for line in verdict.problems:
            click.echo(f"damaged: {line}", err=True)
    if not verdict.ok:
        if fmt == "text":
            raise TrnprofError(f"{run} is damaged ({len(verdict.problems)} problem(s)); re-create it")
        sys.exit(Exit.USAGE)
