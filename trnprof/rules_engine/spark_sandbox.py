"""Rule SQL on Spark: the rule engine's sandbox contract (`rules_engine.sandbox.Sandbox`) over a
run's Spark session.

The same checks as on DuckDB, where Spark allows them: exactly one SELECT (parsed by DuckDB, as
the rule was written), reading only the tables the rules declared (no path, no other catalog,
no table function), no function that reaches the JVM (`reflect`, `java_method`), and the session
refuses SQL over files by path (`spark.sql.runSQLOnFiles=false`). Each query runs in a job
group (a tag on Spark Connect) that a watchdog cancels at the time limit, and returns at most
MAX_RESULT_ROWS rows. Memory is the cluster's: `--memory-limit` bounds DuckDB only
(docs/scale-out.md).
"""

from __future__ import annotations

import contextlib
import threading
import uuid

import pandas as pd
from sqlglot import exp

from trnprof.spark.errors import spark_message
from trnprof.spark.frames import to_pandas
from trnprof.spark.transpile import TranspileError, generate, parse, to_spark_tree

from .sandbox import MAX_RESULT_ROWS, SandboxError, check_select, too_many_rows

REFUSED_FUNCTIONS = frozenset({"reflect", "try_reflect", "java_method"})


def check_reads(tree: exp.Expression, tables: set[str]) -> None:
    """Refuse a query that reads anything but `tables` (and its own CTEs) or calls into the JVM."""
    ctes = {cte.alias_or_name.lower() for cte in tree.find_all(exp.CTE)}
    for table in tree.find_all(exp.Table):
        name = table.name.lower()
        if not isinstance(table.this, exp.Identifier) or table.db or table.catalog:
            raise SandboxError(f"refused: rule SQL reads {table.sql('duckdb')!r}; it may read only its tables")
        if name not in ctes and name not in tables:
            raise SandboxError(f"refused: rule SQL reads {name!r}, which is not among its tables")
    for call in tree.find_all(exp.Anonymous):
        if str(call.name).lower() in REFUSED_FUNCTIONS:
            raise SandboxError(f"refused: rule SQL may not call {call.name}")


@contextlib.contextmanager
def _cancellable(spark):
    """Run the enclosed Spark jobs under a name and yield what cancels them: a job group on a
    classic session (tags do not reach its jobs), a tag on Spark Connect."""
    name = f"trnprof-rule-{uuid.uuid4().hex}"
    if type(spark).__module__.startswith("pyspark.sql.connect"):
        spark.addTag(name)
        try:
            yield lambda: spark.interruptTag(name)
        finally:
            spark.removeTag(name)
        return
    context = spark.sparkContext
    context.setJobGroup(name, "trnprof rule query", interruptOnCancel=True)
    try:
        yield lambda: context.cancelJobGroup(name)
    finally:
        context.setLocalProperty("spark.jobGroup.id", None)


class SparkSandbox:
    """`query()` runs one rule SELECT over the run's Spark session, with a time limit."""

    workers = 1  # `map` runs one query at a time

    def __init__(self, run, tables: set[str], *, cache: list[str]):
        self.run = run
        self.tables = tuple(sorted(tables))
        run.materialize(cache)

    def query(self, sql: str, params: dict | None = None, *, timeout: float | None = None) -> pd.DataFrame:
        check_select(sql)
        try:
            tree = parse(sql)
            check_reads(tree, {t.lower() for t in self.tables})
            text = generate(to_spark_tree(tree, params))
        except TranspileError as exc:
            raise SandboxError(str(exc)) from None
        return self._run(text, timeout)

    def map(self, work, items: list) -> list:
        """`work(query, item)` for each item, one at a time (each query has the whole cluster)."""
        return [work(self.query, item) for item in items]

    def _run(self, text: str, timeout: float | None) -> pd.DataFrame:
        done, expired = threading.Event(), threading.Event()
        with _cancellable(self.run.spark) as cancel:

            def watchdog():  # past the limit, cancel until the query ends: a job not yet started
                if done.wait(timeout):  # when first cancelled would run on otherwise
                    return
                expired.set()
                while not done.is_set():
                    cancel()
                    done.wait(0.5)

            if timeout:
                threading.Thread(target=watchdog, daemon=True).start()
            try:
                table = self.run.spark.sql(text).limit(MAX_RESULT_ROWS + 1).toArrow()
            except Exception as exc:
                if expired.is_set():
                    raise SandboxError(f"timed out after {timeout:g} s") from None
                raise SandboxError(spark_message(exc)) from None
            finally:
                done.set()
        if table.num_rows > MAX_RESULT_ROWS:
            raise too_many_rows()
        return to_pandas(table)

    def close(self) -> None:
        pass
