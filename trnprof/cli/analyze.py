"""`trnprof analyze RUN`: run the rule packs and report findings, most severe first, then by
time lost. RUN may be a trace (or a folder of per-rank traces): it is ingested in the same
process, into --run-dir or the user's cache folder, where the next analyze finds it again.

Exit codes: 0 when no finding reaches --fail-on (or none is given), 1 when one does, 2 on a
usage or input error, and under --fail-on also when a rule failed or timed out (the gate could
not judge the whole run).
"""

from __future__ import annotations

import sys
from typing import TYPE_CHECKING

import click

from ..api import ingest_ahead
from ..exitcodes import Exit
from ..rules_engine.spec import SEVERITIES, severity_rank
from ..validation import TIMEOUT_S
from . import _options as options
from ._output import check_destination, emit, render

if TYPE_CHECKING:
    from ..rules_engine.document import Document


def fails(document: Document, fail_on: str | None) -> bool:
    """True when a finding is at or above `fail_on`."""
    if not fail_on:
        return False
    return any(severity_rank(f.severity) >= severity_rank(fail_on) for f in document.findings)


@click.command("analyze")
@click.argument("run", type=click.Path(path_type=str))
@click.option(
    "--select",
    multiple=True,
    metavar="RULES",
    help="Run only these rules: codes (IN001), code prefixes (IN), names (input.starvation) or packs (input); "
    "comma-separated or repeated.",
)
@click.option("--ignore", multiple=True, metavar="RULES", help="Skip these rules (same forms as --select).")
@click.option(
    "--set",
    "assignments",
    multiple=True,
    metavar="RULE.PARAM=VALUE",
    help="Override a rule parameter, e.g. input.starvation.high_share=0.3.",
)
@options.rules
@options.config(
    "YAML file with rules, select, ignore, set, timeout, memory_limit, fail_on, and the engine "
    "settings engine, spark_master, spark."
)
@options.document("text", "json", "sarif", "markdown")
@click.option(
    "--fail-on",
    type=click.Choice(SEVERITIES),
    help="Exit 1 when a finding is at or above this severity, 2 when a rule failed or timed out.",
)
@click.option(
    "--timeout",
    type=options.Number(TIMEOUT_S),
    help="Time limit per rule query, seconds, 0.001 to 86400 [default: 60].",
)
@click.option("--memory-limit", help="Memory limit per rule query, e.g. 2GB, 512MB [default: 2GB].")
@click.option(
    "--run-dir",
    type=click.Path(path_type=str),
    metavar="DIR",
    help="When RUN is a trace: ingest it into this run folder (kept; used again for the same trace) "
    "[default: a run in the user's cache folder].",
)
@options.threads
@options.engine
def command(
    run,
    select,
    ignore,
    assignments,
    rule_dirs,
    config,
    fmt,
    out,
    fail_on,
    timeout,
    memory_limit,
    run_dir,
    threads,
    force,
):
    """Find what slows RUN down: a short list of findings, most severe first, then by time lost,
    with the ranks and steps affected, the time lost per step and what to do. RUN is a run
    folder, or a trace (.json, .json.gz, a folder of per-rank traces) ingested first.

    Exit codes: 0 clean, 1 a finding at or above --fail-on, 2 usage or input error; with
    --fail-on, also 2 when a rule failed or timed out (listed as a warning)."""
    check_destination(out, force)
    if click.get_current_context().find_root().command.process_entry:
        ingest_ahead(run, run_dir)  # a trace's ingest starts while the analysis's libraries load
    from ..api import analyze_input
    from ..jsonplain import to_json
    from ..rules_engine.document import to_json_bytes
    from ..rules_engine.render import NOT_JUDGED, to_markdown, to_text
    from ..rules_engine.sarif import to_sarif

    if config and fail_on is None:  # the engine option read the file (a ConfigFile)
        fail_on = config.fail_on
    analysis = analyze_input(
        run,
        into=run_dir,
        note=lambda line: click.echo(line, err=True),
        threads=threads,
        select=select,
        ignore=ignore,
        set=list(assignments),
        rules=rule_dirs,
        config=config,
        timeout=timeout,
        memory_limit=memory_limit,
    )
    document = analysis.document
    emit(
        render(
            document,
            fmt,
            {
                "json": lambda d: to_json_bytes(d).decode(),
                "sarif": lambda d: to_json(to_sarif(d, analysis.rules)),
                "markdown": to_markdown,
                "text": to_text,
            },
        ),
        out,
    )
    for error in document.errors:
        click.echo(f"warning: rule {error.name} failed: {error.error}", err=True)
    if not document.steps:
        click.echo(f"warning: {NOT_JUDGED}", err=True)
        if fail_on:
            sys.exit(Exit.USAGE)
    if fail_on and document.errors:
        click.echo(
            f"error: {len(document.errors)} rule(s) failed, so --fail-on {fail_on} cannot pass this run", err=True
        )
        sys.exit(Exit.USAGE)
    if fails(document, fail_on):
        sys.exit(Exit.FAILED)
