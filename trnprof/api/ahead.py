"""A trace's ingest started ahead: `trnprof analyze TRACE` forks a process that ingests the trace
into the user's cache while this process loads the analysis's libraries (half a second of
imports on one core, the other idle), and the analysis then opens the run that process made.

The process first takes the trace file's fingerprint (its sha256, which keys the cache) and
sends it back, so the command does not read the file a second time, then decides as the command
would (`collectors.ingest.traces.ingest_ahead`): it ingests only where the command would ingest
into the cache, and loads nothing more where the run is kept already; it prints nothing of its
own. The command waits for it where it needs the run (`Ahead.finish`), then goes its own way:
it opens the run the process made or, where the process failed, declined or was stopped,
ingests the trace itself and meets any error the trace holds exactly as without the process. So
the process changes when the work is done, never what is done or said.

Started only by the process's own entry point (`trnprof ...`, not a `main([...])` call inside
another program), on Linux, with no other thread running (a fork copies one thread), for a path
that exists and is no run, without --run-dir (a named folder is the user's), and unless
TRNPROF_INGEST_AHEAD=0 (docs/ingest.md). This module imports nothing heavy: it runs before the
command's libraries load.
"""

from __future__ import annotations

import atexit
import contextlib
import ctypes
import json
import os
import signal
import sys
import threading
from pathlib import Path

from .. import tracecache
from ..runfiles import MANIFEST_FILE

AHEAD_ENV = "TRNPROF_INGEST_AHEAD"
INGESTED = 0  # the child's exit status when it made the run; anything else: it did not
_PR_SET_PDEATHSIG = 1  # linux/prctl.h
_STOP_WAIT_S = 10.0  # a stopped child removes its half-written run folder within this
# Inputs of fewer bytes on disk are ingested by the command itself: a second process loading the
# ingest's libraries beside the command's costs more than the ingest of one piece (~4 MB of JSON,
# collectors/kineto/stream.py) that it would overlap (bench/bench_hta.py: 4.9k entries, 0.1 MB).
MIN_BYTES = 4 << 20
_SCAN_LIMIT = 10_000  # a folder's entries looked at for its size, at most

_MESSAGE_LIMIT = 64 << 10  # the fingerprint sent back: a path, a size and a digest


class Ahead:
    """The process started for one trace: what the command asks of it (`run_of_traces`)."""

    def __init__(self, path: Path, pid: int, reader: int):
        self.path, self.pid, self._reader = path, pid, reader

    def fingerprint(self, file: Path) -> dict | None:
        """The trace file's fingerprint (`tracecache.file_fingerprint`) the process took before
        anything else, so the command need not read the file again; None for another file, a
        folder input, or a process that ended before (the command then reads it itself)."""
        if self._reader < 0 or Path(file) != self.path:
            return None
        with os.fdopen(self._reader, "rb") as pipe:
            self._reader = -1
            sent = pipe.read(_MESSAGE_LIMIT)
        try:
            taken = json.loads(sent)
            same = taken["path"] == str(file) and taken["bytes"] == os.stat(file).st_size
            return taken if same and isinstance(taken["sha256"], str) else None
        except (ValueError, TypeError, KeyError, OSError):
            return None

    def finish(self) -> bool:
        """Wait for the process: True when it ingested the trace (the run is in the cache), False
        when it declined, failed or was stopped."""
        if self._reader >= 0:
            os.close(self._reader)
            self._reader = -1
        try:
            status = os.waitpid(self.pid, 0)[1]
        except ChildProcessError:
            return False
        return os.waitstatus_to_exitcode(status) == INGESTED


_started: dict[Path, Ahead] = {}


def start(path: str, run_dir: str | None) -> None:
    """Fork the process that ingests the trace `path` into the cache, where that may serve."""
    if not _may_start(path, run_dir):
        return
    reader, writer = os.pipe()
    try:
        pid = os.fork()
    except OSError:  # no process to spare: the command ingests the trace itself
        os.close(reader)
        os.close(writer)
        return
    if pid == 0:
        os.close(reader)
        _child(path, writer)  # never returns
    os.close(writer)
    _started[Path(path)] = Ahead(Path(path), pid, reader)
    atexit.register(_stop, pid)


def started(path: str | Path) -> Ahead | None:
    """The process started for `path` (handed over once), or None."""
    return _started.pop(Path(path), None)


def _may_start(path: str, run_dir: str | None) -> bool:
    if run_dir is not None or os.environ.get(AHEAD_ENV, "").strip() == "0":
        return False
    if not sys.platform.startswith("linux") or threading.active_count() > 1:
        return False
    target = Path(path)
    if target.is_file():
        return target.stat().st_size >= MIN_BYTES
    return target.is_dir() and not (target / MANIFEST_FILE).is_file() and _holds_bytes(target, MIN_BYTES)


def _holds_bytes(folder: Path, least: int) -> bool:
    """True when the files under `folder` (links not followed) hold at least `least` bytes,
    within the first _SCAN_LIMIT entries."""
    total, seen = 0, 0
    for root, _, files in os.walk(folder):
        for name in files:
            seen += 1
            with contextlib.suppress(OSError):
                total += os.lstat(os.path.join(root, name)).st_size
            if total >= least:
                return True
            if seen >= _SCAN_LIMIT:
                return False
    return False


def _child(path: str, writer: int) -> None:
    """In the forked process: quiet, stopped with its parent; the trace file's fingerprint sent
    back first, then the trace ingested unless its run is kept; exits."""
    code = 1
    try:
        quiet = os.open(os.devnull, os.O_RDWR)
        for fd in (0, 1):  # standard error stays: the run writer's warning about folders not its own
            os.dup2(quiet, fd)
        signal.signal(signal.SIGTERM, _interrupted)  # the run writer removes its folder on the way out
        with contextlib.suppress(AttributeError, OSError):
            ctypes.CDLL(None, use_errno=True).prctl(_PR_SET_PDEATHSIG, signal.SIGTERM)
        taken = tracecache.file_fingerprint(path) if Path(path).is_file() else None
        os.write(writer, json.dumps(taken).encode() if taken else b"")
        os.close(writer)
        if taken and (tracecache.run_folder(tracecache.identity([taken])) / MANIFEST_FILE).is_file():
            code = 2  # kept: the command opens (or judges) it; the ingest's libraries need not load
        else:
            from ..collectors.ingest.traces import ingest_ahead

            code = INGESTED if ingest_ahead(path, taken) else 2
    except BaseException:  # noqa: BLE001 - the command ingests again and reports what failed
        code = 1
    finally:
        os._exit(code)


def _interrupted(signum, frame) -> None:
    raise KeyboardInterrupt


def _stop(pid: int) -> None:
    """At the command's exit: a child still running (the command failed before it needed the
    run) is stopped and waited for, so it leaves no folder half-written."""
    with contextlib.suppress(ProcessLookupError, ChildProcessError):
        if os.waitpid(pid, os.WNOHANG)[0] == 0:
            os.kill(pid, signal.SIGTERM)
            _wait_at_most(pid, _STOP_WAIT_S)


def _wait_at_most(pid: int, seconds: float) -> None:
    import time

    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if os.waitpid(pid, os.WNOHANG)[0] != 0:
            return
        time.sleep(0.01)
