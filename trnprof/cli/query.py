"""`trnprof query RUN SQL`: any SQL over the run's tables and stdlib views."""

from __future__ import annotations

import click

from ..api import open_run
from ._output import check_destination, emit, frame_text
from . import _options as options


@click.command("query")
@click.argument("run", type=click.Path(path_type=str))
@click.argument("sql")
@options.document("table", "csv", "json")
@options.config("YAML config file: its engine, spark_master and spark keys choose the engine.")
@options.threads
@options.engine
def command(run, sql, fmt, out, config, threads, force):
    """Run SQL over RUN's tables (events, counters, ranks), the session tables run_job (the
    manifest's job metadata) and hardware (the Trainium hardware table), and the stdlib views.

    SQL is DuckDB's dialect on every engine (--engine spark transpiles it).

    Example: trnprof query RUN "SELECT rank, AVG(idle) FROM step_breakdown GROUP BY rank"
    """
    check_destination(out, force)
    with open_run(run, threads=threads) as opened:
        emit(frame_text(opened.sql(sql), fmt), out)
