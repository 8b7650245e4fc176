"""`trnprof query` (issue 34): the tables a query names are found by DuckDB's parser (any alias,
case or join), and the query runs in the rule sandbox unless `--unsafe`."""

from __future__ import annotations

import json
import os
import signal
import threading
import time
from pathlib import Path

import pytest

from trnprof.collectors.synthetic import synthetic_run
from trnprof.derived import FOLDER
from trnprof.session import tables_read


@pytest.mark.parametrize(
    "sql",
    [
        "SELECT count(*) AS n FROM critical_path c",
        "select count(*) as n from CRITICAL_PATH AS cp",
        "SELECT count(*) AS n FROM critical_path_steps s JOIN critical_path USING (step)",
        "WITH x AS (SELECT 1 AS one) SELECT count(*) AS n FROM x, (SELECT * FROM main.Critical_Path) p",
    ],
)
def test_a_lazily_computed_table_is_found_however_the_query_names_it(sample_run, cli, sql):
    result = cli("query", sample_run, sql, "--format", "csv")
    assert result.exit_code == 0, result.output
    assert int(result.stdout.splitlines()[1]) > 0


def test_tables_read_comes_from_the_parse_tree():
    sql = "SELECT * FROM a.Steps s JOIN critical_path USING (rank) WHERE x IN (SELECT x FROM y)"
    assert tables_read(sql) == {("a", "Steps"), (None, "critical_path"), (None, "y")}
    assert tables_read("SELECT FROM (") == set()


@pytest.fixture
def run(tmp_path):
    """A run of its own (the sandbox tests check that nothing in it changes)."""
    return synthetic_run(tmp_path / "run", ranks=2, steps=3, ops_per_step=6, seed=4)


def _snapshot(folder: Path) -> dict:
    return {
        p.relative_to(folder): p.read_bytes()
        for p in sorted(folder.rglob("*"))
        if p.is_file() and FOLDER not in p.relative_to(folder).parts
    }


SECRET = "/etc/hostname"


@pytest.mark.parametrize(
    "sql",
    [
        f"SELECT * FROM read_text('{SECRET}')",
        f"SELECT * FROM read_csv('{SECRET}')",
        "SELECT * FROM glob('/etc/*')",
        "COPY (SELECT 1 AS x) TO '{target}'",
        "COPY events TO '{run}/events/rank=0/part-0.parquet' (FORMAT parquet)",
        "ATTACH '{target}' AS other",
        "INSTALL httpfs",
        "LOAD httpfs",
        "SET enable_external_access = true",
        "PRAGMA memory_limit = '1TB'",
        "EXPORT DATABASE '{target}'",
        "SELECT 1; COPY (SELECT 1 AS x) TO '{target}'",
    ],
)
def test_query_refuses_files_settings_and_extensions(run, cli, tmp_path, sql):
    before = _snapshot(run)
    target = tmp_path / "written"
    result = cli("query", run, sql.format(run=run, target=target))
    assert result.exit_code == 2
    assert len(result.stderr.splitlines()) == 1 and result.stderr.startswith("error: query failed: ")
    assert "--unsafe lifts it" in result.stderr
    assert not target.exists() and _snapshot(run) == before


def test_the_sandbox_reads_the_run_and_its_views(run, cli):
    result = cli(
        "query",
        run,
        "SELECT (SELECT count(*) FROM events) AS e, (SELECT count(*) FROM collectives) AS c, "
        "(SELECT count(*) FROM critical_path) AS p, (SELECT count(*) FROM run_job) AS j",
        "--format",
        "json",
    )
    assert result.exit_code == 0, result.output
    counts = json.loads(result.stdout)[0]
    assert counts["e"] > 0 and counts["c"] > 0 and counts["p"] > 0 and counts["j"] == 1


def test_unsafe_lifts_the_sandbox(run, cli, tmp_path):
    target = tmp_path / "steps.csv"
    result = cli("query", run, f"COPY (SELECT * FROM steps) TO '{target}'", "--unsafe")
    assert result.exit_code == 0, result.output
    assert target.read_text().startswith("rank,step,")


SLOW = "SELECT count(*) AS n FROM range(100000000000) a, range(10) b"  # minutes of work


def test_a_query_past_its_time_limit_stops(run, cli):
    result = cli("query", run, SLOW, "--timeout", "0.5")
    assert result.exit_code == 2 and result.stderr == "error: query failed: timed out after 0.5 s\n"


@pytest.mark.parametrize("unsafe", [[], ["--unsafe"]])
def test_ctrl_c_stops_a_running_query(run, cli, unsafe):
    def interrupt_once_running():
        for _ in range(600):  # the query runs in a worker thread: wait for it, then press Ctrl-C
            if any(t.name == "trnprof-sql" for t in threading.enumerate()):
                time.sleep(0.3)
                break
            time.sleep(0.1)
        os.kill(os.getpid(), signal.SIGINT)

    threading.Thread(target=interrupt_once_running, daemon=True).start()
    result = cli("query", run, SLOW, *unsafe)
    assert result.exit_code == 130 and result.stderr == "interrupted\n"
    for _ in range(100):  # DuckDB was interrupted: the worker ends
        if not any(t.name == "trnprof-sql" for t in threading.enumerate()):
            break
        time.sleep(0.1)
    assert not any(t.name == "trnprof-sql" for t in threading.enumerate())
