"""`trnprof demo`: simulate a small training job with a visible bottleneck and look at it."""

from __future__ import annotations

from pathlib import Path

import click

from ..api import open_run
from ..collectors.trn1 import demo_config, simulate
from ._output import echo_frame
from .info import format_info

# Per rank, over the steps after the first (the first step is dominated by compilation).
BREAKDOWN_BY_RANK = """
SELECT rank, COUNT(*) AS steps,
       ROUND(AVG(dur) / 1e6, 2) AS step_ms,
       ROUND(100.0 * SUM(compute) / SUM(dur), 1) AS compute_pct,
       ROUND(100.0 * SUM(exposed_comm) / SUM(dur), 1) AS exposed_comm_pct,
       ROUND(100.0 * SUM(input_wait) / SUM(dur), 1) AS input_wait_pct,
       ROUND(100.0 * SUM(other) / SUM(dur), 1) AS other_pct,
       ROUND(100.0 * SUM(idle) / SUM(dur), 1) AS idle_pct
FROM step_breakdown WHERE step > (SELECT MIN(step) FROM steps) GROUP BY rank ORDER BY rank
"""


@click.command("demo")
@click.option("-o", "--out", type=click.Path(path_type=Path), default=Path("trnprof-demo"), show_default=True,
              help="Folder for the demo's run (replaced if it holds an earlier demo).")
def command(out: Path):
    """Simulate the tiny job with a slow data loader and show where its step time goes."""
    run_path = out / "run"
    click.echo("simulating the tiny job on trn1.2xlarge with a slow data loader ...")
    simulate(demo_config(), run_path, overwrite=run_path.exists())
    with open_run(run_path) as run:
        click.echo(format_info(run.info()))
        click.echo("\nstep breakdown per rank, steps after the first (share of step time)")
        echo_frame(run.sql(BREAKDOWN_BY_RANK), "table")
    click.echo(f"\nrun written to {run_path}")
