"""Rendering tables and documents for the terminal: text tables, CSV, JSON."""

from __future__ import annotations

import click
import pandas as pd

from ..jsonplain import plain, to_json
from ..textfmt import terminal


def frame_records(frame: pd.DataFrame) -> list[dict]:
    return [{str(k): plain(v) for k, v in row.items()} for row in frame.astype(object).to_dict("records")]


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
        click.echo(terminal(shown.to_string(index=False, na_rep="null")))
        if len(shown) < len(frame):
            click.echo(f"... {len(frame) - len(shown)} more rows (use --format csv for all)")
