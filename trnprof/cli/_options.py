"""Options several commands share, declared once so they read the same everywhere."""

from __future__ import annotations

import click


def output(help: str, **kwargs):
    """`-o/--output PATH`: the file or folder a command writes (the `out` parameter)."""
    kwargs.setdefault("type", click.Path(path_type=str))
    return click.option("-o", "--output", "out", help=help, **kwargs)


rules = click.option("--rules", "rule_dirs", multiple=True, type=click.Path(path_type=str),
                     help="Add a rule pack folder (or a folder of packs).")

threads = click.option("--threads", type=click.IntRange(min=1), help="DuckDB threads.")


def force(what: str):
    """`--force`: replace what the command would otherwise refuse to overwrite."""
    return click.option("--force", is_flag=True, help=f"Replace {what}.")


def output_format(*choices: str, default: str | None = None, **kwargs):
    """`--format`: the output format, the first choice by default."""
    return click.option("--format", "fmt", type=click.Choice(list(choices)), default=default or choices[0],
                        show_default=True, **kwargs)
