"""DuckDB sessions: memory budget and a private folder to spill into."""

import gc
import os
import shutil
import stat
from pathlib import Path

import pytest

from trnprof import session
from trnprof.errors import TrnprofError


def test_each_session_spills_into_its_own_private_folder_removed_with_it(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    con = session.connect()
    other = session.connect()
    spill = Path(con.execute("SELECT current_setting('temp_directory')").fetchone()[0])
    assert spill.is_absolute() and tmp_path not in spill.parents  # never the working folder
    assert spill != Path(other.execute("SELECT current_setting('temp_directory')").fetchone()[0])
    assert stat.S_IMODE(os.stat(spill.parent).st_mode) == 0o700
    con.close()
    del con
    gc.collect()
    assert not spill.parent.exists()
    other.close()


def test_the_memory_budget_is_set_and_a_bad_one_is_one_clear_error(monkeypatch):
    monkeypatch.setenv("TRNPROF_MEMORY_LIMIT", "900MB")
    con = session.connect()
    assert con.execute("SELECT current_setting('memory_limit')").fetchone()[0] in ("858.3 MiB", "900.0 MB")
    with pytest.raises(TrnprofError, match="memory limit 'lots' not understood"):
        session.connect(memory_limit="lots")


def test_a_query_over_ready_views_is_not_parsed_again(sample_run, tmp_path, monkeypatch):
    """`prepare` parses a query only when it names a view left to store or a critical path
    table not yet made; then it stores them as before."""
    from trnprof.engines import open_run

    fresh = tmp_path / "run"  # the shared sample run's cache may hold the view from other tests
    shutil.copytree(sample_run, fresh, ignore=shutil.ignore_patterns("derived"))
    parsed = []
    real = session.tables_read
    monkeypatch.setattr(session, "tables_read", lambda query: parsed.append(query) or real(query))
    with open_run(fresh) as run:
        assert not run.is_stored("step_breakdown")
        first = run.sql("SELECT COUNT(*) AS n FROM step_breakdown")
        assert len(parsed) == 1 and run.is_stored("step_breakdown")
        again = run.sql("SELECT COUNT(*) AS n FROM step_breakdown -- same view, ready")
        run.sql("SELECT 1 AS one")  # names no view
        assert len(parsed) == 1 and again.equals(first)
        assert not run.is_stored("signals")
        run.sql("SELECT * FROM step_breakdown, signals")  # signals is left to store
        assert len(parsed) == 2 and run.is_stored("signals")
