"""A run opened on Spark: its Parquet folders (a local path, s3a:// or hdfs://) as tables, the
session tables, and every stdlib view, as temporary views of a session of its own.

Queries are written in DuckDB's dialect on every engine and transpiled (`transpile.py`); what
they return is the same pandas DataFrame as on DuckDB.
"""

from __future__ import annotations

import re
from pathlib import Path

import pandas as pd
import pyarrow as pa

from trnprof import device_tables, session_tables
from trnprof.batches import to_store
from trnprof.derived import data_files
from trnprof.errors import TrnprofError
from trnprof.manifest import parse_manifest, read_manifest
from trnprof.run import Run
from trnprof.schema import MANIFEST_FILE, PARTITIONED_TABLES, TABLE_COLUMNS
from trnprof.session import MATERIALIZABLE

from . import connect
from .errors import spark_message
from .frames import to_pandas
from .transpile import to_spark
from .views import spark_views

_REMOTE = re.compile(r"^[A-Za-z][A-Za-z0-9+.-]*://")


def is_remote(location: str) -> bool:
    """Whether `location` is a URL (s3a://, hdfs://, file://, ...), read through Spark's file
    systems, rather than a local path, read and checked as on DuckDB."""
    return bool(_REMOTE.match(location))


def _spark_schema(table: str):
    from pyspark.sql import types as spark_types  # noqa: PLC0415 (optional dependency)

    spark_type = {
        pa.int32(): spark_types.IntegerType(),
        pa.int64(): spark_types.LongType(),
        pa.float64(): spark_types.DoubleType(),
        pa.string(): spark_types.StringType(),
    }
    return spark_types.StructType(
        [spark_types.StructField(name, spark_type[typ], nullable) for name, typ, nullable, _ in TABLE_COLUMNS[table]]
    )


def _arrow_to_spark(schema: pa.Schema):
    """A Spark schema for a device table (it may be empty: Spark cannot infer the types then)."""
    from pyspark.sql import types as spark_types  # noqa: PLC0415 (optional dependency)

    spark_type = {
        pa.int32(): spark_types.IntegerType(),
        pa.int64(): spark_types.LongType(),
        pa.float64(): spark_types.DoubleType(),
        pa.string(): spark_types.StringType(),
        pa.bool_(): spark_types.BooleanType(),
    }
    return spark_types.StructType([spark_types.StructField(f.name, spark_type[f.type], True) for f in schema])


class SparkRun(Run):
    """One run in a Spark session of its own (see `connect.session`)."""

    engine = "spark"

    def __init__(self, location: str, *, master: str | None = None, conf: dict | None = None):
        self.remote = is_remote(location)
        self.root = location.rstrip("/") if self.remote else str(Path(location).resolve())
        self.path = location if self.remote else Path(location)
        if not self.remote:  # a local run is checked before Spark starts: a bad path fails fast
            self.manifest = read_manifest(Path(self.root))
        self.spark = connect.session(master, conf)
        if self.remote:
            self.manifest = self._read_remote_manifest()
        self.stored: list = []  # checkpointed DataFrames of the materialized views
        self.stored_names: set[str] = set()
        try:
            self._register_tables()
            self._register_views()
        except TrnprofError:
            raise
        except Exception as exc:  # a file Spark cannot read: damaged, or not Parquet
            raise TrnprofError(f"damaged run {location}: Spark cannot read it ({spark_message(exc)})") from None

    # --- opening ---
    def _read_remote_manifest(self) -> dict:
        """The manifest read through Spark's file system for the URL (not checked against the
        files: that would list the object store)."""
        where = f"{self.root}/{MANIFEST_FILE}"
        try:
            rows = self.spark.read.text(where, wholetext=True).collect()
        except Exception as exc:
            raise TrnprofError(f"cannot read run {self.root}: {spark_message(exc)}") from None
        if not rows:
            raise TrnprofError(f"not a trnprof run: {where} is empty")
        return parse_manifest(rows[0][0], where)

    def _files(self, table: str) -> list[str] | None:
        """The table's Parquet files: listed locally, from the manifest's `parts` remotely (no
        listing of object storage); None when only a listing can tell (old remote runs)."""
        if not self.remote:
            return [str(f) for f in data_files(Path(self.root)) if f.parent.parent.name == table]
        parts = self.manifest.get("parts")
        if parts is None:
            return None
        return [f"{self.root}/{name}" for name in sorted(parts) if name.startswith(f"{table}/")]

    def _frame(self, table: str):
        schema = _spark_schema(table)
        if table not in PARTITIONED_TABLES:
            return self.spark.read.schema(schema).parquet(f"{self.root}/{table}.parquet")
        files = self._files(table)
        if files == [] or (files is None and not (self.manifest.get("counts") or {}).get(table, 1)):
            return self.spark.createDataFrame([], schema)
        reader = self.spark.read.schema(schema).option("basePath", f"{self.root}/{table}")
        return reader.parquet(*files) if files is not None else reader.parquet(f"{self.root}/{table}")

    def _register_tables(self) -> None:
        for table in TABLE_COLUMNS:
            columns = [name for name, *_ in TABLE_COLUMNS[table]]
            self._frame(table).select(*columns).createOrReplaceTempView(table)
        for name, arrow in session_tables.session_tables(self.manifest):
            self.spark.createDataFrame(arrow).createOrReplaceTempView(name)
        for name, arrow in device_tables.arrow_tables(None if self.remote else Path(self.root)):
            self.spark.createDataFrame(arrow.to_pandas(), _arrow_to_spark(arrow.schema)).createOrReplaceTempView(name)

    def _register_views(self) -> None:
        for name, select in spark_views():
            self.spark.sql(f"CREATE OR REPLACE TEMPORARY VIEW `{name}` AS {select}")

    # --- the Run interface ---
    def sql(self, query: str, params=None) -> pd.DataFrame:
        text = to_spark(query, params)
        try:
            return to_pandas(self.spark.sql(text).toArrow())
        except Exception as exc:
            raise TrnprofError(f"query failed: {spark_message(exc)}") from None

    def materialize(self, names=MATERIALIZABLE) -> "SparkRun":
        """Compute `names` and the stdlib views they read once, in load order, as DuckDB stores
        them (`batches.to_store`: views as large as the events stay views): each is checkpointed
        on the executors and its name rebound to the result, so the views after it read rows,
        not a plan that grows with every view beneath."""
        for name in to_store(names, self.stored_names):
            try:
                frame = self.spark.table(name).localCheckpoint(eager=True)
            except Exception as exc:
                raise TrnprofError(f"cannot compute view {name} on Spark: {spark_message(exc)}") from None
            frame.createOrReplaceTempView(name)
            self.stored.append(frame)
            self.stored_names.add(name)
        return self

    def is_stored(self, view: str) -> bool:
        return view in self.stored_names

    def close(self) -> None:
        try:
            for frame in self.stored:
                frame.unpersist()
        except Exception:  # the session is gone already (Ctrl-C, a stopped cluster): nothing to free
            pass
        self.stored, self.stored_names = [], set()
