"""Which engine runs the stdlib and the rules: DuckDB (the default and the reference) or Spark,
and `open_run`, which opens a run on it.

The CLI's `--engine` / `TRNPROF_ENGINE`, `--spark-master` and `--spark-conf` (and a config
file's `spark:` section) choose it once per command with `using()`; everything that opens a run
during the command (`open_run`: analyze, report, diff, rules test) then opens it there.
Without a choice, runs open on DuckDB.
"""

from __future__ import annotations

import contextlib
import contextvars
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from .errors import TrnprofError

if TYPE_CHECKING:
    from .run import Run

ENGINES = ("duckdb", "spark")
ENV = "TRNPROF_ENGINE"


@dataclass(frozen=True)
class Choice:
    name: str = "duckdb"
    master: str | None = None  # Spark only: None is local[*]
    conf: dict = field(default_factory=dict)  # Spark only: spark.* settings


_CURRENT: contextvars.ContextVar[Choice] = contextvars.ContextVar("trnprof_engine", default=Choice())


def check(name: str) -> str:
    if name not in ENGINES:
        raise TrnprofError(f"engine {name!r}: choose one of {', '.join(ENGINES)}")
    return name


def current() -> Choice:
    return _CURRENT.get()


@contextlib.contextmanager
def using(name: str = "duckdb", master: str | None = None, conf: dict | None = None):
    """Open the runs of the enclosed code on engine `name`."""
    token = _CURRENT.set(Choice(check(name), master, dict(conf or {})))
    try:
        yield
    finally:
        _CURRENT.reset(token)


def open_run(
    path: str | Path, *, threads: int | None = None, engine: str | None = None, memory_limit: str | None = None
) -> Run:
    """Open a run; one clear `TrnprofError` when it is not a readable run. `engine`: "duckdb"
    (the default) or "spark" (the master and settings of `using()`); a Spark run may be a local
    folder or an s3a:// or hdfs:// URL. `memory_limit`: the DuckDB session's budget (default:
    TRNPROF_MEMORY_LIMIT or the session default)."""
    choice = current()
    if check(engine or choice.name) == "spark":
        from .spark.run import SparkRun  # the optional extra: pyspark and sqlglot load only here

        return SparkRun(str(path), master=choice.master, conf=choice.conf)
    from .run import DuckDBRun  # the choice above loads before the run's libraries (`--engine`)

    return DuckDBRun(path, threads=threads, memory_limit=memory_limit)
