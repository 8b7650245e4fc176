"""Plain JSON data from whatever pandas, numpy and DuckDB hand back, for every JSON output."""

from __future__ import annotations

import json
import math
from decimal import Decimal

import numpy as np
import pandas as pd


def plain(value):
    """`value` as plain JSON data: NaN/inf and missing values become null, arrays lists, bytes
    hex, times ISO strings, and anything else its string form."""
    if value is None or isinstance(value, (bool, int, str)):
        return value
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if isinstance(value, Decimal):
        return plain(int(value) if value == value.to_integral_value() else float(value))
    if isinstance(value, dict):
        return {str(k): plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple, set, np.ndarray)):
        return [plain(v) for v in (value.tolist() if isinstance(value, np.ndarray) else value)]
    if isinstance(value, (bytes, bytearray, memoryview)):
        return bytes(value).hex()
    if value is pd.NA or value is pd.NaT:
        return None
    if isinstance(value, np.generic):
        return plain(value.item())
    if hasattr(value, "isoformat"):
        return value.isoformat()
    return str(value)


def to_json(document) -> str:
    return json.dumps(plain(document), indent=2, allow_nan=False)
