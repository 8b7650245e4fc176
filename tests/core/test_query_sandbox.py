"""`trnprof query` (issue 34): the tables a query names are found by DuckDB's parser (any alias,
case or join), and the query runs in the rule sandbox unless `--unsafe`."""

from __future__ import annotations

import pytest

from trnprof.session import tables_read


@pytest.mark.parametrize("sql", [
    "SELECT count(*) AS n FROM critical_path c",
    "select count(*) as n from CRITICAL_PATH AS cp",
    "SELECT count(*) AS n FROM critical_path_steps s JOIN critical_path USING (step)",
    "WITH x AS (SELECT 1 AS one) SELECT count(*) AS n FROM x, (SELECT * FROM main.Critical_Path) p",
])
def test_a_lazily_computed_table_is_found_however_the_query_names_it(sample_run, cli, sql):
    result = cli("query", sample_run, sql, "--format", "csv")
    assert result.exit_code == 0, result.output
    assert int(result.stdout.splitlines()[1]) > 0


def test_tables_read_comes_from_the_parse_tree():
    sql = "SELECT * FROM a.Steps s JOIN critical_path USING (rank) WHERE x IN (SELECT x FROM y)"
    assert tables_read(sql) == {("a", "Steps"), (None, "critical_path"), (None, "y")}
    assert tables_read("SELECT FROM (") == set()
