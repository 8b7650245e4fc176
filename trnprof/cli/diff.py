"""`trnprof diff BASE NEW`: compare two runs and gate on regressions.

Exit codes: 0 when no gate trips (or none is given), 1 when a --fail-if gate trips, 2 on a
usage or input error, when the runs are not comparable and gates were given, and when a rule
failed on either run under a new_findings gate (the findings could not be fully compared).
"""

from __future__ import annotations

import sys

import click

from ..api import DEFAULT_ALPHA, diff
from ..diff.render import to_markdown, to_text
from ..exitcodes import Exit
from ..jsonplain import to_json
from . import _options as options
from ._output import check_destination, emit, render


@click.command("diff")
@click.argument("base", type=click.Path(path_type=str))
@click.argument("new", type=click.Path(path_type=str))
@options.document("text", "json", "markdown", force_option=False)
@click.option(
    "--fail-if",
    "gates",
    multiple=True,
    metavar="EXPR",
    help='Exit 1 when EXPR holds and the change is significant, e.g. "step_time>+5%", '
    '"throughput<-3%", "exposed_comm>+10ms", "new_findings>=medium"; repeatable.',
)
@click.option("--strict", is_flag=True, help="Gates trip on the change alone, significant or not.")
@click.option(
    "--alpha",
    type=click.FloatRange(min=0, max=1, min_open=True, max_open=True),
    default=DEFAULT_ALPHA,
    show_default=True,
    help="Significance level of the Mann-Whitney test over steady-state steps.",
)
@click.option(
    "--top",
    type=click.IntRange(min=1),
    default=10,
    show_default=True,
    help="Ops listed as top regressions and improvements.",
)
@click.option(
    "--force",
    is_flag=True,
    help="Replace an existing -o file, and evaluate --fail-if gates even when the runs are not comparable.",
)
@options.config("Rules config (YAML) for the findings of both runs, and the engine settings.")
@options.threads
@options.engine
def command(base, new, fmt, out, gates, strict, alpha, top, force, config, threads):
    """Compare run NEW against run BASE: step time, throughput and MFU with their significance
    over steady-state steps, the step breakdown, top regressions by op, collectives, memory, and
    findings new and resolved.

    Exit codes: 0 no gate tripped, 1 a --fail-if gate tripped, 2 usage or input error (also
    when gates are given and the runs are not comparable, unless --force)."""
    check_destination(out, force)
    document = diff(
        base,
        new,
        gates=gates,
        strict=strict,
        gate_incomparable=force,
        alpha=alpha,
        top=top,
        threads=threads,
        analyze_options={"config": config} if config else None,
    )
    results = document["gates"]
    emit(
        render(
            document,
            fmt,
            {"json": to_json, "markdown": lambda d: to_markdown(d, results), "text": lambda d: to_text(d, results)},
        ),
        out,
    )
    if not document["comparable"]:
        click.echo("warning: the runs are not comparable: " + "; ".join(document["reasons"]), err=True)
    if any(result["tripped"] for result in results):
        sys.exit(Exit.FAILED)
