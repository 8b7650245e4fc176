"""`trnprof whatif RUN --set key=value ...`: fit the Trn1 execution model to RUN, predict the
job changed (docs/whatif.md)."""

from __future__ import annotations

from pathlib import Path

import click

from ..errors import TrnprofError
from ..jsonplain import to_json
from ..api import whatif
from ..whatif.describe import ALIASES
from ..whatif.render import to_text
from . import _options as options


def _check_output(out: str | None) -> None:
    if out and not Path(out).parent.is_dir():
        raise TrnprofError(f"cannot write {out}: folder {Path(out).parent} does not exist")


def _write(text: str, out: str) -> None:
    """Write `text` to `out` whole or not at all (a temporary sibling renamed into place)."""
    path = Path(out)
    tmp = path.with_name(f".{path.name}.tmp")
    tmp.write_text(text + "\n", encoding="utf-8")
    tmp.replace(path)


@click.command("whatif")
@click.argument("run", type=click.Path(path_type=str))
@click.option("--config", "config_file", type=click.Path(path_type=str),
              help="YAML job description (simulate's config keys) over the run's recorded job; for an "
                   "ingested run, the model, layout and batch the trace cannot tell.")
@click.option("--set", "assignments", multiple=True, metavar="KEY=VALUE",
              help="The change to predict, repeatable: simulate's dotted keys (parallel.tp=16) or the short "
                   f"names {', '.join(sorted(ALIASES))}; faults=[] removes injected faults.")
@options.output_format("text", "json")
@options.output("Write the result to this file instead of standard output.")
@options.threads
def command(run, config_file, assignments, fmt, out, threads):
    """Fit the execution model's free parameters to RUN's steady-state steps, then predict the
    step time, throughput, MFU and HBM peak of the job with the --set changes, with an
    uncertainty band from the fit's residual.

    Exit codes: 0 done, 2 usage or input error (an unknown key, a bad value, a run that is not a
    Trn1 job and no description of one)."""
    _check_output(out)  # before the work
    document = whatif(run, list(assignments), config=config_file, threads=threads)
    text = to_json(document) if fmt == "json" else to_text(document)
    if out:
        _write(text, out)
    else:
        click.echo(text)
