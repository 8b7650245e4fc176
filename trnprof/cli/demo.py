"""`trnprof demo`: simulate a small training job with a visible bottleneck, analyze it and write
its HTML report (`trnprof.api.demo`: the folder it claims, what it replaces)."""

from __future__ import annotations

from pathlib import Path

import click

from ..api import demo
from ..textfmt import cost, duration
from . import _options as options

TOP_FINDINGS = 3


@click.command("demo")
@options.output(
    type=click.Path(path_type=Path),
    default=Path("trnprof-demo"),
    show_default=True,
    help="Folder for the demo's run, analyze.json and report.html (replaced if they hold an earlier demo).",
)
@options.force("the run, analyze.json and report.html of a folder that is not an earlier demo's")
def command(out: Path, force: bool):
    """Simulate the tiny job with a slow data loader, analyze it, write the HTML report and print a
    short summary with the report's path."""
    made = demo(
        out,
        force=force,
        started=lambda: click.echo("simulating the tiny job on trn1.2xlarge with a slow data loader ..."),
    )
    run_path, document, written, info = made["run"], made["document"], made["report"], made["info"]
    job, step = info["job"], info["step_time_s"]
    click.echo(
        f"job         {job.get('model')} on {job.get('nodes')} x {job.get('instance_type')}: "
        f"{info['world_size']} ranks, {info['steps']} steps"
    )
    click.echo(f"step time   median {duration(step['median'])}, p95 {duration(step['p95'])}")
    if info["throughput"]:
        click.echo(f"throughput  {info['throughput']['value']:,.1f} {info['throughput']['unit']}")
    click.echo(f"findings    {len(document.findings)}, most severe first, then by time lost:")
    for finding in document.findings[:TOP_FINDINGS]:
        click.echo(f"  {finding.severity:<7} {finding.code} {finding.title}: {cost(finding.impact)}")
    click.echo(f"run         {run_path}")
    click.echo(f"report      {Path(written['path']).resolve()}  (open it in a browser; works offline)")
    if document.findings:
        top = document.findings[0]
        click.echo(f"fix first   {top.code} {top.title}: {top.recommendation}")
    click.echo(f"next        trnprof analyze {run_path}            # every finding, with evidence")
    click.echo(f"            trnprof report {run_path} -o report.html")
    click.echo("            trnprof record --analyze -- python train.py   # your own PyTorch job (docs/record.md)")
