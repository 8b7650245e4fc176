"""`trnprof report RUN -o report.html`: one self-contained HTML page (works offline), optionally
with every chart as PNG and SVG."""

from __future__ import annotations

import click

from ..api import report
from . import _options as options


def _size(n: int) -> str:
    return f"{n / 1e6:.1f} MB" if n >= 1e6 else f"{n / 1e3:.0f} kB"


@click.command("report")
@click.argument("run", type=click.Path(path_type=str))
@options.output("HTML file to write.", default="report.html", show_default=True)
@options.force("an existing output file")
@click.option(
    "--findings",
    type=click.Path(path_type=str),
    help="Use a saved `trnprof analyze RUN --format json` result instead of running the rules.",
)
@click.option("--no-analyze", is_flag=True, help="Do not run the rules; the page says findings were not computed.")
@click.option(
    "--png",
    "png_dir",
    type=click.Path(path_type=str),
    help="Also write each chart to this folder as PNG and SVG (for docs and tickets).",
)
@click.option(
    "--baseline",
    type=click.Path(path_type=str),
    help="Add a comparison with this run (as `trnprof diff BASELINE RUN` compares them).",
)
@options.config("Rules config (YAML) for the findings, and the engine settings.")
@options.threads
@options.engine
def command(run, out, force, findings, no_analyze, png_dir, baseline, threads, config):
    """Write the HTML report of RUN: summary, findings, step breakdown, timeline, collectives,
    memory, stragglers and input pipeline, in one file that makes no network request."""
    if findings and no_analyze:
        raise click.UsageError("--findings and --no-analyze exclude each other")
    result = report(
        run,
        out,
        findings=findings,
        analyze=not no_analyze,
        png_dir=png_dir,
        threads=threads,
        baseline=baseline,
        config=config,
        overwrite=force,
    )
    click.echo(
        f"wrote {result['path']} ({_size(result['bytes'])}, {len(result['charts'])} charts"
        + (f", {result['findings']} findings)" if result["findings"] is not None else ", findings not computed)")
    )
    for section, reason in result["empty"].items():
        click.echo(f"  {section}: {reason}")
    if result["exports"]:
        click.echo(f"wrote {len(result['exports'])} chart files to {png_dir}")
