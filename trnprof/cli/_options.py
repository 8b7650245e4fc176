"""Options several commands share, declared once so they read the same everywhere."""

from __future__ import annotations

import functools

import click

from ..validation import THREADS, Range


def output(help: str, **kwargs):
    """`-o/--output PATH`: the file or folder a command writes (the `out` parameter)."""
    kwargs.setdefault("type", click.Path(path_type=str))
    return click.option("-o", "--output", "out", help=help, **kwargs)


rules = click.option(
    "--rules",
    "rule_dirs",
    multiple=True,
    type=click.Path(path_type=str),
    help="Add a rule pack folder (or a folder of packs).",
)


class Number(click.ParamType):
    """A number in its documented range (`trnprof.validation.Range`); anything else, nan and
    inf included, is one error line (a TrnprofError, which the group prints as one line)."""

    def __init__(self, allowed: Range):
        self.allowed = allowed
        self.name = "integer" if allowed.integer else "float"

    def convert(self, value, param, ctx):
        what = param.opts[0] if param is not None and param.opts else "value"
        return self.allowed.check(value, what)


threads = click.option("--threads", type=Number(THREADS), help="DuckDB threads (1 to 1024).")


def force(what: str):
    """`--force`: replace what the command would otherwise refuse to overwrite."""
    return click.option("--force", is_flag=True, help=f"Replace {what}.")


def output_format(*choices: str, default: str | None = None, **kwargs):
    """`--format`: the output format, the first choice by default."""
    return click.option(
        "--format", "fmt", type=click.Choice(list(choices)), default=default or choices[0], show_default=True, **kwargs
    )


def document(*formats: str, force_option: bool = True):
    """`--format` (the first choice by default), `-o/--output FILE` and `--force` (replace an
    existing FILE): every command that produces a document has them, and hands it to
    `_output.emit` (standard output or the file). force_option=False: the command declares its
    own `--force`, which then also covers the file."""

    def decorate(fn):
        if force_option:
            fn = force("an existing -o file")(fn)
        fn = output("Write the document to this file instead of standard output.")(fn)
        return output_format(*formats)(fn)

    return decorate


def _spark_settings(pairs) -> dict:
    settings = {}
    for pair in pairs:
        key, sep, value = pair.partition("=")
        if not sep or not key.strip():
            raise click.BadParameter(
                f"{pair!r}: write KEY=VALUE, e.g. spark.executor.memory=8g", param_hint="--spark-conf"
            )
        settings[key.strip()] = value.strip()
    return settings


def engine(fn):
    """`--engine duckdb|spark` (or TRNPROF_ENGINE), `--spark-master`, `--spark-conf KEY=VALUE`:
    the command opens its runs on that engine (`trnprof.api.using_engine`). A `--config` file's
    `engine`, `spark_master` and `spark` keys apply where the command line says nothing; the
    command gets the file read (a `ConfigFile`), so it is read once."""
    from ..api import ENGINE_ENV, ENGINES, using_engine

    @click.option(
        "--engine",
        "engine_name",
        type=click.Choice(ENGINES),
        envvar=ENGINE_ENV,
        show_envvar=True,
        help="Engine that runs the stdlib and the rules [default: duckdb].",
    )
    @click.option(
        "--spark-master",
        envvar="TRNPROF_SPARK_MASTER",
        show_envvar=True,
        metavar="URL",
        help="Spark master with --engine spark: local[*] (default), local[N], spark://HOST:PORT, "
        "sc://HOST:PORT (Spark Connect), yarn.",
    )
    @click.option(
        "--spark-conf",
        multiple=True,
        metavar="KEY=VALUE",
        help="A spark.* setting for --engine spark, e.g. spark.executor.memory=8g; repeatable.",
    )
    @functools.wraps(fn)
    def wrapper(*args, engine_name, spark_master, spark_conf, **kwargs):
        config = kwargs.get("config")
        if config:
            from ..api import read_config

            config = kwargs["config"] = read_config(config)
        name = engine_name or (config and config.engine) or "duckdb"
        master = spark_master or (config and config.spark_master) or None
        settings = {**(config.spark if config else {}), **_spark_settings(spark_conf)}
        with using_engine(name, master, settings):
            return fn(*args, **kwargs)

    return wrapper


def config(help: str):
    """`--config FILE`: a YAML config file (`rules_engine.spec.ConfigFile`)."""
    return click.option("--config", type=click.Path(path_type=str), help=help)
