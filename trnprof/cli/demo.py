"""`trnprof demo`: simulate a small training job with a visible bottleneck, analyze it and write
its HTML report.

The demo's folder carries a marker (`.trnprof-demo`) written before anything else: a later demo
replaces the run, analyze.json and report.html of a folder with the marker (and nothing else in
it), and refuses a folder holding anything else unless --force (docs/cli.md: the overwrite
contract)."""

from __future__ import annotations

import json
from pathlib import Path

import click

from .. import atomic
from ..api import analyze, open_run, report, simulate
from ..collectors.trn1 import demo_config
from ..errors import TrnprofError
from ..rules_engine.document import to_json_bytes
from ..textfmt import cost, duration
from . import _options as options

TOP_FINDINGS = 3
MARKER = ".trnprof-demo"


def _is_demo(folder: Path) -> bool:
    try:
        return json.loads((folder / MARKER).read_text(encoding="utf-8")).get("made_by") == "trnprof demo"
    except (OSError, UnicodeDecodeError, ValueError, AttributeError):
        return False


def claim_folder(out: Path, force: bool) -> bool:
    """Make `out` the demo's folder: new, empty, an earlier demo's, or (with `force`) anything;
    returns whether earlier outputs there may be replaced. Refused otherwise, before any work."""
    if out.exists() and not out.is_dir():
        raise TrnprofError(f"cannot write the demo into {out}: it is not a folder")
    earlier = out.is_dir() and _is_demo(out)
    if out.is_dir() and not earlier and any(out.iterdir()) and not force:
        raise TrnprofError(f"{out} holds files an earlier trnprof demo did not write: choose another folder "
                           "or pass --force to replace its run, analyze.json and report.html")
    if not earlier:
        atomic.write_text(out / MARKER, json.dumps({"made_by": "trnprof demo"}) + "\n")
    return earlier or force


@click.command("demo")
@options.output(type=click.Path(path_type=Path), default=Path("trnprof-demo"), show_default=True,
                help="Folder for the demo's run, analyze.json and report.html (replaced if they hold an earlier demo).")
@options.force("the run, analyze.json and report.html of a folder that is not an earlier demo's")
def command(out: Path, force: bool):
    """Simulate the tiny job with a slow data loader, analyze it, write the HTML report and print a
    short summary with the report's path."""
    replace = claim_folder(out, force)
    run_path = out / "run"
    for name in ("analyze.json", "report.html"):
        atomic.check_replaceable(out / name, replace)
    click.echo("simulating the tiny job on trn1.2xlarge with a slow data loader ...")
    simulate(demo_config(), run_path, overwrite=replace)
    document = analyze(run_path)
    atomic.write_bytes(out / "analyze.json", to_json_bytes(document) + b"\n", overwrite=replace)
    written = report(run_path, out / "report.html", findings=out / "analyze.json", overwrite=replace)
    with open_run(run_path) as run:
        info = run.info()
    job, step = info["job"], info["step_time_s"]
    click.echo(f"job         {job.get('model')} on {job.get('nodes')} x {job.get('instance_type')}: "
               f"{info['world_size']} ranks, {info['steps']} steps")
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
