"""`trnprof info RUN`: world size, steps, step time, throughput, event counts, time span."""

from __future__ import annotations

import click

from ..api import run_info
from ..jsonplain import to_json
from ..textfmt import duration, terminal
from . import _options as options
from ._output import check_destination, emit, render


def format_info(info: dict) -> str:
    lines = [
        f"run          {info['run']}",
        f"source       {info['source']}",
        f"world size   {info['world_size']}",
        f"steps        {info['steps']}",
    ]
    step_time = info["step_time_s"]
    if step_time:
        lines.append(
            f"step time    typical (median) {duration(step_time['median'])}, p95 {duration(step_time['p95'])} "
            f"over {step_time['steps']} steady step{'s' if step_time['steps'] != 1 else ''}"
        )
        lines.append(
            f"effective    {duration(step_time['effective'])} per step (wall time over the steady steps, "
            f"{duration(step_time['wall'])}), {step_time['outlier_share'] or 0:.1%} of it above the typical step"
        )
    partial = info.get("partial_steps") or []
    if partial:
        cut = ", ".join(
            f"step {p['step']} on rank {p['rank']} ({duration(p['recorded_s'])} recorded)" for p in partial[:3]
        ) + (f", +{len(partial) - 3} more" if len(partial) > 3 else "")
        lines.append(
            f"partial      {len(partial)} step{'s' if len(partial) != 1 else ''} cut by the trace's "
            f"start or end, left out of every statistic and rule: {cut}"
        )
    for warm in info["warmup"]:
        compiles = f", {warm['compiles']:,} compile{'s' if warm['compiles'] != 1 else ''}" if warm["compiles"] else ""
        lines.append(f"warm-up      step {warm['step']}: {duration(warm['seconds'])}{compiles}")
    throughput = info["throughput"]
    lines.append(
        "throughput   "
        + (
            _pair(f"{throughput['value']:,.1f}", throughput["effective"], ",.1f") + f" {throughput['unit']}"
            if throughput
            else "unknown"
        )
    )
    if info.get("mfu") is not None:
        lines.append("MFU          " + _pair(f"{info['mfu']:.1%}", info.get("effective_mfu"), ".1%"))
    for outlier in info.get("outlier_steps", []):
        rank = f" (rank {outlier['rank']})" if outlier["rank"] is not None else ""
        lines.append(
            f"long step    step {outlier['step']}: {duration(outlier['seconds'])}, "
            f"+{duration(outlier['excess_s'])} over the typical step: {outlier['cause']}{rank}"
        )
    span = info["time_span"]
    if span:
        lines.append(f"time span    {span['seconds']:.3f} s")
    events = info["events"]
    lines.append(f"events       {events['total']:,}")
    lines += [f"  {kind:<12} {n:,}" for kind, n in events["by_kind"].items()]
    counters = info["counters"]
    lines.append(f"counters     {counters['total']:,}")
    lines += [f"  {name:<24} {n:,}" for name, n in counters["by_name"].items()]
    return "\n".join(lines)


def _pair(typical: str, effective, spec: str) -> str:
    return f"typical {typical}" + (f", effective {format(effective, spec)}" if effective is not None else "")


@click.command("info")
@click.argument("run", type=click.Path(path_type=str))
@options.document("text", "json")
@options.config("YAML config file: its engine, spark_master and spark keys choose the engine.")
@options.threads
@options.engine
def command(run, fmt, out, config, threads, force):
    """Summarise RUN: world size, steps, step time, throughput, counts, time span."""
    check_destination(out, force)
    info = run_info(run, threads=threads)
    emit(render(info, fmt, {"json": to_json, "text": lambda i: terminal(format_info(i))}), out)
