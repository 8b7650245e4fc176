"""`trnprof record [options] -- CMD ...`: run a training command under the PyTorch profiler
(no code change), sample host metrics beside it, and ingest everything into one run."""

from __future__ import annotations

import math
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


class Finite(click.FloatRange):
    """A float range that refuses nan (a range check alone lets it through)."""

    def convert(self, value, param, ctx):
        number = super().convert(value, param, ctx)
        if math.isnan(number):
            self.fail(f"{value!r} is not a number", param, ctx)
        return number


MAX_STEPS = 1_000_000_000


@click.command("record", context_settings={"ignore_unknown_options": True, "allow_interspersed_args": False})
@click.argument("command", nargs=-1, required=True, type=click.UNPROCESSED)
@options.output("Run folder to write [default: trnprof-record-<date>-<time>].")
@click.option(
    "--wait",
    type=click.IntRange(min=0, max=MAX_STEPS),
    default=1,
    show_default=True,
    help="Steps to skip after the first one before the profiler warms up.",
)
@click.option(
    "--warmup",
    type=click.IntRange(min=0, max=MAX_STEPS),
    default=1,
    show_default=True,
    help="Steps recorded and thrown away (the profiler's own start-up cost).",
)
@click.option(
    "--active", type=click.IntRange(min=1, max=MAX_STEPS), default=5, show_default=True, help="Steps kept in the trace."
)
@click.option("--shapes", is_flag=True, help="Record input shapes of ops (record_shapes).")
@click.option("--memory", is_flag=True, help="Record allocator events (profile_memory): hbm.* / host.* counters.")
@click.option("--stack", is_flag=True, help="Record Python stacks of ops (with_stack; larger traces).")
@click.option(
    "--interval",
    type=Finite(min=0.05, max=3600),
    default=0.5,
    show_default=True,
    help="Seconds between host-metric samples (neuron-monitor: whole seconds, 1 at least).",
)
@click.option(
    "--max-size",
    "max_mb",
    type=Finite(min=0.001, max=1e9),
    metavar="MB",
    help="Cap of the capture folder: host metrics and neuron-monitor stop writing at it, and a "
    "rank starts no trace once it is reached.",
)
@click.option(
    "--neuron",
    "neuron_mode",
    type=click.Choice(["auto", "on", "off"]),
    default="auto",
    show_default=True,
    help="Neuron runtime system profile (auto: when /dev/neuron0 exists), with the device profile "
    "processed by neuron-explorer when it is on PATH, and the neuron-monitor sidecar (when on "
    "PATH, unless off).",
)
@click.option(
    "--capture",
    type=click.Path(path_type=str),
    help="Keep the raw capture (traces, host metrics, Neuron outputs) in this new or empty folder.",
)
@click.option("--keep-capture", is_flag=True, help="Keep the capture folder beside the run instead of removing it.")
@click.option("--analyze", is_flag=True, help="Print the findings of the run afterwards.")
@click.option("--report", "report_path", type=click.Path(path_type=str), help="Write the HTML report to this file.")
@options.force("an existing run at the output path, and an existing HTML page at --report")
def command(
    command,
    out,
    wait,
    warmup,
    active,
    shapes,
    memory,
    stack,
    interval,
    max_mb,
    neuron_mode,
    capture,
    keep_capture,
    analyze,
    report_path,
    force,
):
    """Run COMMAND (put `--` before it) and profile it: every Python process of it that steps a
    torch optimizer (or calls trnprof.step()) writes one trace of `active` steps per rank
    (torchrun's RANK), host metrics are sampled throughout, and on a Neuron host the runtime's
    system profile and neuron-monitor are captured too. Then everything is ingested into the
    run RUN. Exits with the command's exit code; Ctrl-C stops the command and keeps what was
    captured."""
    out = out or _default_output()
    made = api.record(
        list(command),
        out,
        wait=wait,
        warmup=warmup,
        active=active,
        shapes=shapes,
        memory=memory,
        stack=stack,
        max_bytes=int(max_mb * 1e6) if max_mb else None,
        interval=interval,
        neuron_mode=neuron_mode,
        capture=capture,
        keep_capture=keep_capture,
        analyze=analyze,
        report=report_path,
        force=force,
        note=lambda text: click.echo(f"note: {text}", err=True),
        started=lambda: click.echo(
            f"recording: {shlex.join(command)}  (steps: wait {wait}, warm-up "
            f"{warmup}, active {active}; host metrics every {interval:g} s)",
            err=True,
        ),
        recorded=_say_recorded,
    )
    if made.document is not None:
        click.echo(to_text(made.document))
    if made.report is not None:
        click.echo(f"wrote {made.report['path']}")
    sys.exit(made.recorded.capture.returncode)  # the command's own code: trnprof's failure is said


def _say_recorded(done) -> None:
    """What was captured and how the recording ended, said before the findings and the page."""
    captured = done.capture
    click.echo(
        f"captured {len(captured.traces)} trace(s), {captured.host_samples} host-metric sample(s), "
        f"{captured.monitor_reports} neuron-monitor report(s)"
        + (f", {len(captured.device_profiles)} device profile(s)" if captured.device_profiles else "")
        + f": {fmt_size(captured.bytes)}"
        + (f" in {done.kept}" if done.kept else "")
    )
    for line in endings(done):
        click.echo(line, err=True)
    if done.error:
        click.echo(f"error: no run written: {done.error}", err=True)
        return
    summary = done.summary
    click.echo(
        f"{summary['run']}: {summary['events']:,} events, {summary['counters']:,} counters, {summary['ranks']} rank(s)"
    )


def endings(done) -> list[str]:
    """What the user must know about how the recording ended: a stop, what was kept and where,
    no step seen (why, what to try), processes sharing a RANK, processes left running."""
    captured, lines = done.capture, []
    run = done.summary["run"] if done.summary else None
    if captured.stopped_by:
        kept = [f"{len(captured.traces)} trace(s)"] + (
            [f"{captured.host_samples} host-metric sample(s)"] if captured.host_samples else []
        )
        where = f"in the run {run}" if run else f"in {done.kept}" if done.kept else "nowhere: nothing was captured"
        lines.append(f"stopped by {captured.stopped_by}: kept {', '.join(kept)} {where}")
    for path in captured.dropped:
        if path in captured.device_profiles:
            lines.append(
                f"note: Neuron Explorer's profile {path} could not be ingested "
                f"({captured.refused.get(path, 'refused')}): left out of the run, kept in {done.kept}"
            )
            continue
        lines.append(
            f"note: {path.name} was cut short (its process was stopped while writing it): left out of "
            f"the run, kept in {done.kept}"
        )
    for path in captured.unfinished:
        lines.append(
            f"note: {path.name.lstrip('.').replace('.partial', '')} was not finished (its process was "
            f"killed while writing it): not in the run; what was written is kept in {done.kept}"
        )
    if not captured.traces and not captured.stopped_by and not captured.unfinished:
        lines.append(
            "note: no step seen: no Python process of the command stepped a torch optimizer "
            "(torch.optim) or called trnprof.step() after its first step"
            + (
                f" often enough: {captured.steps_seen} step(s) counted after the first, too few to reach "
                f"the profiler's window (lower --wait or --warmup)"
                if captured.steps_seen
                else ""
            )
            + ". Try: a command that trains in Python with torch.optim (a shell wrapper is fine), "
            "more steps or --wait 0, or trnprof.step() at the end of each step of your own loop"
        )
    ranks: dict[str, list[str]] = {}
    for path in captured.apart:
        ranks.setdefault(path.name.split(".")[0].replace("job_", "").replace("trace_", ""), []).append(path.name)
    for rank, names in sorted(ranks.items()):
        lines.append(
            f"note: two or more processes ran with the same RANK ({rank.replace('rank', 'rank ')}): the first "
            f"one's files are in the run, the others' kept apart in {done.kept}: {', '.join(names)}"
        )
    if captured.lingering:
        lines.append(
            "note: processes of the command still run after it ended (detached): what they "
            "record later is not in the run"
        )
    return lines
