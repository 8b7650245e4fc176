"""`trnprof record [options] -- CMD ...`: run a training command under the PyTorch profiler
(no code change), sample host metrics beside it, and ingest everything into one run."""

from __future__ import annotations

import shlex
import sys
import time

import click

from .. import api
from ..rules_engine.render import to_text
from ..textfmt import size as fmt_size
from . import _options as options


def _default_output() -> str:
    return time.strftime("trnprof-record-%Y%m%d-%H%M%S")


@click.command("record", context_settings={"ignore_unknown_options": True, "allow_interspersed_args": False})
@click.argument("command", nargs=-1, required=True, type=click.UNPROCESSED)
@options.output("Run folder to write [default: trnprof-record-<date>-<time>].")
@click.option("--wait", type=click.IntRange(min=0), default=1, show_default=True,
              help="Steps to skip after the first one before the profiler warms up.")
@click.option("--warmup", type=click.IntRange(min=0), default=1, show_default=True,
              help="Steps recorded and thrown away (the profiler's own start-up cost).")
@click.option("--active", type=click.IntRange(min=1), default=5, show_default=True, help="Steps kept in the trace.")
@click.option("--shapes", is_flag=True, help="Record input shapes of ops (record_shapes).")
@click.option("--memory", is_flag=True, help="Record allocator events (profile_memory): hbm.* / host.* counters.")
@click.option("--stack", is_flag=True, help="Record Python stacks of ops (with_stack; larger traces).")
@click.option("--interval", type=click.FloatRange(min=0.05), default=0.5, show_default=True,
              help="Seconds between host-metric samples (neuron-monitor: whole seconds, 1 at least).")
@click.option("--max-size", "max_mb", type=click.FloatRange(min=0.001), metavar="MB",
              help="Cap of the capture folder: host metrics and neuron-monitor stop writing at it, and a "
                   "rank starts no trace once it is reached.")
@click.option("--neuron", "neuron_mode", type=click.Choice(["auto", "on", "off"]), default="auto", show_default=True,
              help="Neuron runtime system profile (auto: when /dev/neuron0 exists) and the neuron-monitor "
                   "sidecar (when on PATH, unless off).")
@click.option("--capture", type=click.Path(path_type=str),
              help="Keep the raw capture (traces, host metrics, Neuron outputs) in this new or empty folder.")
@click.option("--keep-capture", is_flag=True, help="Keep the capture folder beside the run instead of removing it.")
@click.option("--analyze", is_flag=True, help="Print the findings of the run afterwards.")
@click.option("--report", "report_path", type=click.Path(path_type=str), help="Write the HTML report to this file.")
@options.force("an existing run at the output path, and an existing --report file")
def command(command, out, wait, warmup, active, shapes, memory, stack, interval, max_mb, neuron_mode, capture,
            keep_capture, analyze, report_path, force):
    """Run COMMAND (put `--` before it) and profile it: every Python process of it that steps a
    torch optimizer (or calls trnprof.step()) writes one trace of `active` steps per rank
    (torchrun's RANK), host metrics are sampled throughout, and on a Neuron host the runtime's
    system profile and neuron-monitor are captured too. Then everything is ingested into the
    run RUN. Exits with the command's exit code; Ctrl-C stops the command and keeps what was
    captured."""
    from pathlib import Path

    from ..atomic import check_replaceable
    from ..record.recorder import check_output, record
    from ..record.runtime import Settings

    out = out or _default_output()
    check_output(Path(out), force)  # before the job runs, and before a word about it
    if report_path:
        check_replaceable(report_path, force)
    settings = Settings(capture="", wait=wait, warmup=warmup, active=active, shapes=shapes, memory=memory,
                        stack=stack, max_bytes=int(max_mb * 1e6) if max_mb else None)
    click.echo(f"recording: {shlex.join(command)}  (steps: wait {wait}, warm-up {warmup}, active {active}; "
               f"host metrics every {interval:g} s)", err=True)
    done = record(list(command), out, settings, force=force, capture=capture, keep=keep_capture,
                  neuron_mode=neuron_mode, interval=interval, note=lambda text: click.echo(f"note: {text}", err=True))
    captured = done.capture
    if captured.stopped_by:
        click.echo(f"stopped by {captured.stopped_by}: kept what was captured", err=True)
    click.echo(f"captured {len(captured.traces)} trace(s), {captured.host_samples} host-metric sample(s), "
               f"{captured.monitor_reports} neuron-monitor report(s): {fmt_size(captured.bytes)}"
               + (f" in {done.kept}" if done.kept else ""))
    if done.error:
        click.echo(f"error: no run written: {done.error}", err=True)
        sys.exit(captured.returncode or 2)
    summary = done.summary
    click.echo(f"{summary['run']}: {summary['events']:,} events, {summary['counters']:,} counters, "
               f"{summary['ranks']} rank(s)")
    if not captured.traces:
        click.echo("note: no PyTorch trace: no process stepped a torch optimizer or called trnprof.step() "
                   "after its first step", err=True)
    if analyze:
        _analyze(summary["run"])
    if report_path:
        written = api.report(summary["run"], report_path, overwrite=force)
        click.echo(f"wrote {written['path']}")
    sys.exit(captured.returncode)


def _analyze(run: str) -> None:
    click.echo(to_text(api.analyze(run)))
