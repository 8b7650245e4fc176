"""Spark's results as the pandas DataFrames DuckDB gives: through Arrow, with DECIMAL columns
as float64 (DuckDB's `.df()` converts them so; Spark types decimal literals such as 0.5 as
DECIMAL, where pandas would get Python Decimal objects)."""

from __future__ import annotations

import pandas as pd
import pyarrow as pa


def to_pandas(table: pa.Table) -> pd.DataFrame:
    columns = [column.cast(pa.float64()) if pa.types.is_decimal(column.type) else column for column in table.columns]
    return pa.table(columns, names=table.column_names).to_pandas()
