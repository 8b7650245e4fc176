"""Hostile rules: no connection the engine opens can install or load an extension or reach a
file or the network (load-time checks included); a rule past its memory limit or result cap
fails alone with one line; the sandbox spills only into its own temporary folder."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import duckdb
import pyarrow as pa
import pytest

from tests.rules.test_rules_loader import rule_dict, write_rule
from trnprof import sqlparse
from trnprof.errors import TrnprofError
from trnprof.rules_engine.engine import analyze
from trnprof.rules_engine.loader import RuleError, load_rule_file
from trnprof.rules_engine.sandbox import MAX_RESULT_ROWS, Sandbox, SandboxError, parse_size

URLS = [
    "SELECT * FROM 'http://example.invalid/x.parquet'",
    "SELECT * FROM read_parquet('https://example.invalid/x.parquet')",
    "SELECT * FROM read_csv('s3://bucket/x.csv')",
    "SELECT * FROM read_text('/etc/hostname')",
]


@pytest.mark.parametrize("sql", URLS)
def test_a_rule_naming_a_url_or_file_is_refused_at_load_without_touching_it(tmp_path, sql):
    path = write_rule(tmp_path, rule_dict(sql=sql))
    extensions = Path.home() / ".duckdb" / "extensions"
    before = sorted(extensions.rglob("*")) if extensions.exists() else []
    with pytest.raises(RuleError) as caught:
        load_rule_file(path, "testpack")
    assert "\n" not in str(caught.value) and (
        "reads a file or URL" in str(caught.value) or "unknown table" in str(caught.value)
    )
    assert (sorted(extensions.rglob("*")) if extensions.exists() else []) == before  # nothing installed


def test_load_time_checks_never_use_duckdbs_default_connection(tmp_path, monkeypatch):
    def refuse(*args, **kwargs):
        raise AssertionError("the default connection (auto-install on) was used")

    sqlparse._connection()  # the locked parse-only connection, opened before connecting is refused
    for name in ("extract_statements", "get_table_names", "sql", "execute", "connect"):
        monkeypatch.setattr(duckdb, name, refuse)
    rule = load_rule_file(write_rule(tmp_path, rule_dict()), "testpack")
    assert "step_breakdown" in rule.tables


def test_the_load_time_connection_is_locked():
    settings = dict(
        sqlparse._connection()
        .execute(
            "SELECT name, value FROM duckdb_settings() WHERE name IN ('autoinstall_known_extensions', "
            "'autoload_known_extensions', 'allow_community_extensions', 'python_enable_replacements', "
            "'enable_external_access', 'lock_configuration')"
        )
        .fetchall()
    )
    assert settings == {
        "autoinstall_known_extensions": "false",
        "autoload_known_extensions": "false",
        "allow_community_extensions": "false",
        "python_enable_replacements": "false",
        "enable_external_access": "false",
        "lock_configuration": "true",
    }


def test_a_rule_file_that_is_not_utf8_is_one_error(tmp_path, cli, sample_run):
    path = write_rule(tmp_path, rule_dict())
    path.write_bytes(path.read_bytes().replace(b"Idle steps", b"Idle \xff\xfe steps"))
    with pytest.raises(RuleError, match=r"not UTF-8 text"):
        load_rule_file(path, "testpack")
    result = cli("analyze", sample_run, "--rules", tmp_path)
    assert result.exit_code == 2 and len(result.stderr.strip().splitlines()) == 1


def test_the_sandbox_spills_into_its_own_folder_and_removes_it():
    box = Sandbox({"t": pa.table({"x": [1, 2]})}, memory_limit="64MB")
    temp = Path(box.temp)
    setting = box.con.execute("SELECT current_setting('temp_directory')").fetchone()[0]
    assert Path(setting) == temp and temp.is_dir() and temp.name.startswith("trnprof-sandbox-")
    box.close()
    assert not temp.exists()


def test_the_memory_limit_is_on_top_of_the_copied_tables():
    table = pa.table({"x": list(range(2_000_000))})
    box = Sandbox({"t": table}, memory_limit="32MB")
    try:
        limit = box.con.execute("SELECT current_setting('memory_limit')").fetchone()[0]
        held = box.con.execute("SELECT SUM(memory_usage_bytes) FROM duckdb_memory()").fetchone()[0]
        assert box.query("SELECT SUM(x) AS s FROM t")["s"][0] == sum(range(2_000_000))
        assert held > 0 and limit  # the budget was set after the copy, not swallowed by it
    finally:
        box.close()


def test_a_rule_past_its_memory_limit_fails_alone_with_one_line(tmp_path, sample_run):
    write_rule(
        tmp_path,
        rule_dict(
            code="TS001",
            name="testpack.ok",
            sql="SELECT rank, step, dur AS lost_ns FROM steps",
            message="ok {ranks}",
            params={},
            requires=["steps"],
        ),
    )
    write_rule(
        tmp_path,
        rule_dict(
            code="TS002",
            name="testpack.hog",
            params={},
            requires=["steps"],
            sql="SELECT length(string_agg(repeat('x', 100) || r, ',')) AS n FROM steps, range(3000000) t(r)",
        ),
    )
    document = analyze(sample_run, rules=[tmp_path], select=["testpack"], builtin=False, memory_limit="64MB", threads=1)
    errors = {e.name: e.error for e in document.errors}
    assert list(errors) == ["testpack.hog"]
    assert "Out of Memory" in errors["testpack.hog"] and "\n" not in errors["testpack.hog"]
    assert [f.name for f in document.findings] == ["testpack.ok"]


def test_a_result_past_the_row_cap_fails_the_rule():
    box = Sandbox({})
    try:
        with pytest.raises(SandboxError, match="returned more than"):
            box.query(f"SELECT * FROM range({MAX_RESULT_ROWS + 1})")
        assert len(box.query(f"SELECT * FROM range({MAX_RESULT_ROWS})")) == MAX_RESULT_ROWS
        assert list(box.query("SELECT 1 AS a WHERE false").columns) == ["a"]
    finally:
        box.close()


@pytest.mark.parametrize(
    "text, size", [("2GB", 2 * 10**9), ("512MiB", 512 * 2**20), ("1.5 GB", 1.5e9), (100 * 2**20, 100 * 2**20)]
)
def test_memory_limit_sizes(text, size):
    assert parse_size(text) == size


@pytest.mark.parametrize("text", ["lots", "2 parsecs", "-1GB", "1KB", "", "2PiB", "99999999999999999999TB", 2**60])
def test_bad_memory_limits_are_one_error(text, cli, sample_run):
    with pytest.raises(TrnprofError, match="memory limit"):
        parse_size(text)
    result = cli("analyze", sample_run, "--memory-limit", text)
    assert result.exit_code == 2 and "memory limit" in result.stderr


@pytest.mark.parametrize("sql", URLS + ["SELECT * FROM read_json('https://example.invalid/x.json')"])
def test_the_sandbox_refuses_urls_and_files_and_installs_nothing(sql):
    extensions = Path.home() / ".duckdb" / "extensions"
    before = sorted(extensions.rglob("*")) if extensions.exists() else []
    box = Sandbox({"steps": pa.table({"rank": [0]})})
    try:
        with pytest.raises(SandboxError) as caught:
            box.query(sql, timeout=10)
    finally:
        box.close()
    assert "\n" not in str(caught.value)
    assert (sorted(extensions.rglob("*")) if extensions.exists() else []) == before


@pytest.mark.parametrize("value", ["nan", "inf", "-inf", "0", "-5", "1e308", "86401"])
def test_a_timeout_that_is_not_a_time_limit_is_one_error_line(value, cli, sample_run):
    result = cli("analyze", sample_run, f"--timeout={value}")
    assert result.exit_code == 2 and result.stderr.strip().splitlines() == [
        f"error: --timeout {value}: not a number >= 0.001 and <= 86400 (seconds)"
    ]
    with pytest.raises(TrnprofError, match="timeout"):
        analyze(sample_run, timeout=float(value), select=["IN001"])


@pytest.mark.parametrize("text", ["0", "-5", ".nan", ".inf", "-.inf", "1e9"])
def test_a_config_timeout_that_is_not_a_time_limit_is_one_error_line(text, tmp_path, cli, sample_run):
    config = tmp_path / "config.yaml"
    config.write_text(f"timeout: {text}\n")
    result = cli("analyze", sample_run, "--config", config)
    assert result.exit_code == 2 and len(result.stderr.strip().splitlines()) == 1
    assert f"config {config}: timeout" in result.stderr and "<= 86400" in result.stderr


def test_a_config_memory_limit_out_of_range_is_one_error_line(tmp_path, cli, sample_run):
    config = tmp_path / "config.yaml"
    config.write_text("memory_limit: 99999999999999999999\n")
    result = cli("analyze", sample_run, "--config", config)
    assert result.exit_code == 2 and result.stderr.strip().splitlines() == [
        f"error: config {config}: memory limit 99999999999999999999: at most 1PiB"
    ]


@pytest.mark.parametrize("value", ["0", "nan", "1.5", "99999999999"])
def test_threads_out_of_range_are_one_error_line(value, cli, sample_run):
    result = cli("info", sample_run, "--threads", value)
    assert result.exit_code == 2 and result.stderr.strip().splitlines() == [
        f"error: --threads {value}: not an integer >= 1 and <= 1024 (threads)"
    ]


def test_rules_test_refuses_an_infinite_timeout(cli):
    result = cli("rules", "test", "--timeout", "inf")
    assert result.exit_code == 2 and "--timeout inf: not a number" in result.stderr


def test_a_result_past_its_byte_budget_fails_the_rule_in_one_line():
    """Rows capped, and bytes too: 2,000 rows of 100 KB (200 MB) under a 64 MB limit (16 MB of
    result) fail the rule instead of filling memory."""
    box = Sandbox({}, memory_limit="64MB", threads=1)
    try:
        with pytest.raises(SandboxError) as caught:
            box.query("SELECT repeat('x', 100000) AS s, r FROM range(2000) t(r)")
        assert "MiB of rows, a quarter of its memory limit" in str(caught.value) and "\n" not in str(caught.value)
        # the connection is usable after the stream was cut short
        assert box.query("SELECT 40 + 2 AS a")["a"][0] == 42
    finally:
        box.close()


def test_the_results_types_are_duckdbs_pandas_conversion():
    box = Sandbox({})
    try:
        frame = box.query(
            "SELECT 0.5 AS d, SUM(r) AS h, list(r) AS l, CASE WHEN r = 1 THEN NULL ELSE r END AS n, "
            "'a' || r AS s FROM range(3) t(r) GROUP BY r ORDER BY r"
        )
        assert str(frame["d"].dtype) == "float64" and str(frame["h"].dtype) == "float64"
        assert frame["n"].isna().tolist() == [False, True, False] and list(frame["l"][2]) == [2]
        assert frame["s"].tolist() == ["a0", "a1", "a2"]
    finally:
        box.close()


_HOG = """
import resource, sys
resource.setrlimit(resource.RLIMIT_AS, (2_500 * 2**20, 2_500 * 2**20))
from trnprof.rules_engine.sandbox import Sandbox, SandboxError
box = Sandbox({}, memory_limit="256MB", threads=1)
try:
    frame = box.query("SELECT repeat('x', 100000) AS s, r FROM range(40000) t(r)")
    print("fetched", len(frame))
except SandboxError as exc:
    print("refused:", exc)
# this process's own peak (VmHWM: its address space since exec); ru_maxrss would carry over the
# peak of the pytest process it was started from (Linux keeps it across exec)
peak_kb = next(int(line.split()[1]) for line in open("/proc/self/status") if line.startswith("VmHWM:"))
print("rss_mb", peak_kb // 1024)
"""


def test_a_4gb_result_stays_within_the_memory_limit_in_a_bounded_process():
    """4 GB of rows under --memory-limit 256MB, in a process allowed 2.5 GB of address space: one
    refusal, no MemoryError traceback, and a peak RSS of at most 1 GB (it was unbounded)."""
    done = subprocess.run([sys.executable, "-c", _HOG], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr[-2000:]
    lines = done.stdout.strip().splitlines()
    assert lines[0].startswith("refused: returned more than 61 MiB of rows")
    assert int(lines[1].split()[1]) < 1024


def test_a_rule_whose_result_passes_its_bytes_fails_alone_and_the_gate_cannot_pass(tmp_path, cli, sample_run):
    write_rule(
        tmp_path,
        rule_dict(
            code="TS001",
            name="testpack.ok",
            sql="SELECT rank, step, dur AS lost_ns FROM steps",
            message="ok {ranks}",
            params={},
            requires=["steps"],
        ),
    )
    write_rule(
        tmp_path,
        rule_dict(
            code="TS003",
            name="testpack.wide",
            params={},
            requires=["steps"],
            sql="SELECT rank, step, repeat('x', 100000) AS blob FROM steps, range(300)",
        ),
    )
    document = analyze(sample_run, rules=[tmp_path], select=["testpack"], builtin=False, memory_limit="64MB")
    errors = {e.name: e.error for e in document.errors}
    assert list(errors) == ["testpack.wide"] and "MiB of rows" in errors["testpack.wide"]
    assert [f.name for f in document.findings] == ["testpack.ok"]
    result = cli(
        "analyze",
        sample_run,
        "--rules",
        tmp_path,
        "--select",
        "testpack",
        "--memory-limit",
        "64MB",
        "--fail-on",
        "high",
    )
    assert result.exit_code == 2 and "testpack.wide failed: returned more than 15 MiB of rows" in result.stderr
