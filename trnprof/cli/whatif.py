"""`trnprof whatif RUN --set key=value ...`: fit the Trn1 execution model to RUN, predict the
job changed (docs/whatif.md); `--scale SELECTOR=FACTOR`: replay RUN's dependency graph with
durations scaled, on any run (docs/critical-path.md)."""

from __future__ import annotations

import click

from ..api import WHATIF_ALIASES as ALIASES
from ..api import whatif
from ..jsonplain import to_json
from ..whatif.render import to_text
from . import _options as options
from ._output import check_destination, emit, render


@click.command("whatif")
@click.argument("run", type=click.Path(path_type=str))
@click.option(
    "--job",
    "job_file",
    type=click.Path(path_type=str),
    help="YAML job description (simulate's config keys) over the run's recorded job; for an "
    "ingested run, the model, layout and batch the trace cannot tell.",
)
@click.option(
    "--set",
    "assignments",
    multiple=True,
    metavar="KEY=VALUE",
    help="The change to predict, repeatable: simulate's dotted keys (parallel.tp=16) or the short "
    f"names {', '.join(sorted(ALIASES))}; faults=[] removes injected faults.",
)
@click.option(
    "--scale",
    "scales",
    multiple=True,
    metavar="SELECTOR=FACTOR",
    help="Replay the run's dependency graph with these durations scaled, repeatable (works on any "
    "run, no job description): collective=0 removes collectives, input=0.5 halves input "
    "waits, rank:3=peers brings rank 3 to its peers' pace, name:GLOB, size:small|medium|large, under:20us, "
    "gap (docs/critical-path.md).",
)
@options.document("text", "json")
@options.config("YAML config file: its engine, spark_master and spark keys choose the engine.")
@options.threads
@options.engine
def command(run, job_file, assignments, scales, fmt, out, config, threads, force):
    """Fit the execution model's free parameters to RUN's steady-state steps, then predict the
    step time, throughput, MFU and HBM peak of the job with the --set changes, with an
    uncertainty band from the fit's residual.

    Exit codes: 0 done, 2 usage or input error (an unknown key, a bad value, a run that is not a
    Trn1 job and no description of one)."""
    check_destination(out, force)  # before the work
    document = whatif(run, list(assignments), job=job_file, scales=scales, threads=threads)
    emit(render(document, fmt, {"json": to_json, "text": to_text}), out)
