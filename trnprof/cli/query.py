"""`trnprof query RUN SQL`: any SQL over the run's tables and stdlib views."""

from __future__ import annotations

import click

from ..api import open_run
from ._output import echo_frame


@click.command("query")
@click.argument("run", type=click.Path(path_type=str))
@click.argument("sql")
@click.option("--format", "fmt", type=click.Choice(["table", "csv", "json"]), default="table", show_default=True)
def command(run, sql, fmt):
    """Run SQL over RUN's tables (events, counters, ranks) and the stdlib views.

    Example: trnprof query RUN "SELECT rank, AVG(idle) FROM step_breakdown GROUP BY rank"
    """
    with open_run(run) as opened:
        echo_frame(opened.sql(sql), fmt)
