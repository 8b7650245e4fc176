"""Traces given where a run is expected (`trnprof analyze TRACE.json.gz`): ingested into a run in
the same process (one interpreter, its libraries loaded once), and found again by content.

Where the run goes: the folder the caller names (kept; used again when it holds a run of the
same inputs), else the user's cache folder (`trnprof.tracecache`, `runs/<key>`), keyed by the
trnprof version and every input file's name and sha256, so a second command on the same trace
opens the run and its `derived/` cache without ingesting. When the cache folder cannot be
written, the run is made in a temporary folder that is removed when the command ends.
"""

from __future__ import annotations

import contextlib
import shutil
import tempfile
from dataclasses import dataclass
from pathlib import Path

import pyarrow as pa

from trnprof import tracecache
from trnprof._version import __version__
from trnprof.atomic import temp_folder
from trnprof.errors import TrnprofError
from trnprof.manifest import read_manifest
from trnprof.schema import MANIFEST_FILE

from . import ingest, input_files
from .detect import TRACE_SUFFIXES, expand, folder_format


@dataclass
class TraceRun:
    path: Path  # the run folder
    ingested: bool  # False: an existing run of the same inputs was opened
    note: str | None  # why the run is not kept, when it is not


def is_trace_input(path: str | Path) -> bool:
    """True for a file, or a folder that is no run but holds traces (or is one input of a folder
    format, a Neuron Explorer profile): what `ingest` takes. Anything else is left to the run
    reader and its errors."""
    path = Path(path)
    if path.is_file():
        return True
    if not path.is_dir() or (path / MANIFEST_FILE).is_file():
        return False
    traces = any(p.name.endswith(TRACE_SUFFIXES) for p in path.rglob("*") if p.is_file())
    return traces or folder_format(path) is not None


def _holds(run: Path, identity: list[tuple[str, str]]) -> bool:
    """True when `run` is an ingest of exactly these inputs by this trnprof version."""
    try:
        source = read_manifest(run, check_files=False)["source"]
    except TrnprofError:
        return False
    return (
        source.get("collector") == "trnprof.ingest"
        and source.get("version") == __version__
        and tracecache.identity(source.get("inputs", [])) == identity
    )


def _ingest(paths, out: Path, inputs, fingerprints) -> None:
    """Ingest, then hand the memory Arrow's pool kept back to the system: the command goes on to
    analyze in this process, and its peak would otherwise include the ingest's freed buffers."""
    ingest(paths, out, inputs=inputs, fingerprints=fingerprints)
    pa.default_memory_pool().release_unused()


def _writable(folder: Path) -> str | None:
    """None when runs can be written in `folder`, else why not."""
    try:
        folder.mkdir(parents=True, exist_ok=True)
        temp_folder(folder, ".probe-").rmdir()
    except OSError as exc:
        return exc.strerror or type(exc).__name__
    return None


def _not_ours(cached: Path) -> str | None:
    """Why the cache's folder for these traces is not one trnprof may replace, or None: a link
    (to anywhere) or anything but a folder is never removed."""
    if cached.is_symlink() or (cached.exists() and not cached.is_dir()):
        return f"{cached.name} there is not a folder trnprof made"
    return None


@contextlib.contextmanager
def run_of_traces(paths, *, run: str | Path | None = None, ahead=None):
    """Yield the `TraceRun` of the traces `paths`: into `run` when given, else the cache.
    `ahead`: the ingest of `paths` started ahead into the cache (`ingest_ahead`; trnprof.api.ahead):
    its `fingerprint(file)` (or None), and `finish()`, which waits for it (True: it made the run)."""
    inputs = expand(list(paths))
    taken = ahead.fingerprint if ahead is not None else lambda file: None
    fingerprints = [taken(p) or tracecache.file_fingerprint(p) for p in input_files(inputs)]
    identity = tracecache.identity(fingerprints)
    if run is not None:
        yield _named(Path(run), paths, inputs, fingerprints, identity)
        return
    cached = tracecache.run_folder(identity)
    ingested_ahead = ahead is not None and ahead.finish()
    if _holds(cached, identity):
        yield TraceRun(cached, ingested_ahead, None)
        return
    why_not = _writable(cached.parent) or _not_ours(cached)
    if why_not is None:
        if cached.is_dir():  # a damaged run at the cache's own key: trnprof made it, and makes it again
            shutil.rmtree(cached)
        try:
            _ingest(paths, cached, inputs, fingerprints)
        except TrnprofError:
            if not _holds(cached, identity):
                raise
            yield TraceRun(cached, False, None)  # another command ingested it meanwhile
            return
        yield TraceRun(cached, True, None)
        return
    with tempfile.TemporaryDirectory(prefix="trnprof-trace-") as scratch:
        out = Path(scratch) / "run"
        _ingest(paths, out, inputs, fingerprints)
        yield TraceRun(
            out,
            True,
            f"the cache folder {cached.parent} cannot be written ({why_not}): "
            "the trace's run was made for this command only",
        )


def _named(run: Path, paths, inputs, fingerprints, identity) -> TraceRun:
    if _holds(run, identity):
        return TraceRun(run, False, None)
    if run.exists():
        raise TrnprofError(
            f"--run-dir {run}: it exists and is not a run of these traces (choose another folder or remove it)"
        )
    _ingest(paths, run, inputs, fingerprints)
    return TraceRun(run, True, None)


def ingest_ahead(path: str | Path, taken: dict | None = None) -> bool:
    """The ingest `trnprof.api.ahead` starts in a forked process: the trace `path` into the
    user's cache, only where `run_of_traces` would ingest it there (a trace, not yet in the
    cache, the cache writable, no folder at its key); True when it did. `taken`: the file's
    fingerprint, taken already."""
    path = Path(path)
    if (path / MANIFEST_FILE).is_file() or not is_trace_input(path):
        return False
    inputs = expand([path])
    fingerprints = [
        taken if taken is not None and p == path else tracecache.file_fingerprint(p) for p in input_files(inputs)
    ]
    identity = tracecache.identity(fingerprints)
    cached = tracecache.run_folder(identity)
    if cached.exists() or cached.is_symlink() or _writable(cached.parent) is not None:
        return False
    _ingest([path], cached, inputs, fingerprints)
    return True
