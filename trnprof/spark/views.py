"""The stdlib on Spark: each view's SQL transpiled from DuckDB's, or a hand-written Spark SQL
replacement from `views/<name>.sql` where transpiling cannot keep the meaning or the scale."""

from __future__ import annotations

import re
from functools import lru_cache
from importlib import resources

from trnprof.stdlib import load_views

from .transpile import to_spark

_CREATE = re.compile(r"^\s*CREATE\s+VIEW\s+\w+\s+AS\s", re.IGNORECASE)


def replacements() -> dict[str, str]:
    """View name -> its hand-written Spark SQL (a SELECT)."""
    folder = resources.files("trnprof.spark") / "views"
    return {
        entry.name.removesuffix(".sql"): _body(entry.read_text(encoding="utf-8"))
        for entry in folder.iterdir()
        if entry.name.endswith(".sql")
    }


def _body(text: str) -> str:
    """The SQL of a replacement file, without its comment lines."""
    return "\n".join(line for line in text.splitlines() if not line.lstrip().startswith("--")).strip().rstrip(";")


@lru_cache(maxsize=1)
def spark_views() -> tuple[tuple[str, str], ...]:
    """(name, Spark SELECT) of every stdlib view, in load order."""
    hand_written = replacements()
    return tuple(
        (view.name, hand_written.get(view.name) or to_spark(_CREATE.sub("", view.sql, count=1)))
        for view in load_views()
    )
