"""`trnprof ingest PATH... -o RUN`: real traces (PyTorch profiler, Neuron tools) -> a run."""

from __future__ import annotations

import click

from ..api import ingest_traces, input_formats
from . import _options as options
from ._output import progress_bar

INPUT_FORMATS = ["auto", *input_formats()]  # the format registry's, installed ones included
PROGRESS_MIN_BYTES = 64 << 20  # below this an ingest takes about a second: no bar


@click.command("ingest")
@click.argument("paths", nargs=-1, required=True, type=click.Path(path_type=str))
@options.output("Run folder to write.", required=True)
@click.option(
    "--input-format",
    "fmt",
    default="auto",
    show_default=True,
    type=click.Choice(INPUT_FORMATS),
    help="input format (auto: detected from each file's content)",
)
@click.option(
    "--format",
    "legacy_fmt",
    type=click.Choice(INPUT_FORMATS),
    hidden=True,
    help="deprecated spelling of --input-format (--format names an output format elsewhere)",
)
@click.option(
    "--rank",
    type=int,
    default=None,
    help="rank of a trace that names none (no distributedInfo, no rank-N file name); "
    "for Neuron outputs, the rank of NeuronCore 0",
)
@options.force("an existing run at the output path")
def command(paths, out, fmt, legacy_fmt, rank, force):
    """Ingest PyTorch profiler / Chrome traces (.json, .json.gz, or folders of per-rank files)
    and Neuron tool outputs into the run folder RUN. Every source entry ends up in events,
    counters, a metadata table or the quarantine table (see docs/ingest.md)."""
    if legacy_fmt:
        click.echo("warning: --format is deprecated for ingest: use --input-format", err=True)
        fmt = legacy_fmt if fmt == "auto" else fmt
    summary = ingest_traces(
        paths,
        out,
        fmt=fmt,
        rank=rank,
        force=force,
        bar=progress_bar("ingesting", PROGRESS_MIN_BYTES, terminal_only=True),
    )
    for warning in summary.get("warnings", []):
        click.echo(f"warning: {warning}", err=True)
    reasons = summary["quarantine_reasons"]
    why = f" ({', '.join(f'{n:,} {r}' for r, n in sorted(reasons.items()))})" if reasons else ""
    if summary.get("truncated_args"):
        why += f", {summary['truncated_args']:,} oversized args truncated"
    click.echo(
        f"{summary['run']}: {summary['events']:,} events, {summary['counters']:,} counters, "
        f"{summary['quarantined']:,} quarantined{why}, {summary['ranks']} rank(s) "
        f"from {summary['files']} input(s)"
    )
