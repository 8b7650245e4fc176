"""`ingest(paths, out)`: real traces -> one canonical run, nothing lost (docs/ingest.md).

Each input's format is detected from its content (`detect.py`) by the sniffs of the format
registry (`formats.py`; the built-in formats in `builtin.py`, others from entry points). Kineto /
Chrome traces are streamed (`trnprof.collectors.kineto`); Neuron tool outputs are read whole
(they are small) into the same tables (`trnprof.collectors.neuron`). Besides events, counters and ranks the run
holds `ingest/flows`, `ingest/meta`, `ingest/quarantine` (and verbatim copies of Neuron Explorer
tables without a mapping); the manifest's `ingest` block records, per input, where every source
entry went. Any error aborts the run: no half run is ever left behind.
"""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Callable

from trnprof.collectors.common.limits import check_rank
from trnprof.errors import TrnprofError
from trnprof.manifest import new_manifest
from trnprof.runstore import write_run
from trnprof.tracecache import file_fingerprint

from .collect import Collected
from .detect import expand
from .formats import lookup

__all__ = ["ingest"]


def _fingerprints(inputs: list[tuple[Path, str]], pool: ThreadPoolExecutor):
    """sha256 of every input file, hashed on another core while the ingest runs (hashlib
    releases the GIL)."""
    return [pool.submit(file_fingerprint, p) for p in input_files(inputs)]


def input_files(inputs: list[tuple[Path, str]]) -> list[Path]:
    """Every file the inputs consist of (a folder input: the files under it)."""
    files = []
    for path, _ in inputs:
        files += sorted(p for p in path.rglob("*") if p.is_file()) if path.is_dir() else [path]
    return files


def input_bytes(inputs: list[tuple[Path, str]]) -> int:
    return sum(
        sum(p.stat().st_size for p in path.rglob("*") if p.is_file()) if path.is_dir() else path.stat().st_size
        for path, _ in inputs
    )


def ingest(
    paths,
    out,
    *,
    fmt: str = "auto",
    rank: int | None = None,
    force: bool = False,
    progress: Callable[[int], None] | None = None,
    spill_dir=None,
    inputs=None,
    fingerprints=None,
) -> dict:
    """Ingest `paths` (files or folders) into the run folder `out`; returns a summary dict.
    inputs, fingerprints: `detect.expand(paths)` and the inputs' `file_fingerprint`s, when the
    caller has them already."""
    if fmt != "auto":
        lookup(fmt)  # one error line for an unknown format
    if rank is not None:
        check_rank(rank, "--rank")
    inputs = inputs if inputs is not None else expand(list(paths), fmt)
    if not inputs:
        raise TrnprofError("no inputs to ingest")
    default_rank = rank if rank is not None else (0 if len(inputs) == 1 else None)
    manifest = new_manifest("trnprof.ingest", job={})
    with ThreadPoolExecutor(max_workers=1) as pool, write_run(out, manifest, overwrite=force) as run:
        hashes = _fingerprints(inputs, pool) if fingerprints is None else None
        collected = Collected(
            run,
            rank_option=rank,
            default_rank=default_rank,
            progress=progress,
            spill_dir=spill_dir if spill_dir is not None else run.scratch,
        )
        for path, kind in inputs:
            collected.add(path, kind)
        collected.finish(manifest)
        manifest["source"]["inputs"] = list(fingerprints) if hashes is None else [h.result() for h in hashes]
    return collected.summary(Path(out))
