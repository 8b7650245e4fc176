"""The SQL stdlib: documented views that rules and reports query instead of raw files.

Each `stdlib/*.sql` module holds `CREATE VIEW` statements, each preceded by a comment block:
free text describing the view, then one `-- @column NAME  description` line per column
(Perfetto's stdlib is the model). `docs/stdlib.md` is generated from these comments.

A module that reads the views of other modules names them in a header line,
`-- @requires steps, intervals`; the load order follows from these (`module_order`), so adding
a view or a module is one `.sql` file. `tests/stdlib/test_stdlib_modules.py` checks each header
against the tables the module's SQL reads.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from functools import lru_cache
from importlib import resources

import duckdb

from .device_tables import TABLES as DEVICE_TABLES
from .errors import TrnprofError
from .stdlibdeps import cached

_CREATE = re.compile(r"^CREATE VIEW\s+(\w+)\s+AS\b", re.IGNORECASE)
_COLUMN = re.compile(r"^--\s*@column\s+(\w+)\s+(.*\S)\s*$")
_REQUIRES = re.compile(r"^--\s*@requires\b(.*)$")


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


def _code(line: str) -> str:
    """The line without its trailing `--` comment (a `--` inside a string literal is kept): a
    semicolon in a comment does not end a view."""
    quoted = False
    for i, char in enumerate(line):
        if char == "'":
            quoted = not quoted
        elif not quoted and line.startswith("--", i):
            return line[:i]
    return line


def parse_module(module: str, text: str) -> list[ViewDef]:
    """The views of one module, with the docs of their comment blocks."""
    views, doc_lines, columns = [], [], {}
    lines = text.splitlines()
    i = 0
    while i < len(lines):
        line = lines[i].strip()
        match = _CREATE.match(line)
        if _REQUIRES.match(line):  # the module's header, not a view's doc
            i += 1
        elif line.startswith("--"):
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
                if _code(lines[i]).rstrip().endswith(";"):
                    break
                i += 1
            views.append(
                ViewDef(
                    match.group(1), module, " ".join(doc_lines).strip(), columns, "\n".join(body).rstrip().rstrip(";")
                )
            )
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


def requires(text: str) -> tuple[str, ...]:
    """The modules a module's `-- @requires a, b` header lines name."""
    names = []
    for line in text.splitlines():
        match = _REQUIRES.match(line.strip())
        if match:
            names += [name.strip() for name in match.group(1).split(",") if name.strip()]
    return tuple(names)


def module_order(required: Mapping[str, tuple[str, ...]]) -> list[str]:
    """The modules in load order: each after those it requires; among the modules ready to load,
    the one more modules build on (directly or not) first, then by name. One error line for a
    required module that does not exist or modules that require each other."""
    for module, names in sorted(required.items()):
        unknown = sorted(set(names) - set(required))
        if unknown:
            raise TrnprofError(
                f"stdlib module {module}.sql requires {', '.join(unknown)}, which no "
                f"stdlib/*.sql module is (modules: {', '.join(sorted(required))})"
            )
    users = {module: {other for other, names in required.items() if module in names} for module in required}
    weight = {module: len(_reached(module, users)) for module in required}
    order, waiting = [], dict(required)
    while waiting:
        ready = [module for module, names in waiting.items() if not set(names) & set(waiting)]
        if not ready:
            raise TrnprofError("stdlib modules require each other: " + _cycle(waiting))
        chosen = min(ready, key=lambda module: (-weight[module], module))
        order.append(chosen)
        del waiting[chosen]
    return order


def _reached(module: str, edges: Mapping[str, set[str]]) -> set[str]:
    """Every module reached from `module` along `edges` (`module` itself only on a cycle)."""
    found, todo = set(), list(edges[module])
    while todo:
        name = todo.pop()
        if name not in found:
            found.add(name)
            todo += edges[name]
    return found


def _cycle(waiting: Mapping[str, tuple[str, ...]]) -> str:
    """A cycle among modules none of which is ready (each requires another of them), as
    `a.sql -> b.sql -> a.sql`."""
    path = [min(waiting)]
    while path.count(path[-1]) < 2:
        path.append(min(name for name in waiting[path[-1]] if name in waiting))
    return " -> ".join(f"{module}.sql" for module in path[path.index(path[-1]) :])


def load_modules(texts: Mapping[str, str]) -> list[ViewDef]:
    """The views of the modules `texts` (name -> SQL), in load order."""
    order = module_order({module: requires(text) for module, text in texts.items()})
    return [view for module in order for view in parse_module(module, texts[module])]


@lru_cache(maxsize=1)
def _views() -> tuple[ViewDef, ...]:
    package = resources.files("trnprof") / "stdlib"
    texts = {
        entry.name.removesuffix(".sql"): entry.read_text(encoding="utf-8")
        for entry in package.iterdir()
        if entry.name.endswith(".sql")
    }
    return tuple(load_modules(texts))


_DEFERRED = {"supported": True}  # DuckDB too old for DEFER_BINDING: views are bound when created


def create_view(con: duckdb.DuckDBPyConnection, view: ViewDef) -> None:
    """Create `view` in `con`'s current schema, bound when a query first reads it instead of
    now (DuckDB's `CREATE VIEW ... WITH (DEFER_BINDING)`): a session creates every view but a
    command reads a few, and binding one binds every view under it again."""
    if _DEFERRED["supported"]:
        try:
            con.execute(_CREATE.sub(r"CREATE VIEW \1 WITH (DEFER_BINDING) AS", view.sql.lstrip(), count=1))
            return
        except (duckdb.ParserException, duckdb.NotImplementedException):  # DuckDB before 2.0
            _DEFERRED["supported"] = False
    con.execute(view.sql)


def upstream(names) -> set[str]:
    """`names` (those that are stdlib views) and every stdlib view they read, directly or not."""
    deps, found = dependencies(), set()
    todo = [name for name in names if name in deps]
    while todo:
        name = todo.pop()
        if name not in found:
            found.add(name)
            todo += [read for read in deps[name] if read in deps]
    return found


@lru_cache(maxsize=1)
def dependencies() -> dict[str, frozenset[str]]:
    """Each stdlib view (in load order) -> the stdlib views and run tables (device profile's
    included) its SQL reads."""
    names = {view.name for view in _views()} | {"events", "counters", "ranks"} | set(DEVICE_TABLES)
    # parsed once per installation (0.1 s of CPU a process): trnprof/stdlibdeps.py
    return cached(
        [(view.name, view.sql) for view in _views()],
        names,
        lambda: {
            view.name: frozenset(n for n in duckdb.get_table_names(_read_tables_sql(view.sql)) if n in names)
            for view in _views()
        },
    )


def _read_tables_sql(sql: str) -> str:
    """A view's SELECT for `duckdb.get_table_names`, which cannot bind an ASOF join's condition:
    as a plain join it reads the same tables."""
    return re.sub(r"\bASOF\s+JOIN\b", "JOIN", _CREATE.sub("", sql.lstrip(), count=1), flags=re.IGNORECASE)
