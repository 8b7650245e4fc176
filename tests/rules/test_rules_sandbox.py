"""The sandbox: rule SQL reads the tables copied in and nothing else, and cannot run forever."""

from __future__ import annotations

import os
import signal
import threading
import time

import duckdb
import msgspec
import pyarrow as pa
import pytest

from tests.rules.test_rules_loader import rule_dict, write_rule
from trnprof.rules_engine.engine import analyze
from trnprof.rules_engine.sandbox import Sandbox, SandboxError


@pytest.fixture(params=[False, True], ids=["file", "in_memory"])
def sandbox(request):
    """Both kinds of sandbox: a database file, and in memory (a small run's): every lock holds in each."""
    box = Sandbox({"steps": pa.table({"rank": [0, 1], "step": [0, 0], "dur": [10, 20]})}, in_memory=request.param)
    yield box
    box.close()


def test_rules_read_the_copied_tables(sandbox):
    assert sandbox.query("SELECT SUM(dur) AS total FROM steps")["total"][0] == 30


def test_parameters_are_bound_not_pasted(sandbox):
    frame = sandbox.query("SELECT rank FROM steps WHERE dur > $limit", {"limit": 15})
    assert list(frame["rank"]) == [1]
    assert sandbox.query("SELECT $text AS t", {"text": "x'); DROP TABLE steps; --"})["t"][0].startswith("x'")


@pytest.mark.parametrize(
    "sql",
    [
        "SELECT * FROM read_text('/etc/hostname')",
        "SELECT * FROM read_csv('/etc/passwd', sep = ':')",
        "SELECT * FROM glob('/tmp/*')",
    ],
)
def test_cannot_read_another_file(sandbox, sql):
    with pytest.raises(SandboxError, match="disabled by configuration|Permission"):
        sandbox.query(sql)


def test_cannot_read_the_run_files_either(sandbox, sample_run):
    with pytest.raises(SandboxError, match="Permission"):
        sandbox.query(f"SELECT COUNT(*) FROM read_parquet('{sample_run}/events/*/*.parquet')")


@pytest.mark.parametrize(
    "sql",
    [
        "COPY steps TO '{dir}/out.csv'",
        "COPY (SELECT 1) TO '{dir}/out.parquet' (FORMAT parquet)",
        "EXPORT DATABASE '{dir}/db'",
    ],
)
def test_cannot_write_a_file(sandbox, tmp_path, sql):
    statement = sql.format(dir=tmp_path)
    with pytest.raises(SandboxError, match="refused: rule SQL must be one SELECT"):
        sandbox.query(statement)
    with pytest.raises(duckdb.Error, match="disabled by configuration|Permission"):  # locked below the check too
        sandbox.con.execute(statement)
    assert list(tmp_path.iterdir()) == []


def test_cannot_attach_a_database(sandbox, tmp_path):
    target = tmp_path / "other.duckdb"
    with pytest.raises(SandboxError, match="refused"):
        sandbox.query(f"ATTACH '{target}' AS other")
    with pytest.raises(duckdb.Error, match="disabled by configuration|Permission"):
        sandbox.con.execute(f"ATTACH '{target}' AS other")
    assert not target.exists()


@pytest.mark.parametrize(
    "sql", ["SET threads = 1", "SET enable_external_access = true", "RESET lock_configuration", "PRAGMA threads=1"]
)
def test_cannot_change_a_setting(sandbox, sql):
    with pytest.raises(SandboxError, match="refused"):
        sandbox.query(sql)
    with pytest.raises(duckdb.Error, match="locked|Cannot change|Cannot upgrade"):
        sandbox.con.execute(sql)


def test_cannot_modify_or_add_tables(sandbox):
    for sql in (
        "DROP TABLE steps",
        "CREATE TABLE x AS SELECT 1",
        "INSERT INTO steps VALUES (2, 0, 1)",
        "SELECT 1; DROP TABLE steps",
        "INSTALL httpfs",
        "LOAD httpfs",
    ):
        with pytest.raises(SandboxError, match="refused"):
            sandbox.query(sql)
    assert len(sandbox.query("SELECT * FROM steps")) == 2


def test_the_tables_are_read_from_a_private_file_not_held_in_memory():
    """A large table (`collectives` at 1,024 ranks has millions of rows) lives in the sandbox's
    own database file, read through DuckDB's buffer pool, and the file goes with the sandbox."""
    box = Sandbox({"collectives": pa.table({"seq": list(range(200_000)), "dur": [7] * 200_000})})
    try:
        assert box.query("SELECT SUM(dur) AS total FROM collectives")["total"][0] == 1_400_000
        held = box.query(
            "SELECT COALESCE(SUM(memory_usage_bytes), 0) AS held FROM duckdb_memory() WHERE tag = 'IN_MEMORY_TABLE'"
        )["held"][0]
        assert held == 0
        (path,) = box.query("SELECT path FROM duckdb_databases() WHERE NOT internal")["path"]
        assert path.startswith(box.temp)
    finally:
        box.close()
    assert not os.path.exists(path)


def test_a_small_run_gets_an_in_memory_sandbox_and_a_large_one_a_file(sample_run, monkeypatch):
    from trnprof import engines
    from trnprof.rules_engine import engine

    with engines.open_run(sample_run) as run:
        assert engine._small(run)
        monkeypatch.setattr(engine, "SMALL_RUN_BYTES", 1000)
        assert not engine._small(run)


def test_the_sandbox_reads_the_events_in_place(sample_run, tmp_path, monkeypatch):
    """The events are never copied into the sandbox (a minute at 44M events; at 136k, 0.15 s and
    every column's memory for the one rule that reads them) but read from the run's own files, as
    the stored views are: the run's rows, the same findings from a small run's in-memory sandbox
    and a large run's database file, and no other file readable."""
    from trnprof import engines
    from trnprof.rules_engine import engine

    names = {"events", "steps"}
    steps = "SELECT * FROM steps ORDER BY ALL"
    total = "SELECT COUNT(*) AS n, SUM(dur) AS dur, COUNT(DISTINCT rank) AS ranks FROM events"
    with engines.open_run(sample_run) as run:
        assert engine._small(run)
        box = engine.open_sandbox(run, names, threads=None, memory_limit="256MB")
        stored_steps, run_total = run.sql(steps), run.sql(total)
    try:
        kinds = "SELECT table_name, table_type FROM information_schema.tables ORDER BY 1"
        assert dict(box.query(kinds).itertuples(index=False)) == {"events": "VIEW", "steps": "VIEW"}
        assert box.query(total).equals(run_total) and run_total["n"][0] > 0
        assert box.query(steps).equals(stored_steps) and len(stored_steps)
        outside = tmp_path / "other.parquet"
        duckdb.sql("COPY (SELECT 1 AS x) TO '" + str(outside) + "' (FORMAT parquet)")
        with pytest.raises(SandboxError):
            box.query(f"SELECT * FROM read_parquet('{outside}')")
    finally:
        box.close()
    small = analyze(sample_run)
    monkeypatch.setattr(engine, "SMALL_RUN_BYTES", 1000)
    large = analyze(sample_run)
    assert msgspec.json.encode(large.findings) == msgspec.json.encode(small.findings) and small.findings


def test_an_in_memory_sandbox_holds_no_file_and_leaves_nothing():
    box = Sandbox({"steps": pa.table({"rank": [0], "dur": [5]})}, in_memory=True)
    try:
        (path,) = box.query("SELECT path FROM duckdb_databases() WHERE NOT internal")["path"]
        assert path is None and box.query("SELECT dur FROM steps")["dur"][0] == 5
    finally:
        box.close()
    assert not os.path.exists(box.temp)


def test_cannot_read_python_variables_by_name(sandbox):
    secret = pa.table({"password": ["hunter2"]})  # noqa: F841 - what a replacement scan would find
    with pytest.raises(SandboxError, match="secret"):
        sandbox.query("SELECT * FROM secret")


def test_a_slow_query_is_interrupted_and_the_sandbox_stays_usable(sandbox):
    started = time.perf_counter()
    with pytest.raises(SandboxError, match="timed out after 0.3 s"):
        sandbox.query("SELECT COUNT(*) FROM range(1000000000000) AS a(x) WHERE x % 7 = 3", timeout=0.3)
    assert time.perf_counter() - started < 10
    assert sandbox.query("SELECT COUNT(*) AS n FROM steps", timeout=5)["n"][0] == 2


def test_a_failing_or_slow_rule_is_reported_and_the_others_run(tmp_path, sample_run):
    pack = tmp_path / "rules"
    write_rule(
        pack,
        rule_dict(
            code="TS001", name="testpack.ok", sql="SELECT rank, step, dur AS lost_ns FROM steps", message="ok {ranks}"
        ),
    )
    # binds (a misspelt column is a load error: test_rules_authoring.py) but fails on the run's rows
    write_rule(
        pack,
        rule_dict(
            code="TS002",
            name="testpack.broken",
            sql="SELECT rank, CAST('nonexistent' || CAST(rank AS VARCHAR) AS INTEGER) AS n FROM steps",
        ),
    )
    write_rule(
        pack,
        rule_dict(
            code="TS003",
            name="testpack.forever",
            sql="SELECT COUNT(*) AS n FROM steps a, steps b, steps c, steps d, steps e, "
            "steps f, steps g, steps h, steps i",
        ),
    )
    started = time.perf_counter()
    document = analyze(sample_run, rules=[pack], select=["testpack"], builtin=False, timeout=0.5)
    errors = {e.name: e.error for e in document.errors}
    assert "nonexistent" in errors["testpack.broken"]
    assert errors["testpack.forever"] == "timed out after 0.5 s"
    assert [f.name for f in document.findings] == ["testpack.ok"]
    assert time.perf_counter() - started < 30


@pytest.fixture
def two_workers():
    box = Sandbox({"steps": pa.table({"rank": [0, 1], "step": [0, 0], "dur": [10, 20]})}, in_memory=True, workers=2)
    yield box
    box.close()


def test_map_runs_items_at_once_and_keeps_their_order(two_workers):
    together = threading.Barrier(2)

    def work(query, k):
        if k < 2:
            together.wait(timeout=10)  # broken unless the first two run at the same time
        return int(query("SELECT $k + SUM(dur) AS v FROM steps", {"k": k})["v"][0])

    assert two_workers.map(work, list(range(8))) == [30 + k for k in range(8)]


@pytest.mark.parametrize(
    "sql", ["SELECT * FROM read_text('/etc/hostname')", "SELECT * FROM secret", "SET threads = 1", "DROP TABLE steps"]
)
def test_every_lock_holds_on_the_workers_connections(two_workers, sql):
    secret = pa.table({"password": ["hunter2"]})  # noqa: F841 - what a replacement scan would find

    def work(query, text):
        try:
            query(text)
        except SandboxError as exc:
            return str(exc)
        return "ran"

    refusals = two_workers.map(work, [sql, sql])
    assert "ran" not in refusals
    assert two_workers.query("SELECT COUNT(*) AS n FROM steps")["n"][0] == 2


def test_ctrl_c_stops_every_running_item_and_the_sandbox_stays_usable(two_workers):
    slow = "SELECT COUNT(*) FROM range(100000000000) AS a(x) WHERE x % 7 = 3"  # minutes, uninterrupted
    previous = signal.signal(signal.SIGINT, signal.default_int_handler)  # Ctrl-C even where SIGINT is ignored

    def press_ctrl_c_once_both_run():
        for _ in range(200):
            if sum(t.name == "trnprof-sql" for t in threading.enumerate()) >= 2:
                break
            time.sleep(0.05)
        os.kill(os.getpid(), signal.SIGINT)

    threading.Thread(target=press_ctrl_c_once_both_run, daemon=True).start()
    started = time.perf_counter()
    try:
        with pytest.raises(KeyboardInterrupt):
            two_workers.map(lambda query, _: query(slow), [0, 1, 2, 3])
    finally:
        signal.signal(signal.SIGINT, previous)
    assert time.perf_counter() - started < 20
    assert not any(t.name.startswith(("trnprof-sql", "trnprof-rules")) for t in threading.enumerate())
    assert two_workers.query("SELECT COUNT(*) AS n FROM steps", timeout=5)["n"][0] == 2


def test_rules_at_once_give_the_document_of_rules_one_at_a_time(sample_run, monkeypatch):
    from trnprof.rules_engine import engine

    def document():
        found = msgspec.to_builtins(analyze(sample_run))
        return {key: value for key, value in found.items() if key not in ("seconds", "rule_seconds")}

    assert engine._rule_workers(True, None) > 1 or (os.cpu_count() or 1) == 1
    at_once = document()
    monkeypatch.setattr(engine, "RULE_WORKERS", 1)
    assert document() == at_once
    assert at_once["findings"]


def test_running_out_of_memory_is_told_apart_from_other_failures():
    box = Sandbox({"steps": pa.table({"rank": [0]})}, in_memory=True, memory_limit="32MB")
    try:
        with pytest.raises(SandboxError, match="Out of Memory") as caught:
            box.query("SELECT list(x) FROM range(50000000) AS r(x)")
        assert caught.value.out_of_memory
        with pytest.raises(SandboxError) as caught:
            box.query("SELECT CAST('x' AS INTEGER)")
        assert not caught.value.out_of_memory
    finally:
        box.close()


def test_a_rule_out_of_memory_beside_others_is_evaluated_again_alone(sample_run, monkeypatch):
    """Rules run at once share the memory limit: one that runs out of it there may have lost it
    to the others, so it runs again alone, and its findings are those of a run alone."""
    from trnprof.rules_engine import engine

    def without_timings(document):
        found = msgspec.to_builtins(document)
        return {key: value for key, value in found.items() if key not in ("seconds", "rule_seconds")}

    alone = without_timings(analyze(sample_run))
    victim = next(f["name"] for f in alone["findings"])
    real, runs = engine._outcome, []

    def crowded(rule, query, *args):
        runs.append((rule.name, threading.current_thread().name.startswith("trnprof-rules")))
        if rule.name == victim and runs[-1][1]:
            return engine._Outcome(
                found=[], error=engine.RuleFailure(name=victim, error="Out of Memory"), out_of_memory=True
            )
        return real(rule, query, *args)

    monkeypatch.setattr(engine, "_outcome", crowded)
    assert without_timings(analyze(sample_run)) == alone
    assert [in_worker for name, in_worker in runs if name == victim] == [True, False]
