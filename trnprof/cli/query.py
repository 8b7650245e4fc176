"""`trnprof query RUN SQL`: any SQL over the run's tables and stdlib views."""

from __future__ import annotations

import click

from ..api import open_run
from ._output import echo_frame
from . import _options as options


@click.command("query")
@click.argument("run", type=click.Path(path_type=str))
@click.argument("sql")
@options.output_format("table", "csv", "json")
@options.config("YAML config file: its engine, spark_master and spark keys choose the engine.")
@options.engine
def command(run, sql, fmt, config):
    """Run SQL over RUN's tables (events, counters, ranks), the session tables run_job (the
    manifest's job metadata) and hardware (the Trainium hardware table), and the stdlib views.

    SQL is DuckDB's dialect on every engine (--engine spark transpiles it).

    Example: trnprof query RUN "SELECT rank, AVG(idle) FROM step_breakdown GROUP BY rank"
    """
    with open_run(run) as opened:
        echo_frame(opened.sql(sql), fmt)
