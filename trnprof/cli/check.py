"""`trnprof check RUN [--repair]`: is the run whole? Exit 0 when it is, 2 when not."""

from __future__ import annotations

import sys
from pathlib import Path

import click

from .. import derived
from ..errors import TrnprofError
from ..integrity import verify
from ..jsonplain import to_json
from ..manifest import read_manifest
from ..runstore import recover


def _repair_cache(run: Path) -> list[str]:
    """Remove the cache's bad entries and links (never what a link points to)."""
    done = []
    for problem, path in derived.cache_problems(run):
        derived.remove(path)
        done.append(f"removed {path.relative_to(run)} from the cache: {problem}")
    return done


@click.command("check")
@click.argument("run", type=click.Path(path_type=Path))
@click.option("--repair", is_flag=True,
              help="first undo what an interrupted writer left: restore a run a --force commit moved "
                   "aside (an old copy is removed only beside a whole run), remove temporary folders "
                   "of dead writers and damaged entries or links in the derived/ cache")
@click.option("--format", "fmt", type=click.Choice(["text", "json"]), default="text", show_default=True)
def command(run, repair, fmt):
    """Verify RUN in full: every Parquet file listed in its manifest is there, has the recorded
    size and row count and reads back; no file was added; every stored view of its derived/
    cache matches its checksums. Exit 2 when the run or its cache is damaged."""
    repaired = recover(run) if repair else []
    if fmt == "text":  # before anything can fail: a kept copy must be named
        for line in repaired:
            click.echo(f"repaired: {line}")
    try:
        manifest = read_manifest(run, check_files=False)
    except TrnprofError as exc:
        kept = [line for line in repaired if line.startswith("kept ")]
        raise TrnprofError("; ".join([str(exc)] + (kept if fmt == "json" else []))) from None
    if repair:
        cache_lines = _repair_cache(run)
        repaired += cache_lines
        if fmt == "text":
            for line in cache_lines:
                click.echo(f"repaired: {line}")
    verdict = verify(run, manifest)
    verdict.problems += [problem for problem, _ in derived.cache_problems(run)]
    verdict.repaired = repaired
    if fmt == "json":
        click.echo(to_json({"run": verdict.run, "ok": verdict.ok, "files": verdict.files, "rows": verdict.rows,
                            "problems": verdict.problems, "repaired": verdict.repaired}))
    else:
        if verdict.ok:
            click.echo(f"{run}: whole ({verdict.files} files, {verdict.rows:,} rows checked)")
        for line in verdict.problems:
            click.echo(f"damaged: {line}", err=True)
    if not verdict.ok:
        if fmt == "text":
            raise TrnprofError(f"{run} is damaged ({len(verdict.problems)} problem(s)); re-create it "
                               "(or `trnprof check --repair` for the cache)")
        sys.exit(2)
