"""`trnprof query RUN SQL`: one SELECT over the run's tables and stdlib views, in the rule sandbox
unless --unsafe."""

from __future__ import annotations

import click

from ..api import query
from . import _options as options
from ._output import check_destination, emit, frame_text


@click.command("query")
@click.argument("run", type=click.Path(path_type=str))
@click.argument("sql")
@options.document("table", "csv", "json")
@options.config("YAML config file: its engine, spark_master and spark keys choose the engine.")
@click.option(
    "--timeout",
    type=click.FloatRange(min=0.001),
    help="Time limit for the query (and the views it computes first), seconds [default: 60; none with --unsafe].",
)
@click.option(
    "--unsafe",
    is_flag=True,
    help="Lift the sandbox: any SQL DuckDB runs, with the files, settings and extensions of the "
    "user who runs trnprof, and no time limit unless --timeout.",
)
@options.threads
@options.engine
def command(run, sql, fmt, out, config, timeout, unsafe, threads, force):
    """Run SQL over RUN's tables (events, counters, ranks), the session tables run_job (the
    manifest's job metadata) and hardware (the Trainium hardware table), the stdlib views and
    the critical_path tables.

    SQL is DuckDB's dialect on every engine (--engine spark transpiles it). It runs in the rule
    sandbox: one SELECT, reading only the run (no file, URL, ATTACH, COPY, SET, PRAGMA, INSTALL or
    LOAD), at most 1,000,000 rows, within --timeout; Ctrl-C stops it (exit 130). --unsafe lifts
    all of this (docs/rules/index.md, "trnprof query in the sandbox").

    Example: trnprof query RUN "SELECT rank, AVG(idle) FROM step_breakdown GROUP BY rank"
    """
    check_destination(out, force)
    emit(frame_text(query(run, sql, unsafe=unsafe, timeout=timeout, threads=threads), fmt), out)
