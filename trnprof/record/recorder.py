"""`record(command, out)`: capture a command, then ingest everything it captured into one run
(atomically, through the ingest pipeline) and remove the capture folder trnprof made."""

from __future__ import annotations

import gzip
import os
import shutil
import uuid
import zlib
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
    summary: dict | None       # the ingest's, None when nothing was captured
    error: str | None          # why no run was written
    kept: Path | None          # the capture folder, when it stays


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


def record(command: list[str], out: str | Path, settings: Settings, *, force: bool = False,
           capture: str | Path | None = None, keep: bool = False, neuron_mode: str = "auto",
           interval: float = 0.5, note=lambda text: None) -> Recorded:
    out = Path(out)
    given = Path(capture) if capture is not None else None
    check_output(out, force)
    folder = new_capture_folder(out, given)
    settings.capture = str(folder.resolve())
    try:
        captured = run_captured(command, settings, neuron_mode=neuron_mode, interval=interval,
                                max_bytes=settings.max_bytes, note=note)
    except BaseException:
        if given is None:
            shutil.rmtree(folder, ignore_errors=True)
        raise
    summary, error, dropped = _ingest(captured, out, force)
    captured.dropped = dropped
    inspect = folder / neuron.INSPECT_FOLDER
    worth_keeping = (error is not None and captured.inputs) or dropped or captured.apart or (
        inspect.is_dir() and any(inspect.iterdir()))
    keep = keep or given is not None or bool(worth_keeping)
    if not keep:
        shutil.rmtree(folder)  # ours, and nothing in it the run lacks
    return Recorded(capture=captured, summary=summary, error=error, kept=folder if keep else None)


def _whole(path: Path) -> bool:
    """A gzip file reads to its end (a trace whose writer was killed mid-write does not)."""
    if not path.name.endswith(".gz"):
        return True
    try:
        with gzip.open(path) as handle:
            while handle.read(1 << 20):
                pass
    except (OSError, EOFError, zlib.error):
        return False
    return True


def _ingest(captured: Capture, out: Path, force: bool) -> tuple[dict | None, str | None, list[Path]]:
    """(summary, why no run, inputs left out). An input that cannot be read (a trace cut short)
    is left out and the rest ingested: host metrics and the other ranks are kept."""
    from trnprof.collectors.ingest import ingest
    from trnprof.collectors.ingest.detect import detect

    inputs = captured.inputs
    if not inputs:
        return None, "nothing was captured", []
    try:
        return ingest([], out, force=force, inputs=[(p, detect(p)) for p in inputs]), None, []
    except TrnprofError as exc:
        whole = [p for p in inputs if _whole(p)]
        if len(whole) == len(inputs) or not whole:
            return None, str(exc), []
        dropped = [p for p in inputs if p not in whole]
        try:
            return ingest([], out, force=force, inputs=[(p, detect(p)) for p in whole]), None, dropped
        except TrnprofError as again:
            return None, str(again), []
