"""The one output path of the commands: a document rendered in the chosen `--format`, written to
standard output or to `-o FILE`; query tables as text, CSV or JSON; and the progress bars of long
API calls."""

from __future__ import annotations

import contextlib
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Callable

import click

from ..atomic import check_replaceable, write_text
from ..errors import TrnprofError
from ..textfmt import terminal

if TYPE_CHECKING:  # pandas loads with the query that makes a frame: `analyze` checks -o before it
    import pandas as pd


def check_destination(out: str | None, force: bool = False) -> None:
    """Fail before any work when `-o FILE` cannot be written: its folder is missing, it is a
    folder, or it exists and `--force` was not given (the overwrite contract, docs/cli.md)."""
    if not out:
        return
    check_replaceable(out, force)
    if not Path(out).parent.is_dir():
        raise TrnprofError(f"cannot write {out}: folder {Path(out).parent} does not exist")


def emit(text: str, out: str | None) -> None:
    """`text` on standard output, or as the file `out`, whole or not at all (a temporary sibling
    renamed into place, with the user's umask: trnprof/atomic.py)."""
    text = text if text.endswith("\n") else text + "\n"
    if not out:
        click.echo(text, nl=False)
        return
    write_text(out, text)


def render(document, fmt: str, renderers: dict[str, Callable]) -> str:
    """The document in format `fmt`: one renderer per format, instead of `if fmt == ...` chains."""
    return renderers[fmt](document)


def frame_records(frame: pd.DataFrame) -> list[dict]:
    from ..jsonplain import plain

    return [{str(k): plain(v) for k, v in row.items()} for row in frame.astype(object).to_dict("records")]


def _table_text(frame: pd.DataFrame, max_rows: int | None) -> str:
    if frame.empty:
        return "(no rows)" if len(frame.columns) else "(no result)"
    shown = frame if max_rows is None or len(frame) <= max_rows else frame.head(max_rows)
    text = terminal(shown.to_string(index=False, na_rep="null"))
    if len(shown) < len(frame):
        text += f"\n... {len(frame) - len(shown)} more rows (use --format csv for all)"
    return text


def frame_text(frame: pd.DataFrame, fmt: str, *, max_rows: int | None = None) -> str:
    """A query result as `table`, `csv` or `json` text."""
    from ..jsonplain import to_json

    return render(
        frame,
        fmt,
        {
            "json": lambda f: to_json(frame_records(f)),
            "csv": lambda f: f.to_csv(index=False),
            "table": lambda f: _table_text(f, max_rows),
        },
    )


def progress_bar(label: str, minimum: int, *, terminal_only: bool = False):
    """The `bar` an API call takes: given the work's length, a click progress bar on standard
    error from `minimum` on (only on a terminal when `terminal_only`), else nothing drawn."""

    def bar(length: int):
        if length < minimum or (terminal_only and not sys.stderr.isatty()):
            return contextlib.nullcontext()
        return click.progressbar(length=length, label=label, file=sys.stderr)

    return bar
