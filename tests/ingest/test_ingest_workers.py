"""A trace of several pieces is decoded and staged in worker processes (collectors/kineto/
workers.py): the run is the one a single process writes, an error in a worker is the error a
single process gives, and a one-piece trace starts no process."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import duckdb
import pytest

from tests.conftest import KINETO
from trnprof.collectors.ingest import ingest
from trnprof.collectors.kineto import stream, workers
from trnprof.collectors.synthetic import synthetic_run
from trnprof.errors import TrnprofError
from trnprof.export.chrome import export_chrome

DDP_TRACE = KINETO / "ns_resolution_trace" / "rank-0.Apr_03_18_51_38.1102.pt.trace.json.gz"
EPOCH_US = 1_712_195_495_501_688  # a Kineto clock: a double holds this many microseconds to 1/4 us only


def _tables(run: Path) -> dict[str, list]:
    """Every table of the run, its rows sorted (a partitioned table read whole)."""
    names = {str(f.relative_to(run)).split("/rank=")[0] for f in run.rglob("*.parquet")}
    tables = {}
    for name in sorted(names):
        where = run / name
        pattern = f"{where}/*/*.parquet" if where.is_dir() else str(where)
        tables[name] = duckdb.sql(f"SELECT * FROM read_parquet('{pattern}') ORDER BY ALL").fetchall()
    return tables


def _runs(trace: Path, tmp_path: Path, monkeypatch, piece: int) -> dict[str, tuple]:
    """Summary counts and tables of `trace`'s run from two workers (pieces of about `piece`
    bytes) and from one process."""
    monkeypatch.setattr(stream, "PIECE_BLOCK", piece)
    monkeypatch.setattr(stream, "_WINDOW", piece)
    pooled = []
    in_workers = workers._in_workers
    monkeypatch.setattr(workers, "_in_workers", lambda *args: pooled.append(1) or in_workers(*args))
    runs = {}
    for count in ("2", "0"):
        monkeypatch.setenv(workers.WORKERS_ENV, count)
        out = tmp_path / f"run-{count}"
        summary = ingest([trace], out)
        runs[count] = (summary["events"], summary["counters"], summary["quarantined"], _tables(out))
    assert pooled == [1]  # the two-worker run used the pool, the other did not
    return runs


def _write(path: Path, events: list[dict]) -> Path:
    path.write_text(json.dumps({"schemaVersion": 1, "traceEvents": events}))
    return path


def _op(i: int, ts) -> dict:
    return {
        "ph": "X",
        "cat": "cpu_op",
        "name": f"aten::op{i % 7}",
        "pid": 1,
        "tid": 2,
        "ts": ts,
        "dur": 1.5,
        "args": {"i": i},
    }


def test_a_real_trace_in_many_pieces_makes_the_same_run(tmp_path, monkeypatch):
    """The V100 DDP trace (68,692 entries; epoch microseconds with decimals: exact times)."""
    monkeypatch.setattr(stream, "PIECE_BLOCK", 256 << 10)
    assert len(list(stream.read_pieces(DDP_TRACE))) > 20
    runs = _runs(DDP_TRACE, tmp_path, monkeypatch, 256 << 10)
    assert runs["2"] == runs["0"] and runs["0"][0] > 40_000


def test_times_that_turn_exact_midway_are_exact_in_every_piece(tmp_path, monkeypatch):
    """Pieces sent to the workers before one of them found epoch-scale float times decode them
    again exactly, as one process does: every nanosecond kept."""
    entries = [json.dumps(_op(i, 1000.25 + i)) for i in range(300)]
    entries += [json.dumps(_op(i, 0)).replace('"ts": 0', f'"ts": {EPOCH_US + i}.123') for i in range(300, 600)]
    path = tmp_path / "t.json"
    path.write_text('{"traceEvents": [' + ",\n".join(entries) + "]}")
    runs = _runs(path, tmp_path, monkeypatch, 4 << 10)
    assert runs["2"] == runs["0"]
    got = duckdb.sql(f"SELECT ts FROM read_parquet('{tmp_path}/run-2/events/*/*.parquet') ORDER BY ts").fetchall()
    assert len(got) == 600 and got[-1][0] - got[0][0] == (EPOCH_US + 599) * 1000 + 123 - 1_000_250


def test_an_export_in_many_pieces_makes_the_same_run(tmp_path, monkeypatch):
    """A trnprof export's chunks are mapped by the parent in file order: each reads the thread
    names (lanes) that earlier chunks' metadata gave."""
    trace = tmp_path / "export.json"
    export_chrome(synthetic_run(tmp_path / "run", ranks=3, steps=2, ops_per_step=30, seed=5), trace)
    runs = _runs(trace, tmp_path, monkeypatch, 8 << 10)
    assert runs["2"] == runs["0"] and runs["0"][0] > 200
    lanes = duckdb.sql(f"SELECT DISTINCT lane FROM read_parquet('{tmp_path}/run-2/events/*/*.parquet')").fetchall()
    assert len(lanes) > 3


def test_entries_quarantined_in_many_pieces_are_the_same(tmp_path, monkeypatch):
    """Rows mapped in the workers: events, counters, flows, meta and quarantine as one process maps them."""
    entries = [_op(i, 1000 + 10 * i) for i in range(400)]
    entries += [dict(_op(i, 5000 + i), dur=-1) for i in range(0, 400, 37)]  # negative durations
    entries += [{"ph": "C", "name": "mem", "pid": 1, "ts": 10 * i, "args": {"v": i}} for i in range(0, 400, 9)]
    entries += [{"ph": "s", "cat": "ac2g", "id": i, "pid": 1, "tid": 2, "ts": 10 * i} for i in range(0, 400, 11)]
    entries += [{"ph": "C", "name": "mem", "pid": 1, "ts": 10 * i, "args": {"v": "high"}} for i in range(0, 400, 50)]
    entries += [{"ph": "M", "name": "thread_name", "pid": 1, "tid": 2, "args": {"name": "main"}}, 7, "x"]
    runs = _runs(_write(tmp_path / "t.json", entries), tmp_path, monkeypatch, 4 << 10)
    assert runs["2"] == runs["0"]
    assert runs["0"][2] == len(range(0, 400, 37)) + len(range(0, 400, 50)) + 2 and runs["0"][1] > 0


@pytest.mark.parametrize(
    "good, bad",
    [
        (b'{"i": 350}', b'{"i": "\xff\xfe"}'),  # args (raw JSON): staging finds it
        (
            b'"aten::op0", "pid": 1, "tid": 2, "ts": 1350',
            b'"\xc3(", "pid": 1, "tid": 2, "ts": 1350',
        ),  # a name: decoding does
    ],
    ids=["args", "name"],
)
def test_an_error_in_a_worker_is_the_one_process_error(tmp_path, monkeypatch, good, bad):
    """Text that is not UTF-8 deep in the trace: one error line naming the file, the one a single
    process gives, and no run left behind."""
    text = json.dumps({"traceEvents": [_op(i, 1000 + i) for i in range(400)]}).encode()
    assert text.count(good) == 1
    path = tmp_path / "t.json"
    path.write_bytes(text.replace(good, bad))
    monkeypatch.setattr(stream, "PIECE_BLOCK", 4 << 10)
    monkeypatch.setattr(stream, "_WINDOW", 4 << 10)
    messages = []
    for count in ("1", "0"):
        monkeypatch.setenv(workers.WORKERS_ENV, count)
        with pytest.raises(TrnprofError) as caught:
            ingest([path], tmp_path / f"run-{count}")
        messages.append(str(caught.value))
        assert not (tmp_path / f"run-{count}").exists()  # no half-written run
    assert messages[0] == messages[1] and "UTF-8" in messages[0] and messages[0].startswith(str(path))


# an ingest whose workers take `pause` seconds a piece: still running when the test stops it
SLOW_INGEST = """
import sys, time
from trnprof.collectors.kineto import stream, workers
stream.PIECE_BLOCK = stream._WINDOW = 4096
staged = workers._stage_piece
def slow(*args):
    time.sleep(float(sys.argv[3]))
    return staged(*args)
workers._stage_piece = slow
from trnprof.cli import main
main(["ingest", sys.argv[1], "-o", sys.argv[2]])
"""


def _slow_ingest(tmp_path: Path, pause: float) -> tuple[subprocess.Popen, list[int]]:
    """The ingest process, once both its workers run."""
    trace = _write(tmp_path / "t.json", [_op(i, 1000 + i) for i in range(400)])
    command = [sys.executable, "-c", SLOW_INGEST, str(trace), str(tmp_path / "run"), str(pause)]
    env = {**os.environ, workers.WORKERS_ENV: "2"}
    process = subprocess.Popen(command, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, start_new_session=True)
    deadline = time.monotonic() + 30
    while len(found := _children(process.pid)) < 2 and time.monotonic() < deadline:
        time.sleep(0.05)
    assert len(found) == 2, "the workers did not start"
    return process, found


def _children(pid: int) -> list[int]:
    children = []
    for entry in Path("/proc").iterdir():
        try:
            stat = (entry / "stat").read_text()
        except (OSError, ValueError):
            continue
        if entry.name.isdigit() and int(stat.rsplit(")", 1)[1].split()[1]) == pid:
            children.append(int(entry.name))
    return children


def _gone(pids: list[int]) -> bool:
    """Whether the processes `pids` end within 10 s (those left are killed: no test leaves any)."""
    deadline = time.monotonic() + 10
    while any(Path(f"/proc/{pid}").exists() for pid in pids) and time.monotonic() < deadline:
        time.sleep(0.05)
    left = [pid for pid in pids if Path(f"/proc/{pid}").exists()]
    for pid in left:
        os.kill(pid, signal.SIGKILL)
    return not left


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="workers run on Linux only (workers.py)")
def test_killed_ingest_takes_its_workers_along(tmp_path):
    """A killed ingest leaves no worker waiting on its queue (holding the caller's pipes open)."""
    process, found = _slow_ingest(tmp_path, 60)
    process.kill()
    try:
        process.communicate(timeout=20)  # returns once no process holds the pipes
    finally:
        assert _gone(found)


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="workers run on Linux only (workers.py)")
def test_ctrl_c_stops_ingest_and_workers_with_one_line(tmp_path):
    process, found = _slow_ingest(tmp_path, 0.5)
    os.killpg(process.pid, signal.SIGINT)  # what the terminal sends: the whole process group
    _, err = process.communicate(timeout=30)
    assert process.returncode == 130 and err.decode().strip() == "interrupted"
    assert _gone(found) and not (tmp_path / "run").exists()


def test_a_one_piece_trace_starts_no_process(tmp_path, monkeypatch):
    def no_pool(*args, **kwargs):
        raise AssertionError("a process pool for one piece")

    monkeypatch.setattr(workers, "_in_workers", no_pool)
    monkeypatch.setenv(workers.WORKERS_ENV, "4")
    summary = ingest([_write(tmp_path / "t.json", [_op(i, 1000 + i) for i in range(50)])], tmp_path / "run")
    assert summary["events"] == 50


@pytest.mark.parametrize("text", ["-1", "two", "65", "1e3", "9" * 40, "\u00b2", "\u0663", "1 2"])
def test_a_bad_worker_count_is_one_clear_error(monkeypatch, text):
    monkeypatch.setenv(workers.WORKERS_ENV, text)
    with pytest.raises(TrnprofError, match=workers.WORKERS_ENV):
        workers.worker_count()


def test_the_worker_count_defaults_to_the_cores(monkeypatch):
    monkeypatch.setenv(workers.WORKERS_ENV, "3")
    assert workers.worker_count() == 3
    monkeypatch.setenv(workers.WORKERS_ENV, "0")
    assert workers.worker_count() == 0
    monkeypatch.delenv(workers.WORKERS_ENV)
    monkeypatch.setattr(workers.os, "sched_getaffinity", lambda pid: {0, 1, 2})
    assert workers.worker_count() == 3
    monkeypatch.setattr(workers.os, "sched_getaffinity", lambda pid: set(range(64)))
    assert workers.worker_count() == workers.MAX_WORKERS
    monkeypatch.setattr(workers.os, "sched_getaffinity", lambda pid: {0})
    assert workers.worker_count() == 0
