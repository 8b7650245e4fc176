import json

import pytest

from tests.conftest import write_inline_run


def test_info_json_has_the_documented_keys(cli, sample_run):
    result = cli("info", sample_run, "--format", "json")
    assert result.exit_code == 0, result.output
    info = json.loads(result.stdout)
    assert info["world_size"] == 8 and info["steps"] == 4
    assert set(info["step_time_s"]) == {"median", "p95", "steps", "effective", "wall", "outlier_share"}
    assert info["warmup"] == []
    assert info["step_time_s"]["median"] <= info["step_time_s"]["p95"]
    assert info["throughput"]["unit"] == "seq/s"
    assert info["throughput"]["value"] == pytest.approx(32 / info["step_time_s"]["median"])
    assert info["events"]["by_kind"]["step"] == 32
    assert info["events"]["total"] == sum(info["events"]["by_kind"].values())
    assert info["counters"]["total"] > 0 and info["time_span"]["end_ns"] > info["time_span"]["start_ns"]


def test_info_text(cli, sample_run):
    result = cli("info", sample_run)
    assert result.exit_code == 0
    assert "world size   8" in result.stdout and "throughput" in result.stdout


def test_info_shows_the_compile_step_apart(cli, tmp_path):
    # step 0 compiles for 10 s, steps 1-4 take 1 ms: percentiles are over the steady steps
    events = [
        {"rank": 0, "ts": 0, "dur": 10_000_000_000, "kind": "step", "name": "s", "lane": "host/main", "step": 0},
        {
            "rank": 0,
            "ts": 0,
            "dur": 9_000_000_000,
            "kind": "compile",
            "name": "xla",
            "lane": "host/compiler",
            "step": 0,
        },
    ]
    events += [
        {
            "rank": 0,
            "ts": 10_000_000_000 + i * 1_000_000,
            "dur": 1_000_000,
            "kind": "step",
            "name": "s",
            "lane": "host/main",
            "step": i,
        }
        for i in range(1, 5)
    ]
    run = write_inline_run(tmp_path / "r", events)
    info = json.loads(cli("info", run, "--format", "json").stdout)
    assert info["steps"] == 5 and info["step_time_s"]["steps"] == 4
    assert info["step_time_s"]["p95"] == pytest.approx(0.001)
    assert info["warmup"] == [{"step": 0, "seconds": 10.0, "compiles": 1}]
    text = cli("info", run).stdout
    assert "p95 1.00 ms over 4 steady steps" in text and "warm-up      step 0: 10.000 s, 1 compile" in text


def test_throughput_is_null_when_unknown(cli, tmp_path):
    run = write_inline_run(
        tmp_path / "r", [{"rank": 0, "ts": 0, "dur": 5, "kind": "step", "name": "s", "lane": "host/main", "step": 0}]
    )
    info = json.loads(cli("info", run, "--format", "json").stdout)
    assert info["throughput"] is None and info["mfu"] is None


@pytest.mark.parametrize("fmt", ["table", "csv", "json"])
def test_query_formats(cli, sample_run, fmt):
    result = cli(
        "query", sample_run, "SELECT rank, COUNT(*) AS steps FROM steps GROUP BY rank ORDER BY rank", "--format", fmt
    )
    assert result.exit_code == 0, result.output
    if fmt == "json":
        assert json.loads(result.stdout)[0] == {"rank": 0, "steps": 4}
    elif fmt == "csv":
        assert result.stdout.splitlines()[:2] == ["rank,steps", "0,4"]
    else:
        assert result.stdout.split()[:4] == ["rank", "steps", "0", "4"]


@pytest.mark.parametrize(
    "args, message",
    [
        (("info", "/nonexistent/run"), "run not found"),
        (("query", "{run}", "SELEKT 1"), "query failed"),
        (("query", "{run}", "SELECT * FROM no_such_view"), "no_such_view"),
    ],
)
def test_user_errors_are_one_line_and_exit_2(cli, sample_run, args, message):
    result = cli(*(a.format(run=sample_run) for a in args))
    assert result.exit_code == 2
    assert result.stdout == ""
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: ") and message in lines[0]


def test_demo_simulates_analyzes_and_writes_the_report(cli, tmp_path):
    result = cli("demo", "-o", tmp_path / "demo")
    assert result.exit_code == 0, result.output
    lines = result.stdout.splitlines()
    costliest = lines[[line.startswith("findings") for line in lines].index(True) + 1]
    assert "IN001 The device waits for the next batch" in costliest  # the demo job's slow loader
    assert any(line.startswith(f"report      {(tmp_path / 'demo' / 'report.html').resolve()}") for line in lines)
    top = json.loads((tmp_path / "demo" / "analyze.json").read_text())["findings"][0]
    closing = lines[[line.startswith("fix first") for line in lines].index(True) :]  # the demo ends with what to do
    assert closing[0] == f"fix first   {top['code']} {top['title']}: {top['recommendation']}"
    assert [line.split("trnprof ", 1)[1].split()[0] for line in closing[1:]] == ["analyze", "report", "record"]
    assert sorted(p.name for p in (tmp_path / "demo").iterdir()) == [
        ".trnprof-demo",
        "analyze.json",
        "report.html",
        "run",
    ]
    again = cli("demo", "-o", tmp_path / "demo")  # an earlier demo run is replaced
    assert again.exit_code == 0


def test_python_m_trnprof_runs(tmp_path):
    import subprocess
    import sys

    out = subprocess.run([sys.executable, "-m", "trnprof", "--version"], capture_output=True, text=True, cwd=tmp_path)
    assert out.returncode == 0 and "trnprof" in out.stdout


def test_info_from_written_stats_equals_a_full_scan(sample_run):
    from trnprof import open_run

    with open_run(sample_run) as run:
        from_stats = run.info()
        del run.manifest["stats"]
        from_scan = run.info()
    assert from_stats == from_scan


def test_query_json_handles_every_duckdb_type(cli, sample_run):
    result = cli(
        "query",
        sample_run,
        "SELECT [1, 2] AS l, 'ab'::BLOB AS b, INTERVAL 1 DAY AS i, {'a': 1} AS s, "
        "DATE '2020-01-01' AS d, 'nan'::DOUBLE AS n, NULL AS z",
        "--format",
        "json",
    )
    assert result.exit_code == 0, result.output
    row = json.loads(result.stdout)[0]
    assert row["l"] == [1, 2] and row["b"] == "6162" and row["s"] == {"a": 1}
    assert row["d"].startswith("2020-01-01") and row["n"] is None and row["z"] is None and row["i"]


def _one_error_line(result, message):
    assert result.exit_code == 2, result.output
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: ") and message in lines[0], result.stderr


def test_damaged_runs_are_one_error_line(cli, tmp_path, sample_run):
    import shutil

    damaged = tmp_path / "damaged"
    shutil.copytree(sample_run, damaged)
    (damaged / "ranks.parquet").unlink()
    _one_error_line(cli("info", damaged), "damaged run")
    shutil.rmtree(damaged)
    shutil.copytree(sample_run, damaged)
    part = next((damaged / "events").glob("rank=0/*.parquet"))
    part.write_bytes(b"PAR1 not really parquet")
    _one_error_line(cli("query", damaged, "SELECT COUNT(*) FROM events"), "")


def test_missing_output_folder_is_one_error_line(cli, sample_run, tmp_path):
    blocker = tmp_path / "file"
    blocker.write_text("x")
    _one_error_line(cli("export", sample_run, "-o", blocker / "sub" / "t.json"), "")
