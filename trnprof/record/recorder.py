"""`record(command, out)`: capture a command, then ingest everything it captured into one run
(atomically, through the ingest pipeline) and remove the capture folder trnprof made."""

from __future__ import annotations

import os
import shutil
import signal
import uuid
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from ..errors import TrnprofError
from . import neuron
from .capture import Capture, run_captured
from .preflight import check_capture, check_run_output
from .runtime import Settings


@dataclass
class Recorded:
    capture: Capture
    summary: dict | None  # the ingest's, None when nothing was captured
    error: str | None  # why no run was written
    kept: Path | None  # the capture folder, when it stays


def check_output(out: Path, force: bool) -> None:
    """Refuse before the job runs, not after: an existing path needs --force and must be a run."""
    check_run_output(out, force)


def new_capture_folder(out: Path, given: Path | None) -> Path:
    if given is not None:
        check_capture(given, out)
        given.mkdir(parents=True, exist_ok=True)
        return given
    folder = out.parent / f".{out.name}.capture-{os.getpid()}-{uuid.uuid4().hex[:8]}"
    folder.mkdir(parents=True)
    return folder


def record(
    command: list[str],
    out: str | Path,
    settings: Settings,
    *,
    force: bool = False,
    capture: str | Path | None = None,
    keep: bool = False,
    neuron_mode: str = "auto",
    interval: float = 0.5,
    note=lambda text: None,
) -> Recorded:
    out = Path(out)
    given = Path(capture) if capture is not None else None
    check_output(out, force)
    folder = new_capture_folder(out, given)
    settings.capture = str(folder.resolve())
    try:
        captured = run_captured(
            command, settings, neuron_mode=neuron_mode, interval=interval, max_bytes=settings.max_bytes, note=note
        )
    except BaseException:
        if given is None:
            shutil.rmtree(folder, ignore_errors=True)
        raise
    try:
        with _stops_interrupt():
            summary, error, dropped = _ingest(captured, out, force)
    except KeyboardInterrupt:
        note(
            f"stopped while ingesting: no run written; the capture is kept in {folder} "
            f"(`trnprof ingest {folder} -o {out}` ingests it)"
        )
        raise
    captured.dropped = dropped
    inspect = folder / neuron.INSPECT_FOLDER
    worth_keeping = (
        (error is not None and captured.inputs)
        or dropped
        or captured.apart
        or captured.unfinished
        or (inspect.is_dir() and any(inspect.iterdir()))
    )
    keep = keep or given is not None or bool(worth_keeping)
    if not keep:
        shutil.rmtree(folder)  # ours, and nothing in it the run lacks
    return Recorded(capture=captured, summary=summary, error=error, kept=folder if keep else None)


@contextmanager
def _stops_interrupt():
    """SIGTERM and SIGHUP stop the ingest as Ctrl-C does (with what was kept said), not silently."""

    def interrupt(signum, frame):
        raise KeyboardInterrupt

    previous = {sig: signal.signal(sig, interrupt) for sig in (signal.SIGTERM, signal.SIGHUP)}
    try:
        yield
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)


def _ingest(captured: Capture, out: Path, force: bool) -> tuple[dict | None, str | None, list[Path]]:
    """(summary, why no run, inputs left out). An input the ingest refuses (a trace cut short by a
    kill while it was written) is left out and the rest ingested: host metrics and the other ranks
    are kept."""
    from trnprof.collectors.ingest import ingest
    from trnprof.collectors.ingest.detect import detect

    remaining, dropped = list(captured.inputs), []
    if not remaining:
        return None, "nothing was captured", []
    while True:
        try:
            return ingest([], out, force=force, inputs=[(p, detect(p)) for p in remaining]), None, dropped
        except TrnprofError as exc:
            culprit = _named_in(str(exc), remaining)
            if culprit is None or len(remaining) == 1:
                return None, str(exc), dropped
            remaining.remove(culprit)
            dropped.append(culprit)
            captured.refused[culprit] = str(exc)


def _named_in(message: str, paths: list[Path]) -> Path | None:
    """The input an ingest error is about (its messages start with the file)."""
    return next((p for p in paths if str(p) in message), None) or next((p for p in paths if p.name in message), None)
