"""Rule SQL on Spark keeps the sandbox's contract: only its tables, nothing by path, no call
into the JVM, a time limit, a cap on rows; refusals are one-line SandboxErrors."""

import pytest

from trnprof.rules_engine.sandbox import SandboxError


def test_a_rule_reads_its_tables_with_parameters(sandbox):
    frame = sandbox.query(
        "SELECT rank, step FROM step_breakdown WHERE idle >= $floor ORDER BY rank, step", {"floor": 0}
    )
    assert len(frame) == 40 and list(frame.columns) == ["rank", "step"]


@pytest.mark.parametrize(
    "sql, message",
    [
        ("SELECT * FROM events", "not among its tables"),
        ('SELECT * FROM parquet."/etc/passwd"', "may read only its tables"),
        ("SELECT * FROM read_parquet('/etc/passwd')", "may read only its tables"),
        ("SELECT * FROM main.steps", "may read only its tables"),
        ("SELECT reflect('java.lang.System', 'getenv', 'HOME') AS home FROM steps", "may not call reflect"),
        ("WITH x AS (SELECT * FROM counters) SELECT * FROM x", "not among its tables"),
        ("DROP VIEW steps", "must be one SELECT"),
        ("SELECT 1; SELECT 2", "must be one SELECT"),
        ("SELECT regexp_replace(name, 'a', 'b') FROM steps", "first match"),
    ],
)
def test_refused_queries(sandbox, sql, message):
    with pytest.raises(SandboxError, match=message):
        sandbox.query(sql)


def test_a_failing_query_is_one_line(sandbox):
    with pytest.raises(SandboxError) as error:
        sandbox.query("SELECT no_such_column FROM steps")
    assert "\n" not in str(error.value) and "no_such_column" in str(error.value)


def test_a_query_past_its_time_limit_is_interrupted(sandbox):
    sql = (
        "SELECT k % 7 AS m, COUNT(*) AS n FROM (SELECT a.rank * 64000 + b.step * 1600 + c.ts * 40 + d.dur AS k "
        "FROM steps a, steps b, steps c, steps d, steps e) GROUP BY k HAVING COUNT(*) > 1"
    )  # 40^5 rows
    with pytest.raises(SandboxError, match="timed out after 1 s"):
        sandbox.query(sql, timeout=1)
    assert len(sandbox.query("SELECT * FROM steps")) == 40  # the session is still usable
