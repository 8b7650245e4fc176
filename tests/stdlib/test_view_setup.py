"""What opening a run costs: the stdlib views are created unbound (DuckDB's DEFER_BINDING), so
a command binds only the views its queries read, and a view reads the same rows either way."""

from __future__ import annotations

from tests.conftest import write_inline_run
from trnprof.engines import open_run
from trnprof.stdlib import load_views


def _run(tmp_path):
    events = [
        {"rank": r, "ts": i * 1_000_000, "dur": 900_000, "kind": "step", "name": "s", "lane": "host/main", "step": i}
        for r in range(2)
        for i in range(4)
    ]
    events += [
        {
            "rank": r,
            "ts": i * 1_000_000 + 100_000,
            "dur": 500_000,
            "kind": "compute",
            "name": "matmul",
            "lane": "device/0",
            "step": i,
        }
        for r in range(2)
        for i in range(4)
    ]
    return write_inline_run(tmp_path / "run", events)


def _bound(run) -> dict[str, bool]:
    rows = run.con.execute("SELECT view_name, is_bound FROM duckdb_views() WHERE NOT internal").fetchall()
    return dict(rows)


def test_opening_a_run_binds_no_stdlib_view_and_a_query_binds_what_it_reads(tmp_path):
    stdlib = {view.name for view in load_views()}
    with open_run(_run(tmp_path)) as run:
        bound = _bound(run)
        assert stdlib <= set(bound)
        assert not any(bound[name] for name in stdlib)
        deferred = run.sql("SELECT rank, step, compute FROM step_breakdown ORDER BY rank, step")
        assert _bound(run)["step_breakdown"] and not _bound(run)["mfu"]
        # the same view created bound now reads the same rows
        sql = next(view.sql for view in load_views() if view.name == "step_breakdown")
        run.con.execute(sql.replace("CREATE VIEW step_breakdown", "CREATE VIEW step_breakdown_bound", 1))
        bound_now = run.sql("SELECT rank, step, compute FROM step_breakdown_bound ORDER BY rank, step")
    assert len(deferred) == 8 and deferred.equals(bound_now)
    assert (deferred["compute"] > 0).all()


def test_a_duckdb_without_deferred_binding_gets_bound_views(tmp_path, monkeypatch):
    """DuckDB 1.x refuses `WITH (DEFER_BINDING)` (a parser or a "not implemented" error): the
    views are then created bound, and a run opens and reads the same rows."""
    import types

    import duckdb

    from trnprof import stdlib

    class OldDuckDB:
        def __init__(self, con):
            self.con = con

        def execute(self, sql, *args):
            if "DEFER_BINDING" in sql:
                raise duckdb.NotImplementedException("Not implemented Error: VIEW options")
            return self.con.execute(sql, *args)

    run_dir = _run(tmp_path)
    with open_run(run_dir) as run:
        expected = run.sql("SELECT rank, step, compute FROM step_breakdown ORDER BY rank, step")
    monkeypatch.setitem(stdlib._DEFERRED, "supported", True)
    con = duckdb.connect()
    stdlib.create_view(OldDuckDB(con), types.SimpleNamespace(sql="CREATE VIEW answer AS SELECT 42 AS x"))
    assert stdlib._DEFERRED["supported"] is False and con.execute("SELECT x FROM answer").fetchone() == (42,)
    with open_run(run_dir) as run:
        assert _bound(run)["step_breakdown"]  # created bound
        assert run.sql("SELECT rank, step, compute FROM step_breakdown ORDER BY rank, step").equals(expected)
