"""`trnprof demo`: a first look at trnprof on a run that ships with it."""

from __future__ import annotations

from importlib import resources

import click

from ..api import open_run
from .info import format_info
from ._output import echo_frame

SAMPLE_RUN = "synthetic-8rank"

BREAKDOWN_BY_RANK = """
SELECT rank, COUNT(*) AS steps,
       ROUND(AVG(dur) / 1e6, 3) AS step_ms,
       ROUND(100.0 * SUM(compute) / SUM(dur), 1) AS compute_pct,
       ROUND(100.0 * SUM(exposed_comm) / SUM(dur), 1) AS exposed_comm_pct,
       ROUND(100.0 * SUM(input_wait) / SUM(dur), 1) AS input_wait_pct,
       ROUND(100.0 * SUM(other) / SUM(dur), 1) AS other_pct,
       ROUND(100.0 * SUM(idle) / SUM(dur), 1) AS idle_pct
FROM step_breakdown GROUP BY rank ORDER BY rank
"""


@click.command("demo")
def command():
    """Open the shipped sample run and show its summary and per-rank step breakdown."""
    with resources.as_file(resources.files("trnprof.sample_traces") / SAMPLE_RUN) as path:
        with open_run(path) as run:
            click.echo(format_info(run.info()))
            click.echo("\nstep breakdown per rank (share of step time)")
            echo_frame(run.sql(BREAKDOWN_BY_RANK), "table")
