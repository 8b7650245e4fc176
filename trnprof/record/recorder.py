"""`record(command, out)`: capture a command, then ingest everything it captured into one run
(atomically, through the ingest pipeline) and remove the capture folder trnprof made."""

from __future__ import annotations

import os
import shutil
import uuid
from dataclasses import dataclass
from pathlib import Path

from ..errors import TrnprofError
from ..manifest import read_manifest
from . import neuron
from .capture import Capture, run_captured
from .runtime import Settings


@dataclass
class Recorded:
    capture: Capture
    summary: dict | None       # the ingest's, None when nothing was captured
    error: str | None          # why no run was written
    kept: Path | None          # the capture folder, when it stays


def check_output(out: Path, force: bool) -> None:
    """Refuse before the job runs, not after: an existing path needs --force and must be a run."""
    if not out.exists():
        return
    if not force:
        raise TrnprofError(f"output exists: {out} (choose another path or pass --force to replace it)")
    read_manifest(out, check_files=False, validate=False)


def new_capture_folder(out: Path, given: Path | None) -> Path:
    if given is not None:
        if given.exists() and any(given.iterdir()):
            raise TrnprofError(f"capture folder is not empty: {given}")
        given.mkdir(parents=True, exist_ok=True)
        return given
    folder = out.parent / f".{out.name}.capture-{os.getpid()}-{uuid.uuid4().hex[:8]}"
    folder.mkdir(parents=True)
    return folder


def record(command: list[str], out: str | Path, settings: Settings, *, force: bool = False,
           capture: str | Path | None = None, keep: bool = False, neuron_mode: str = "auto",
           interval: float = 0.5, note=lambda text: None) -> Recorded:
    out = Path(out)
    check_output(out, force)
    given = Path(capture) if capture is not None else None
    folder = new_capture_folder(out, given)
    settings.capture = str(folder.resolve())
    try:
        captured = run_captured(command, settings, neuron_mode=neuron_mode, interval=interval,
                                max_bytes=settings.max_bytes, note=note)
    except BaseException:
        if given is None:
            shutil.rmtree(folder, ignore_errors=True)
        raise
    summary, error = _ingest(captured, out, force)
    inspect = folder / neuron.INSPECT_FOLDER
    keep = keep or given is not None or error is not None or (inspect.is_dir() and any(inspect.iterdir()))
    if not keep:
        shutil.rmtree(folder)
    return Recorded(capture=captured, summary=summary, error=error, kept=folder if keep else None)


def _ingest(captured: Capture, out: Path, force: bool) -> tuple[dict | None, str | None]:
    from trnprof.collectors.ingest import ingest
    from trnprof.collectors.ingest.detect import detect

    inputs = captured.inputs
    if not inputs:
        return None, "nothing was captured"
    try:
        return ingest([], out, force=force, inputs=[(p, detect(p)) for p in inputs]), None
    except TrnprofError as exc:
        return None, str(exc)
