"""`trnprof rules list | show | test | new | docs`: browse, test, write and document rules."""

from __future__ import annotations

import sys

import click

from .. import api
from ..exitcodes import Exit
from ..jsonplain import to_json
from ..validation import TIMEOUT_S
from . import _options as options
from ._output import check_destination, emit, render

DOCS_DIR = "docs/rules"


@click.group("rules")
def command():
    """Browse, test, scaffold and document rules."""


@command.command("list")
@options.rules
@options.document("text", "json")
def list_(rule_dirs, fmt, out, force):
    """List every rule: code, name, severity, title."""
    check_destination(out, force)
    rules = api.list_rules(rule_dirs)
    emit(
        render(
            rules,
            fmt,
            {
                "json": lambda rs: to_json(
                    [
                        {
                            "code": r.code,
                            "name": r.name,
                            "pack": r.pack,
                            "severity": r.severity,
                            "title": r.spec.title,
                            "path": str(r.path),
                        }
                        for r in rs
                    ]
                ),
                "text": lambda rs: "\n".join(f"{r.code}  {r.name:<40} {r.severity:<7} {r.spec.title}" for r in rs),
            },
        ),
        out,
    )


@command.command("show")
@click.argument("name")
@options.rules
def show(name, rule_dirs):
    """Show one rule (by code or name): docs, parameters, SQL."""
    text, path = api.rule_reference(name, rule_dirs)
    click.echo(text)
    click.echo(f"\nfile: {path}")


@command.command("test")
@click.argument("path", required=False, type=click.Path(path_type=str))
@click.option(
    "--timeout",
    type=options.Number(TIMEOUT_S),
    default=60.0,
    show_default=True,
    help="Time limit per rule query, seconds (0.001 to 86400).",
)
@options.config("YAML config file: its engine, spark_master and spark keys choose the engine.")
@options.engine
def test(path, timeout, config):
    """Run the test cases of the rules in PATH (a rule file, a pack folder or a folder of packs;
    default: the built-in packs). Their SQL must bind against the stdlib's columns, and their
    codes and names must not clash with each other or the built-in rules (as `analyze` requires).
    Exit 1 when a case fails."""
    results = api.rule_tests(path, timeout=timeout)
    for result in results:
        mark = "ok  " if result.ok else "FAIL"
        click.echo(f"{mark} {result.rule.name}: {result.case.name}")
        for problem in result.problems:
            click.echo(f"       {problem}")
    failed = sum(not r.ok for r in results)
    click.echo(f"{len(results) - failed} passed, {failed} failed")
    if failed:
        sys.exit(Exit.FAILED)


@command.command("new")
@click.argument("name")
@click.option(
    "--dir",
    "folder",
    type=click.Path(path_type=str),
    default="rules",
    show_default=True,
    help="Folder of packs to write into: the file is DIR/<pack>/<rule>.yaml.",
)
@click.option("--code", help="Rule code, e.g. MY001 (default: the pack's prefix and next number).")
def new(name, folder, code):
    """Write a rule file NAME (pack.rule_name) to fill in; it passes `rules test` as written."""
    click.echo(f"wrote {api.new_rule(name, folder, code)}")


@command.command("docs")
@options.output("Folder of the rule reference pages.", default=DOCS_DIR, show_default=True)
@click.option("--check", is_flag=True, help="Do not write; exit 1 when the pages differ from the rules.")
@options.force("pages of the same names that `trnprof rules docs` did not write")
def docs(out, check, force):
    """Generate the rule reference (index and one page per pack) from the built-in rules."""
    if check:
        drift = api.rule_docs(out, check=True)["drifted"]
        if drift:
            click.echo(f"{out} drifted from the rules: {', '.join(drift)} (run `trnprof rules docs`)")
            sys.exit(Exit.FAILED)
        click.echo(f"{out} is up to date")
        return
    for path in api.rule_docs(out, force=force)["written"]:
        click.echo(f"wrote {path}")
