"""`trnprof check RUN [--repair]`: is the run whole? Exit 0 when it is, 2 when not."""

from __future__ import annotations

import sys
from pathlib import Path

import click

from ..api import check
from ..errors import TrnprofError
from ..exitcodes import Exit
from ..jsonplain import to_json
from . import _options as options
from ._output import check_destination, emit


@click.command("check")
@click.argument("run", type=click.Path(path_type=Path))
@click.option(
    "--repair",
    is_flag=True,
    help="first undo what an interrupted writer left: restore a run a --force commit moved "
    "aside (an old copy is removed only beside a whole run), remove temporary folders "
    "of dead writers and damaged entries or links in the derived/ cache",
)
@options.document("text", "json")
def command(run, repair, fmt, out, force):
    """Verify RUN in full: every Parquet file listed in its manifest is there, has the recorded
    size and row count and reads back; no file was added; every stored view of its derived/
    cache matches its checksums. Exit 2 when the run or its cache is damaged."""
    check_destination(out, force)
    # text: each repair is said as it happens, before anything can fail (a kept copy is named)
    said = (lambda line: click.echo(f"repaired: {line}")) if fmt == "text" else None
    verdict = check(run, repair=repair, on_repair=said)
    if fmt == "json":
        emit(
            to_json(
                {
                    "run": verdict.run,
                    "ok": verdict.ok,
                    "files": verdict.files,
                    "rows": verdict.rows,
                    "problems": verdict.problems,
                    "repaired": verdict.repaired,
                }
            ),
            out,
        )
    else:
        lines = []
        if verdict.ok:
            lines.append(f"{run}: whole ({verdict.files} files, {verdict.rows:,} rows checked)")
        if lines:
            emit("\n".join(lines), out)
        for line in verdict.problems:
            click.echo(f"damaged: {line}", err=True)
    if not verdict.ok:
        if fmt == "text":
            raise TrnprofError(
                f"{run} is damaged ({len(verdict.problems)} problem(s)); re-create it "
                "(or `trnprof check --repair` for the cache)"
            )
        sys.exit(Exit.USAGE)
