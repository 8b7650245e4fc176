"""What ingest accepts stays analysable (issue 28): an event whose args hold a huge string is
kept with its args replaced by their size, counted and reported, and the run opens within the
default memory budget."""

import gzip
import json

import pyarrow.parquet as pq

from trnprof import open_run
from trnprof.collectors.common.limits import MAX_ARGS_BYTES, MAX_QUARANTINED_BYTES

HUGE = 50 << 20  # 50 MB of args in one event (gzip makes it ~50 KB)


def _trace(path, huge_name: bool = False):
    events = [
        {"ph": "X", "name": "ProfilerStep#1", "cat": "user_annotation", "pid": 1, "tid": 1, "ts": 1000.0, "dur": 500.0},
        {
            "ph": "X",
            "name": "aten::mm",
            "cat": "cpu_op",
            "pid": 1,
            "tid": 1,
            "ts": 1100.0,
            "dur": 100.0,
            "args": {"note": "x" * HUGE},
        },
        {
            "ph": "X",
            "name": "aten::add",
            "cat": "cpu_op",
            "pid": 1,
            "tid": 1,
            "ts": 1300.0,
            "dur": 50.0,
            "args": {"note": "small"},
        },
    ]
    if huge_name:
        events.append({"ph": "X", "name": "n" * HUGE, "cat": "cpu_op", "pid": 1, "tid": 1, "ts": 1400.0, "dur": 5.0})
    with gzip.open(path, "wt", encoding="utf-8") as handle:
        json.dump({"distributedInfo": {"rank": 0}, "traceEvents": events}, handle)
    return path


def test_a_huge_args_string_is_truncated_counted_and_the_run_opens(tmp_path, cli, monkeypatch):
    trace = _trace(tmp_path / "t.json.gz", huge_name=True)
    assert trace.stat().st_size < 1 << 20  # small on disk, huge decoded
    result = cli("ingest", trace, "-o", tmp_path / "run")
    assert result.exit_code == 0 and "1 oversized args truncated" in result.stdout
    assert "1 name_too_long" in result.stdout
    events = pq.read_table(tmp_path / "run" / "events").to_pandas()
    assert len(events) == 3  # the event is kept, its times intact
    mm = events[events["name"] == "aten::mm"].iloc[0]
    assert json.loads(mm["args"])["args"] == {"trnprof_truncated_bytes": len(json.dumps({"note": "x" * HUGE}))}
    assert mm["dur"] == 100_000
    assert max(len(a or "") for a in events["args"]) <= MAX_ARGS_BYTES
    quarantined = pq.read_table(tmp_path / "run" / "ingest" / "quarantine.parquet")["event"].to_pylist()
    assert len(quarantined) == 1 and len(quarantined[0].encode()) <= MAX_QUARANTINED_BYTES + 100
    monkeypatch.setenv("TRNPROF_MEMORY_LIMIT", "256MB")
    assert open_run(tmp_path / "run").manifest["ingest"]["truncated_args"] == 1
    for command in (["info"], ["analyze"], ["query", "SELECT name, args FROM events"]):
        outcome = cli(command[0], tmp_path / "run", *command[1:])
        assert outcome.exit_code == 0, outcome.output[-500:]
