"""`trnprof analyze TRACE` starts a big trace's ingest in a forked process while the analysis's
libraries load (trnprof/api/ahead.py): the command says and finds what it would without that
process, the process makes the run the command then opens, a bad trace gives the command's one
error line, and a command that fails or is interrupted leaves nothing half-written."""

from __future__ import annotations

import gzip
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.conftest import KINETO
from trnprof.api import ahead
from trnprof.exitcodes import Exit

SMALL = KINETO / "trace_filter" / "sampled_rank-0.json.gz"  # 0.1 MB on disk: ingested by the command
DDP_TRACE = KINETO / "ns_resolution_trace" / "rank-0.Apr_03_18_51_38.1102.pt.trace.json.gz"

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="the fork ahead runs on Linux only")


@pytest.fixture(scope="module")
def big_trace(tmp_path_factory) -> Path:
    """The small real trace, padded with whitespace (valid JSON) past ahead.MIN_BYTES."""
    path = tmp_path_factory.mktemp("ahead") / "padded.json"
    path.write_bytes(gzip.decompress(SMALL.read_bytes()) + b" " * ahead.MIN_BYTES)
    return path


def _trnprof(*args, cache: Path, ahead_on: bool = True, **kwargs) -> subprocess.Popen | subprocess.CompletedProcess:
    env = {**os.environ, "TRNPROF_CACHE_DIR": str(cache), ahead.AHEAD_ENV: "1" if ahead_on else "0"}
    command = [sys.executable, "-m", "trnprof", *map(str, args)]
    if kwargs.pop("background", False):
        return subprocess.Popen(command, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, **kwargs)
    return subprocess.run(command, env=env, capture_output=True, text=True, timeout=300)


def _verdict(stdout: str) -> dict:
    document = json.loads(stdout)
    return {key: document[key] for key in ("findings", "not_evaluated", "errors", "steps", "mean_step_s")}


def _left_in(cache: Path) -> list[str]:
    """Every name in the cache's runs folder, hidden ones (a writer's temporary folders) too."""
    runs = cache / "runs"
    return sorted(p.name for p in runs.iterdir()) if runs.is_dir() else []


def test_the_process_ahead_makes_the_run_the_command_opens(big_trace, tmp_path):
    script = """
import sys
from pathlib import Path
from trnprof import tracecache
from trnprof.api import ahead
trace = Path(sys.argv[1])
for _ in range(2):
    ahead.start(str(trace), None)
    started = ahead.started(trace)
    print(started.fingerprint(trace) == tracecache.file_fingerprint(trace), started.finish())
"""
    env = {**os.environ, "TRNPROF_CACHE_DIR": str(tmp_path / "cache")}
    done = subprocess.run([sys.executable, "-c", script, str(big_trace)], env=env, capture_output=True, text=True)
    # the fingerprint sent back both times; the second found the run kept and declined
    assert done.stdout.split() == ["True", "True", "True", "False"], done.stderr
    (run,) = _left_in(tmp_path / "cache")
    assert (tmp_path / "cache" / "runs" / run / "trnprof.json").is_file()


def test_a_trace_ingested_ahead_is_analyzed_and_reported_as_without(big_trace, tmp_path):
    with_ahead = _trnprof("analyze", big_trace, "--format", "json", cache=tmp_path / "a")
    without = _trnprof("analyze", big_trace, "--format", "json", cache=tmp_path / "b", ahead_on=False)
    assert with_ahead.returncode == without.returncode == 0, with_ahead.stderr + without.stderr
    assert _verdict(with_ahead.stdout) == _verdict(without.stdout) and _verdict(without.stdout)["findings"]
    assert with_ahead.stderr.replace(str(tmp_path / "a"), "") == without.stderr.replace(str(tmp_path / "b"), "")
    assert [line.split()[0] for line in with_ahead.stderr.splitlines()] == ["ingested"]
    assert _left_in(tmp_path / "a") == _left_in(tmp_path / "b") and len(_left_in(tmp_path / "a")) == 1
    again = _trnprof("analyze", big_trace, "--format", "json", cache=tmp_path / "a")
    assert again.stderr == "" and _verdict(again.stdout) == _verdict(with_ahead.stdout)


def test_a_bad_big_trace_gives_the_commands_one_error_line(big_trace, tmp_path):
    cut = tmp_path / "cut.json"
    text = big_trace.read_bytes().rstrip()
    cut.write_bytes(text[: len(text) // 2] + b" " * ahead.MIN_BYTES)  # the events end mid-entry
    with_ahead = _trnprof("analyze", cut, cache=tmp_path / "a")
    without = _trnprof("analyze", cut, cache=tmp_path / "b", ahead_on=False)
    assert with_ahead.returncode == without.returncode == Exit.USAGE
    assert with_ahead.stderr == without.stderr and len(with_ahead.stderr.splitlines()) == 1
    assert _left_in(tmp_path / "a") == []  # nothing half-written, no run


def test_a_command_failing_before_it_needs_the_run_leaves_nothing_half_written(big_trace, tmp_path):
    done = _trnprof("analyze", big_trace, "--select", "NO_SUCH_RULE", cache=tmp_path / "a")
    assert done.returncode == Exit.USAGE and len(done.stderr.splitlines()) == 1
    assert all(not name.startswith(".") for name in _left_in(tmp_path / "a"))  # a whole run at most


def test_an_interrupt_stops_the_process_ahead_too(tmp_path):
    trace = tmp_path / "ddp.json"  # 15 MB of JSON: the process ahead is still ingesting when interrupted
    trace.write_bytes(gzip.decompress(DDP_TRACE.read_bytes()))
    command = _trnprof("analyze", trace, cache=tmp_path / "a", background=True, start_new_session=True)
    time.sleep(1.0)
    os.killpg(command.pid, signal.SIGINT)  # as Ctrl-C does: every process of the command's group
    _, stderr = command.communicate(timeout=60)
    assert command.returncode in (Exit.INTERRUPTED, 0), stderr  # 0: it had finished before the signal
    assert all(not name.startswith(".") for name in _left_in(tmp_path / "a"))
    with pytest.raises(ProcessLookupError):  # no process of the command is left running
        for _ in range(100):
            os.killpg(command.pid, 0)
            time.sleep(0.05)


@pytest.mark.parametrize(
    "case",
    ["a small trace", "a run folder", "a run folder named", "switched off", "a missing path", "another thread"],
)
def test_no_process_is_started_where_it_cannot_serve(case, big_trace, tmp_path, monkeypatch):
    monkeypatch.delenv(ahead.AHEAD_ENV, raising=False)
    path, run_dir = big_trace, None
    if case == "a small trace":
        path = SMALL
    elif case == "a run folder":
        path = tmp_path / "run"
        path.mkdir()
        (path / "trnprof.json").write_text("{}")
        (path / "events.parquet").write_bytes(b"\0" * ahead.MIN_BYTES)
    elif case == "a run folder named":
        run_dir = str(tmp_path / "kept")
    elif case == "switched off":
        monkeypatch.setenv(ahead.AHEAD_ENV, "0")
    elif case == "a missing path":
        path = tmp_path / "missing.json"
    forks = []
    monkeypatch.setattr(ahead.os, "fork", lambda: forks.append(1) or 12345)
    monkeypatch.setattr(ahead.atexit, "register", lambda *args: None)
    monkeypatch.setattr(ahead.threading, "active_count", lambda: 2 if case == "another thread" else 1)
    ahead.start(str(path), run_dir)
    assert forks == []


def test_a_big_trace_or_a_folder_of_traces_starts_one(big_trace, tmp_path, monkeypatch):
    folder = tmp_path / "traces"
    folder.mkdir()
    for rank in range(2):
        (folder / f"rank-{rank}.json").write_bytes(big_trace.read_bytes()[: ahead.MIN_BYTES // 2 + 1])
    forks = []
    monkeypatch.setattr(ahead.os, "fork", lambda: forks.append(1) or 12345)
    monkeypatch.setattr(ahead.atexit, "register", lambda *args: None)
    monkeypatch.setattr(ahead.threading, "active_count", lambda: 1)
    monkeypatch.delenv(ahead.AHEAD_ENV, raising=False)
    for path in (big_trace, folder):
        ahead.start(str(path), None)
    assert forks == [1, 1]
    for path in (big_trace, folder):
        os.close(ahead.started(path)._reader)  # no process behind it: the pipe is all there is
