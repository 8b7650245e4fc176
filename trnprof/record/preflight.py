"""What `trnprof record` checks before the job starts, so no error waits for the job's end:
the run, capture and report paths (free or replaceable, writable, apart from each other),
torchrun's rank variables of the environment and, where the device profile is taken, that
`neuron-explorer` answers `--version`. Each failure is one `TrnprofError` line.

(A local "may I write this path" check: `record` writes its run through the ingest, its capture
and its report itself, and must know before the job, not when it writes.)
"""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

from trnprof.collectors.common.limits import MAX_RANK

from ..atomic import exists_error
from ..errors import TrnprofError
from ..manifest import read_manifest
from . import neuron

HTML_HEADS = (b"<!doctype html", b"<html")


def _writable_folder(path: Path, what: str) -> None:
    """The nearest existing ancestor of `path` is a folder this process can create files in
    (tried, not guessed: permissions, read-only mounts and root all answer the same way)."""
    ancestor = path.absolute().parent
    while not ancestor.exists():
        ancestor = ancestor.parent
    if not ancestor.is_dir():
        raise TrnprofError(f"{what} {path}: {ancestor} is not a folder")
    try:
        handle, probe = tempfile.mkstemp(prefix=".trnprof-probe-", dir=ancestor)
    except OSError as exc:
        raise TrnprofError(f"{what} {path}: cannot write in {ancestor} ({exc.strerror or exc})") from None
    os.close(handle)
    os.unlink(probe)


def _inside(path: Path, folder: Path) -> bool:
    return path == folder or folder in path.parents


def check_run_output(out: Path, force: bool) -> None:
    """An existing path needs --force and must be a run; a new one must be writable."""
    if out.exists() or out.is_symlink():
        if not force:
            raise exists_error(out)
        read_manifest(out, check_files=False, validate=False)
    _writable_folder(out, "output")


def check_capture(capture: Path, out: Path) -> None:
    """A new or empty folder, apart from the run (replacing the run must not delete it)."""
    a, b = capture.resolve(), out.resolve()
    if _inside(a, b) or _inside(b, a):
        raise TrnprofError(
            f"--capture {capture} and the run {out} overlap: give them separate folders "
            f"(replacing the run would delete the capture)"
        )
    if capture.exists() and not capture.is_dir():
        raise TrnprofError(f"--capture {capture}: not a folder")
    if capture.is_dir() and any(capture.iterdir()):
        raise TrnprofError(f"capture folder is not empty: {capture}")
    _writable_folder(capture / "x", "--capture")


def check_report(report: Path, out: Path, capture: Path | None, force: bool) -> None:
    """A new file, or with --force an existing HTML page; never inside the run or the capture."""
    r = report.resolve()
    for folder, what in ((out, "the run"), (capture, "the capture")):
        if folder is not None and _inside(r, folder.resolve()):
            raise TrnprofError(f"--report {report} is inside {what} {folder}: write it elsewhere")
    if report.is_dir():
        raise TrnprofError(f"--report {report}: is a folder")
    if report.exists():
        if not force:
            raise exists_error(f"--report {report}")  # the one line of every output refused without --force
        with open(report, "rb") as handle:
            head = handle.read(64).lstrip().lower()
        if not head.startswith(HTML_HEADS):
            raise TrnprofError(f"--report {report} exists and is not an HTML page: not replaced, even with --force")
    _writable_folder(report, "--report")


def _number(environ, name: str) -> int | None:
    text = environ.get(name)
    if text is None or text == "":
        return None
    if not text.isdigit() or int(text) > MAX_RANK:
        raise TrnprofError(f"{name}={text!r} in the environment is not a rank number (0 .. {MAX_RANK})")
    return int(text)


def check_ranks(environ=os.environ) -> None:
    """torchrun's RANK and WORLD_SIZE as the command would inherit them: numbers in range."""
    rank, world = _number(environ, "RANK"), _number(environ, "WORLD_SIZE")
    if world is not None and world < 1:
        raise TrnprofError("WORLD_SIZE=0 in the environment: a job has one rank at least")
    if rank is not None and world is not None and rank >= world:
        raise TrnprofError(f"RANK={rank} is not below WORLD_SIZE={world} in the environment")


def check_explorer() -> str | None:
    """Neuron Explorer's version, None when it is not on PATH; one line (exit 2) when it is
    there and broken: the job has not started yet."""
    try:
        return neuron.explorer_version()
    except TrnprofError as exc:
        raise TrnprofError(
            f"{exc} (fix the aws-neuronx-tools install, or pass --neuron off to record without the Neuron side)"
        ) from None


def check_all(out: Path, force: bool, capture: Path | None, report: Path | None, neuron_mode: str = "off") -> None:
    check_ranks()
    if neuron.wants_runtime(neuron_mode):
        check_explorer()
    check_run_output(out, force)
    if capture is not None:
        check_capture(capture, out)
    if report is not None:
        check_report(report, out, capture, force)
