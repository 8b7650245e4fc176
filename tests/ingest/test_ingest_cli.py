"""`trnprof ingest`: the summary line, and every user error as one line with exit code 2."""

from __future__ import annotations

import gzip
import json
from pathlib import Path

import pytest

from tests.conftest import KINETO
from trnprof.api import open_run

TRACE_FILTER = KINETO / "trace_filter"


def _trace(path: Path, events, **top) -> Path:
    path.write_text(json.dumps({**top, "traceEvents": events}))
    return path


def test_ingest_a_folder_prints_one_summary_line(cli, tmp_path):
    assert TRACE_FILTER.is_dir(), f"test trace missing: {TRACE_FILTER}"
    result = cli("ingest", TRACE_FILTER, "-o", tmp_path / "run")
    assert result.exit_code == 0, result.output
    lines = result.output.strip().splitlines()
    assert len(lines) == 1
    assert lines[0] == f"{tmp_path / 'run'}: 9,487 events, 0 counters, 0 quarantined, 2 rank(s) from 2 input(s)"
    manifest = open_run(tmp_path / "run").manifest
    assert [i["bytes"] for i in manifest["source"]["inputs"]] == [
        p.stat().st_size for p in sorted(TRACE_FILTER.iterdir())
    ]
    assert all(len(i["sha256"]) == 64 for i in manifest["source"]["inputs"])
    assert cli("info", tmp_path / "run").exit_code == 0


def test_quarantine_is_in_the_summary(cli, tmp_path):
    trace = _trace(
        tmp_path / "t.json", [{"ph": "X", "name": "a", "ts": 1, "dur": 1}, {"ph": "X", "name": "b", "ts": 1, "dur": -1}]
    )
    result = cli("ingest", trace, "-o", tmp_path / "run")
    assert result.exit_code == 0
    assert "1 events, 0 counters, 1 quarantined (1 negative_duration), 1 rank(s)" in result.output


def test_existing_output_needs_force(cli, tmp_path):
    trace = _trace(tmp_path / "t.json", [{"ph": "X", "name": "a", "ts": 1, "dur": 1}])
    assert cli("ingest", trace, "-o", tmp_path / "run").exit_code == 0
    again = cli("ingest", trace, "-o", tmp_path / "run")
    assert again.exit_code == 2 and "output exists" in again.output
    assert cli("ingest", trace, "-o", tmp_path / "run", "--force").exit_code == 0


@pytest.mark.parametrize(
    "content, message",
    [
        (b'{"traceEvents": [', "invalid JSON"),
        (b'{"displayTimeUnit": "ms"}', "no traceEvents array"),
        (b'{"traceEvents": []}', "no events"),
        (  # mtime=0: the same bytes in every process (xdist's workers must collect the same ids)
            gzip.compress(b'{"traceEvents": [{"ph": "X", "name": "a", "ts": 1, "dur": 1}]}', mtime=0)[:30],
            "truncated or corrupt",
        ),
        (b'{"traceEvents": [{"ph": "X", "name": "\xc3\x28", "ts": 1, "dur": 1}]}', "UTF-8"),
        (
            b'{"distributedInfo": {"rank": "three"}, "traceEvents": [{"ph": "X", "name": "a", "ts": 1, "dur": 1}]}',
            "distributedInfo.rank must be an integer",
        ),
    ],
)
def test_bad_input_is_one_line_and_exit_2(cli, tmp_path, content, message):
    path = tmp_path / ("t.json.gz" if content[:2] == b"\x1f\x8b" else "t.json")
    path.write_bytes(content)
    result = cli("ingest", path, "-o", tmp_path / "run")
    assert result.exit_code == 2
    lines = result.output.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: ") and message in lines[0], result.output
    assert not (tmp_path / "run").exists()
    assert [p.name for p in tmp_path.iterdir()] == [path.name]  # no half run, no temporaries


def test_usage_errors(cli, tmp_path):
    assert cli("ingest", tmp_path / "missing.json", "-o", tmp_path / "run").exit_code == 2
    trace = _trace(tmp_path / "t.json", [{"ph": "X", "name": "a", "ts": 1, "dur": 1}])
    result = cli("ingest", trace, "-o", tmp_path / "run", "--rank", "-1")
    assert result.exit_code == 2 and "--rank: rank -1 is out of range" in result.output
    result = cli("ingest", trace, trace, "-o", tmp_path / "run")
    assert result.exit_code == 2 and "input given twice" in result.output


def test_forced_format_on_the_wrong_file(cli, tmp_path):
    trace = _trace(tmp_path / "t.json", [{"ph": "X", "name": "a", "ts": 1, "dur": 1}])
    result = cli("ingest", trace, "-o", tmp_path / "run", "--input-format", "neuron-system-profile")
    assert result.exit_code == 2 and "not a Neuron system profile" in result.output


def test_the_old_format_option_still_forces_the_input_format_with_a_warning(cli, tmp_path):
    trace = _trace(tmp_path / "t.json", [{"ph": "X", "name": "a", "ts": 1, "dur": 1}])
    result = cli("ingest", trace, "-o", tmp_path / "run", "--format", "neuron-system-profile")
    assert result.exit_code == 2 and "not a Neuron system profile" in result.output
    assert "--format is deprecated for ingest: use --input-format" in result.output


def test_progress_reports_every_byte_of_the_inputs(tmp_path):
    from trnprof.collectors.ingest import ingest

    seen = []
    ingest([TRACE_FILTER], tmp_path / "run", progress=seen.append)
    assert sum(seen) == sum(p.stat().st_size for p in TRACE_FILTER.iterdir())


def test_non_utf8_args_name_the_file(cli, tmp_path):
    path = tmp_path / "t.json"
    path.write_bytes(b'{"traceEvents": [{"ph": "X", "name": "a", "ts": 1, "dur": 1, "args": {"k": "\xff\xfe"}}]}')
    result = cli("ingest", path, "-o", tmp_path / "run")
    assert result.exit_code == 2 and result.output.startswith(f"error: {path}: ") and "UTF-8" in result.output
