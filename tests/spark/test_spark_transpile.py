"""DuckDB -> Spark SQL: the rewrites that keep meaning, the refusals, parameter binding, and the
whole stdlib and every built-in rule transpiling (no Spark needed)."""

import pytest

from trnprof.rules_engine.loader import load_rules
from trnprof.spark.transpile import TranspileError, to_spark
from trnprof.spark.views import replacements, spark_views
from trnprof.stdlib import load_views


def test_exact_percentiles_stay_exact():
    sql = to_spark(
        "SELECT PERCENTILE_CONT(0.9) WITHIN GROUP (ORDER BY x) AS p, quantile_cont(x, 0.5) AS q, "
        "PERCENTILE_DISC(0.5) WITHIN GROUP (ORDER BY x) AS d FROM t"
    )
    assert "PERCENTILE_APPROX" not in sql.upper()
    assert "PERCENTILE(x, 0.9)" in sql and "PERCENTILE(x, 0.5)" in sql
    assert "PERCENTILE_DISC(0.5) WITHIN GROUP (ORDER BY x" in sql


def test_descending_percentile_takes_the_complement():
    assert "PERCENTILE(x, 1 - 0.9)" in to_spark("SELECT PERCENTILE_CONT(0.9) WITHIN GROUP (ORDER BY x DESC) FROM t")


def test_log_of_one_argument_is_base_ten_as_in_duckdb():
    assert "LOG(10, x)" in to_spark("SELECT LOG(x) FROM t")
    assert "LN(x)" in to_spark("SELECT LN(x) FROM t")


def test_a_list_element_at_a_computed_place_stays_one_based():
    sql = to_spark("SELECT list_extract(s, n // 2) AS a, list_element(s, n + 1) AS b, s[2] AS c FROM t")
    assert "TRY_ELEMENT_AT(s, CAST(n DIV 2 AS INT)) AS a" in sql and "TRY_ELEMENT_AT(s, CAST(n + 1 AS INT)) AS b" in sql
    assert "s[1] AS c" in sql  # a literal place: sqlglot shifts it itself


def test_regexp_replace_global_uses_spark_back_references():
    sql = to_spark(r"SELECT regexp_replace(lane, '(tid|pid)-[0-9]+', '\1-*', 'g') FROM t")
    assert "'$1-*'" in sql


def test_regexp_replace_of_the_first_match_only_is_refused():
    with pytest.raises(TranspileError, match="first match"):
        to_spark("SELECT regexp_replace(lane, 'a', 'b') FROM t")


def test_parameters_become_literals_not_text():
    sql = to_spark("SELECT * FROM t WHERE a > $threshold AND b = $name", {"threshold": 0.25, "name": "x' OR 1=1 --"})
    assert "0.25" in sql and "$" not in sql
    assert "'x\\' OR 1=1 --'" in sql  # one string literal, quote escaped


def test_missing_parameter_and_bad_sql_are_one_line_errors():
    with pytest.raises(TranspileError, match=r"\$threshold"):
        to_spark("SELECT * FROM t WHERE a > $threshold", {})
    with pytest.raises(TranspileError, match="does not parse"):
        to_spark("SELECT FROM WHERE (")
    with pytest.raises(TranspileError, match="one SQL statement"):
        to_spark("SELECT 1; SELECT 2")


def test_every_stdlib_view_has_spark_sql():
    names = [view.name for view in load_views()]
    assert [name for name, _ in spark_views()] == names
    assert set(replacements()) <= set(names)  # a replacement replaces a view that exists


def test_every_builtin_rule_transpiles():
    for rule in load_rules():
        params = {name: spec.default for name, spec in rule.spec.params.items()}
        to_spark(rule.spec.sql, params)
        for need in rule.spec.requires:
            if not isinstance(need, str):
                to_spark(need.sql, params)


def test_positional_parameters_bind_in_order():
    assert to_spark("SELECT * FROM t WHERE a = ? AND b = ?", [1, "x"]).endswith("WHERE a = 1 AND b = 'x'")
    assert to_spark("SELECT * FROM t WHERE a = $2 AND b = $1", [1, "x"]).endswith("WHERE a = 'x' AND b = 1")
    with pytest.raises(TranspileError, match="more \\? parameters"):
        to_spark("SELECT ?, ?", [1])
