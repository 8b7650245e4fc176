"""The SQL stdlib: documented views that rules and reports query instead of raw files.

Each `stdlib/*.sql` module holds `CREATE VIEW` statements, each preceded by a comment block:
free text describing the view, then one `-- @column NAME  description` line per column
(Perfetto's stdlib is the model). `docs/stdlib.md` is generated from these comments.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from functools import lru_cache
from importlib import resources

import duckdb

from .device_tables import TABLES as DEVICE_TABLES
from .stdlibdeps import cached

# Load order: a module may use the views of the modules before it.
MODULES = ("steps", "intervals", "step_breakdown", "collectives", "memory", "rank_summary", "ops",
           "steady_state", "stragglers", "communication", "signals", "hardware", "mfu", "diff_support", "device")

_CREATE = re.compile(r"^CREATE VIEW\s+(\w+)\s+AS\b", re.IGNORECASE)
_COLUMN = re.compile(r"^--\s*@column\s+(\w+)\s+(.*\S)\s*$")


@dataclass
class ViewDef:
    name: str
    module: str
    doc: str
    columns: dict[str, str] = field(default_factory=dict)
    sql: str = ""

    @property
    def public(self) -> bool:
        return not self.name.startswith("_")


def parse_module(module: str, text: str) -> list[ViewDef]:
    """The views of one module, with the docs of their comment blocks."""
    views, doc_lines, columns = [], [], {}
    lines = text.splitlines()
    i = 0
    while i < len(lines):
        line = lines[i].strip()
        match = _CREATE.match(line)
        if line.startswith("--"):
            column = _COLUMN.match(line)
            if column:
                columns[column.group(1)] = column.group(2)
            else:
                doc_lines.append(line[2:].strip())
            i += 1
        elif match:
            body = []
            while i < len(lines):
                body.append(lines[i])
                if lines[i].rstrip().endswith(";"):
                    break
                i += 1
            views.append(ViewDef(match.group(1), module, " ".join(doc_lines).strip(), columns,
                                 "\n".join(body).rstrip().rstrip(";")))
            doc_lines, columns = [], {}
            i += 1
        else:
            if line:
                doc_lines, columns = [], {}
            i += 1
    return views


def load_views() -> list[ViewDef]:
    """Every stdlib view, in load order."""
    return list(_views())


@lru_cache(maxsize=1)
def _views() -> tuple[ViewDef, ...]:
    package = resources.files("trnprof") / "stdlib"
    views = []
    for module in MODULES:
        views.extend(parse_module(module, (package / f"{module}.sql").read_text(encoding="utf-8")))
    return tuple(views)


_DEFERRED = {"supported": True}  # DuckDB too old for DEFER_BINDING: views are bound when created


def create_view(con: duckdb.DuckDBPyConnection, view: ViewDef) -> None:
    """Create `view` in `con`'s current schema, bound when a query first reads it instead of
    now (DuckDB's `CREATE VIEW ... WITH (DEFER_BINDING)`): a session creates every view but a
    command reads a few, and binding one binds every view under it again."""
    if _DEFERRED["supported"]:
        try:
            con.execute(_CREATE.sub(r"CREATE VIEW \1 WITH (DEFER_BINDING) AS", view.sql.lstrip(), count=1))
            return
        except duckdb.ParserException:
            _DEFERRED["supported"] = False
    con.execute(view.sql)


@lru_cache(maxsize=1)
def dependencies() -> dict[str, frozenset[str]]:
    """Each stdlib view (in load order) -> the stdlib views and run tables (device profile's
    included) its SQL reads."""
    names = {view.name for view in _views()} | {"events", "counters", "ranks"} | set(DEVICE_TABLES)
    # parsed once per installation (0.1 s of CPU a process): trnprof/stdlibdeps.py
    return cached([(view.name, view.sql) for view in _views()], names, lambda: {
        view.name: frozenset(n for n in duckdb.get_table_names(_read_tables_sql(view.sql)) if n in names)
        for view in _views()})


def _read_tables_sql(sql: str) -> str:
    """A view's SELECT for `duckdb.get_table_names`, which cannot bind an ASOF join's condition:
    as a plain join it reads the same tables."""
    return re.sub(r"\bASOF\s+JOIN\b", "JOIN", _CREATE.sub("", sql.lstrip(), count=1), flags=re.IGNORECASE)
