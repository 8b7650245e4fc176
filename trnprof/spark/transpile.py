"""DuckDB SQL -> Spark SQL, done once for the stdlib, rule SQL and user queries.

sqlglot does the dialect work. The rewrites below fix the few places where its output would
run on Spark but mean something else, each named after what it keeps equal
(docs/scale-out.md lists them):

- `PERCENTILE_CONT(q) WITHIN GROUP (ORDER BY x)` and `quantile_cont(x, q)`: sqlglot writes
  Spark's approximate percentile; DuckDB's is exact and interpolated, as Spark's `percentile`.
- `PERCENTILE_DISC(q) WITHIN GROUP (ORDER BY x)`: kept as written (Spark's is exact too).
- one-argument `log(x)`: base 10 in DuckDB, natural in Spark.
- `list_extract(l, i)`: sqlglot passes it through, a function Spark does not have; Spark's
  `try_element_at` is 1-based, as DuckDB's lists (its place cast to INT, the only type Spark
  takes). Stdlib views read list elements with `list_extract`: sqlglot shifts `l[i]` only when
  `i` is a literal.
- `regexp_replace(s, p, r, 'g')`: the `'g'` option is dropped by sqlglot (Spark always replaces
  every match) and `\\1` back references become Spark's `$1`. Without `'g'` DuckDB replaces
  only the first match, which Spark cannot: refused with a one-line error.

Parameters (`$name`, `?`, `$1`) become SQL literals of their values before generation, so
nothing is spliced into SQL text as a string.
"""

from __future__ import annotations

import re

import sqlglot
from sqlglot import exp

from trnprof.errors import TrnprofError


class TranspileError(TrnprofError):
    """SQL that has no Spark SQL with the same meaning (or does not parse)."""


def _percentile(node: exp.Expression) -> exp.Expression:
    """Exact, interpolated percentiles stay exact on Spark."""
    if isinstance(node, exp.WithinGroup) and isinstance(node.this, (exp.PercentileCont, exp.PercentileDisc)):
        order = node.expression.expressions if isinstance(node.expression, exp.Order) else []
        if len(order) != 1:
            raise TranspileError("WITHIN GROUP needs exactly one ORDER BY key on Spark")
        key, quantile = order[0], node.this.this
        if isinstance(node.this, exp.PercentileDisc):
            within = exp.Anonymous(this="PERCENTILE_DISC", expressions=[quantile.copy()])
            return exp.WithinGroup(this=within, expression=node.expression.copy())
        if key.args.get("desc"):
            quantile = exp.Sub(this=exp.Literal.number(1), expression=quantile.copy())
        return exp.Anonymous(this="PERCENTILE", expressions=[key.this.copy(), quantile.copy()])
    if isinstance(node, exp.PercentileCont) and not isinstance(node.parent, exp.WithinGroup):
        return exp.Anonymous(this="PERCENTILE", expressions=[node.this.copy(), node.expression.copy()])
    return node


def _log10(node: exp.Expression) -> exp.Expression:
    if isinstance(node, exp.Log) and node.expression is None:
        return exp.Log(this=exp.Literal.number(10), expression=node.this.copy())
    return node


_BACKREF = re.compile(r"\\(\d)")


def _regexp_replace(node: exp.Expression) -> exp.Expression:
    if not isinstance(node, exp.RegexpReplace):
        return node
    modifiers = node.args.get("modifiers")
    flags = modifiers.name if isinstance(modifiers, exp.Literal) else None
    if flags is None or "g" not in flags or set(flags) - {"g"}:
        raise TranspileError(
            "regexp_replace replaces only the first match without the 'g' option, which "
            "Spark cannot do: write regexp_replace(s, pattern, replacement, 'g')"
        )
    replacement = node.args.get("replacement")
    if not isinstance(replacement, exp.Literal):
        raise TranspileError("regexp_replace on Spark needs a literal replacement string")
    spark_text = _BACKREF.sub(r"$\1", replacement.name.replace("$", "\\$"))
    return exp.RegexpReplace(
        this=node.this.copy(), expression=node.expression.copy(), replacement=exp.Literal.string(spark_text)
    )


_LIST_EXTRACT = {"list_extract", "list_element"}


def _list_element(node: exp.Expression) -> exp.Expression:
    """`list_extract(l, i)` stays 1-based on Spark: `try_element_at(l, i)`. (`l[i]` is left to
    sqlglot, which shifts a literal place; with no types it cannot tell a list from a map.)"""
    if not (isinstance(node, exp.Anonymous) and node.name.lower() in _LIST_EXTRACT and len(node.expressions) == 2):
        return node
    items, index = node.expressions
    place = exp.cast(index.copy(), exp.DataType.build("int"))  # Spark takes no BIGINT place
    return exp.Anonymous(this="TRY_ELEMENT_AT", expressions=[items.copy(), place])


_REWRITES = (_percentile, _log10, _regexp_replace, _list_element)


def _bind(tree: exp.Expression, params) -> exp.Expression:
    """Each parameter as a literal: `$name` from a mapping; `?` (in order) or `$1` from a list."""
    positional = iter(params) if isinstance(params, (list, tuple)) else None

    def value(node: exp.Placeholder):
        name = node.args.get("this") or ""  # `?` has none
        if positional is not None:
            if name and name.isdigit() and int(name) <= len(params):
                return params[int(name) - 1]
            if not name:
                try:
                    return next(positional)
                except StopIteration:
                    raise TranspileError("more ? parameters than values") from None
        elif name in params:
            return params[name]
        raise TranspileError(f"no value for parameter {'$' + name if name else '?'}")

    return tree.transform(lambda node: exp.convert(value(node)) if isinstance(node, exp.Placeholder) else node)


def parse(sql: str) -> exp.Expression:
    """One DuckDB statement as a sqlglot tree; one clear error when it does not parse."""
    try:
        statements = [s for s in sqlglot.parse(sql, read="duckdb") if s is not None]
    except sqlglot.errors.SqlglotError as exc:
        raise TranspileError(f"SQL does not parse: {str(exc).splitlines()[0]}") from None
    if len(statements) != 1:
        raise TranspileError(f"expected one SQL statement, got {len(statements)}")
    return statements[0]


def to_spark_tree(tree: exp.Expression, params=None) -> exp.Expression:
    """A DuckDB tree rewritten so that sqlglot's Spark output means the same."""
    tree = _bind(tree.copy(), params or {})
    for rewrite in _REWRITES:
        tree = tree.transform(rewrite)
    return tree


def generate(tree: exp.Expression) -> str:
    try:
        return tree.sql(dialect="spark", unsupported_level=sqlglot.ErrorLevel.RAISE)
    except sqlglot.errors.SqlglotError as exc:
        raise TranspileError(f"no Spark SQL for this query: {str(exc).splitlines()[0]}") from None


def to_spark(sql: str, params=None) -> str:
    """`sql` (DuckDB's dialect; parameters bound from `params`, a mapping or a list) as Spark SQL."""
    return generate(to_spark_tree(parse(sql), params))
