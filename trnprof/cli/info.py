"""`trnprof info RUN`: world size, steps, step time, throughput, event counts, time span."""

from __future__ import annotations

import click

from ..api import open_run
from ..jsonplain import to_json
from ..textfmt import duration
from . import _options as options
from ._output import check_destination, emit, render


def format_info(info: dict) -> str:
    lines = [f"run          {info['run']}", f"source       {info['source']}",
             f"world size   {info['world_size']}", f"steps        {info['steps']}"]
    step_time = info["step_time_s"]
    if step_time:
        lines.append(f"step time    median {duration(step_time['median'])}, p95 {duration(step_time['p95'])} "
                     f"over {step_time['steps']} steady step{'s' if step_time['steps'] != 1 else ''}")
    for warm in info["warmup"]:
        compiles = f", {warm['compiles']:,} compile{'s' if warm['compiles'] != 1 else ''}" if warm["compiles"] else ""
        lines.append(f"warm-up      step {warm['step']}: {duration(warm['seconds'])}{compiles}")
    throughput = info["throughput"]
    lines.append("throughput   " + (f"{throughput['value']:,.1f} {throughput['unit']}" if throughput else "unknown"))
    if info.get("mfu") is not None:
        lines.append(f"MFU          {info['mfu']:.1%}")
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


@click.command("info")
@click.argument("run", type=click.Path(path_type=str))
@options.document("text", "json")
@options.config("YAML config file: its engine, spark_master and spark keys choose the engine.")
@options.threads
@options.engine
def command(run, fmt, out, config, threads):
    """Summarise RUN: world size, steps, step time, throughput, counts, time span."""
    check_destination(out)
    with open_run(run, threads=threads) as opened:
        info = opened.info()
    emit(render(info, fmt, {"json": to_json, "text": format_info}), out)
