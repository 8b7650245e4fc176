"""Rendering tables and documents for the terminal: text tables, CSV, JSON."""

from __future__ import annotations

import json
import math

import click
import numpy as np
import pandas as pd


def _plain(value):
    """`value` as plain JSON data: NaN/inf and missing values become null, arrays lists, bytes
    hex, times ISO strings, and anything else its string form."""
    if value is None or isinstance(value, (bool, int, str)):
        return value
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if isinstance(value, dict):
        return {str(k): _plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple, set, np.ndarray)):
        return [_plain(v) for v in (value.tolist() if isinstance(value, np.ndarray) else value)]
    if isinstance(value, (bytes, bytearray, memoryview)):
        return bytes(value).hex()
    if value is pd.NA or value is pd.NaT:
        return None
    if isinstance(value, np.generic):
        return _plain(value.item())
    if hasattr(value, "isoformat"):
        return value.isoformat()
    return str(value)


def to_json(document) -> str:
    return json.dumps(_plain(document), indent=2, allow_nan=False)


def frame_records(frame: pd.DataFrame) -> list[dict]:
    return [{str(k): _plain(v) for k, v in row.items()} for row in frame.astype(object).to_dict("records")]


def echo_frame(frame: pd.DataFrame, fmt: str, *, max_rows: int | None = None) -> None:
    if fmt == "json":
        click.echo(to_json(frame_records(frame)))
    elif fmt == "csv":
        click.echo(frame.to_csv(index=False), nl=False)
    else:
        if frame.empty:
            click.echo("(no rows)" if len(frame.columns) else "(no result)")
            return
        shown = frame if max_rows is None or len(frame) <= max_rows else frame.head(max_rows)
        click.echo(shown.to_string(index=False, na_rep="null"))
        if len(shown) < len(frame):
            click.echo(f"... {len(frame) - len(shown)} more rows (use --format csv for all)")


def seconds(value) -> str:
    if value is None:
        return "n/a"
    if value >= 1:
        return f"{value:.3f} s"
    return f"{value * 1e3:.2f} ms"
