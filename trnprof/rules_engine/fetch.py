"""A rule's result, fetched from DuckDB within a budget of rows and of bytes.

DuckDB's memory limit bounds what a query computes, not the result handed to Python: a rule
returning 10,000 rows of 100 KB strings under a 256 MB limit took 1 GB of RSS at its first
2,048-row chunk (DuckDB's pandas conversion), and past that 3.85 GB then an ArrowMemoryError
traceback. The result is streamed as Arrow, BATCH_ROWS rows at a time, each batch measured, and
refused as soon as the rows or the bytes pass their cap; what was kept becomes pandas through
DuckDB (the same conversion as `.df()`: decimals and HUGEINT as float64, lists, enums). Memory
stays within DuckDB's limit (the vector it is producing), one batch and the budget.
"""

from __future__ import annotations

import duckdb
import pandas as pd
import pyarrow as pa

from trnprof.errors import first_line

MAX_RESULT_ROWS = 1_000_000
RESULT_SHARE = 4  # a rule's result may hold a quarter of its memory limit (500 MB at the default 2 GB)
BATCH_ROWS = 256


class ResultError(Exception):
    """A result that could not be fetched; the message says why, in one line."""


class ResultTooLarge(ResultError):
    """A result past its cap of rows or bytes; the message says which."""


def result_bytes(memory_limit: int) -> int:
    """The bytes a rule's result may take as Arrow, from the rule's memory limit (bytes)."""
    return memory_limit // RESULT_SHARE


def too_many_rows() -> ResultTooLarge:
    return ResultTooLarge(
        f"returned more than {MAX_RESULT_ROWS:,} rows (a rule returns findings, not data: aggregate in SQL)"
    )


def too_many_bytes(budget: int) -> ResultTooLarge:
    return ResultTooLarge(
        f"returned more than {budget / 2**20:,.0f} MiB of rows, a quarter of its memory limit "
        "(a rule returns findings, not data: aggregate in SQL, or shorten its strings)"
    )


def bounded(con: duckdb.DuckDBPyConnection, sql: str, params: dict | None, budget: int) -> pd.DataFrame:
    """The result of `sql` on `con`, at most MAX_RESULT_ROWS rows and `budget` bytes (as Arrow)."""
    batches, rows, size = [], 0, 0
    reader = con.sql(sql, params=params or None).to_arrow_reader(BATCH_ROWS)
    try:
        for batch in reader:
            rows += batch.num_rows
            size += batch.nbytes
            if rows > MAX_RESULT_ROWS:
                raise too_many_rows()
            if size > budget:
                raise too_many_bytes(budget)
            batches.append(batch)
        kept = pa.Table.from_batches(batches, schema=reader.schema)
    except MemoryError:  # pyarrow's ArrowMemoryError included
        raise too_many_bytes(budget) from None
    except OSError as exc:  # DuckDB's error while it streams, raised through Arrow's stream
        raise ResultError(first_line(exc)) from None
    finally:
        reader.close()  # an unfinished stream blocks the connection (the rollback)
    del batches
    return con.from_arrow(kept).df()
