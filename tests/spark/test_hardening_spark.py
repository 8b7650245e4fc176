"""A rule failing inside Spark's JVM (issue 28): one line naming the root cause, not the wrapper;
the JVM's stack trace goes to the driver's log file, not to the terminal."""

import pytest

from trnprof.rules_engine.sandbox import SandboxError
from trnprof.spark import connect


def test_a_failure_inside_a_task_is_one_line_naming_its_cause(sandbox, capfd):
    # every row's cast fails in the executors, under a join that Spark runs as a wrapped job
    sql = (
        "SELECT s.rank, CAST(CAST(s.rank AS VARCHAR) || 'x' AS INTEGER) AS bad FROM steps AS s "
        "JOIN (SELECT rank, MAX(step) AS last FROM step_breakdown GROUP BY rank) AS b ON b.rank = s.rank"
    )
    before = connect.log_path().stat().st_size if connect.log_path().exists() else 0
    with pytest.raises(SandboxError) as caught:
        sandbox.query(sql)
    message = str(caught.value)
    assert "\n" not in message and "awaitResult" not in message and "Job aborted" not in message
    assert "0x" in message or "CAST_INVALID_INPUT" in message or "NumberFormat" in message, message
    err = capfd.readouterr().err
    assert "\tat " not in err and "Exception" not in err, err[:2000]
    logged = connect.log_path().read_text(encoding="utf-8", errors="replace")[before:]
    assert "\tat " in logged  # the stack trace is kept, in the log
