"""`trnprof whatif RUN --set key=value ...`: fit the Trn1 execution model to RUN, predict the
job changed (docs/whatif.md); `--scale SELECTOR=FACTOR`: replay RUN's dependency graph with
durations scaled, on any run (docs/critical-path.md)."""

from __future__ import annotations

from pathlib import Path

import click

from .. import atomic
from ..errors import TrnprofError
from ..jsonplain import to_json
from ..whatif import whatif
from ..whatif.describe import ALIASES
from ..whatif.render import to_text
from . import _options as options


def _check_output(out: str | None) -> None:
    if out and Path(out).is_dir():
        raise TrnprofError(f"cannot write {out}: it is a folder (give a file name)")
    if out and not Path(out).parent.is_dir():
        raise TrnprofError(f"cannot write {out}: folder {Path(out).parent} does not exist")


def _write(text: str, out: str) -> None:
    """Write `text` to `out` whole or not at all (a temporary sibling renamed into place)."""
    atomic.write_text(out, text + "\n")


@click.command("whatif")
@click.argument("run", type=click.Path(path_type=str))
@click.option("--config", "config_file", type=click.Path(path_type=str),
              help="YAML job description (simulate's config keys) over the run's recorded job; for an "
                   "ingested run, the model, layout and batch the trace cannot tell.")
@click.option("--set", "assignments", multiple=True, metavar="KEY=VALUE",
              help="The change to predict, repeatable: simulate's dotted keys (parallel.tp=16) or the short "
                   f"names {', '.join(sorted(ALIASES))}; faults=[] removes injected faults.")
@click.option("--scale", "scales", multiple=True, metavar="SELECTOR=FACTOR",
              help="Replay the run's dependency graph with these durations scaled, repeatable (works on any "
                   "run, no job description): collective=0 removes collectives, input=0.5 halves input "
                   "waits, rank:3=peers brings rank 3 to its peers' pace, name:GLOB, size:small|medium|large, "
                   "gap (docs/critical-path.md).")
@options.output_format("text", "json")
@options.output("Write the result to this file instead of standard output.")
@options.threads
def command(run, config_file, assignments, scales, fmt, out, threads):
    """Fit the execution model's free parameters to RUN's steady-state steps, then predict the
    step time, throughput, MFU and HBM peak of the job with the --set changes, with an
    uncertainty band from the fit's residual.

    Exit codes: 0 done, 2 usage or input error (an unknown key, a bad value, a run that is not a
    Trn1 job and no description of one)."""
    _check_output(out)  # before the work
    if scales:
        document, render = _replay(run, scales, assignments, config_file, threads)
    else:
        document, render = whatif(run, list(assignments), config=config_file, threads=threads), to_text
    text = to_json(document) if fmt == "json" else render(document)
    if out:
        _write(text, out)
    else:
        click.echo(text)


def _replay(run, scales, assignments, config_file, threads):
    """The replay's document and its text renderer."""
    import time

    from ..api import open_run
    from ..critical_path import scale, whatif as replay

    if assignments or config_file:
        raise TrnprofError("--scale replays the trace; --set/--config change the execution model's job: "
                           "give one or the other")
    started = time.perf_counter()
    for spec in scales:
        scale.parse(spec)   # a bad selector fails before the run is read
    with open_run(run, threads=threads) as opened:
        return replay.document(opened, list(scales), started), replay.to_text
