"""`trnprof export RUN --format chrome -o trace.json.gz`: a run for other tools (Perfetto UI)."""

from __future__ import annotations

import click

from ..api import export
from . import _options as options


@click.command("export")
@click.argument("run", type=click.Path(path_type=str))
@click.option(
    "--format",
    "fmt",
    type=click.Choice(["chrome"]),
    default="chrome",
    show_default=True,
    help="chrome: Chrome trace JSON (opens in ui.perfetto.dev and chrome://tracing)",
)
@options.output("File to write (.json or .json.gz).", required=True)
@options.force("an existing output file")
@options.config("YAML config file: its engine, spark_master and spark keys choose the engine.")
@options.threads
@options.engine
def command(run, fmt, out, force, config, threads):
    """Export RUN (simulated or ingested): a process per rank, a thread per lane, counters as
    counter tracks. `trnprof ingest` reads the file back into the same run."""
    counts = export(run, out, fmt=fmt, force=force, threads=threads)
    skipped = (
        f", {counts['skipped_counters']:,} non-finite counter samples left out" if counts["skipped_counters"] else ""
    )
    click.echo(
        f"{out}: {counts['events']:,} events, {counts['counters']:,} counter samples, "
        f"{counts['ranks']} rank(s){skipped}"
    )
