"""A trace's chunks staged and mapped in worker processes: decoding a chunk into events, staging
them (columns.py) and mapping the rows (mapping.py) is Python that holds the GIL, most of an
ingest, and each chunk is staged and mapped on its own. So a trace of more than one chunk is cut
here (`stream.read_pieces`: each piece checked as JSON, a quarter of a decode) and its pieces
decoded, staged and mapped in forked worker processes, a few ahead, while this process gathers
the results in file order (trace.py). The results are what one process makes of the same chunks:
the pieces are the chunks `read_chunks` cuts, and a piece staged before a later one switched the
trace to exact times re-decodes itself as a chunk does (`stage_chunk`). The chunks of a trnprof
export are mapped by this process: each reads the thread names of those before it.

One process does it all where a fork costs more than it saves or is not safe: a trace of one
piece (up to ~4 MB of JSON), a machine with one core, any system but Linux (macOS's frameworks
are not fork-safe; Windows has no fork), or TRNPROF_INGEST_WORKERS=0 (docs/ingest.md).
"""

from __future__ import annotations

import collections
import contextlib
import ctypes
import itertools
import os
import re
import signal
import sys
from pathlib import Path
from typing import Iterator

from trnprof.errors import TrnprofError

from .columns import Staged, stage_chunk
from .header import export_marker
from .mapping import Mapped, map_chunk
from .stream import Chunk, decode_piece, read_chunks, read_pieces

WORKERS_ENV = "TRNPROF_INGEST_WORKERS"
MAX_WORKERS = 8  # each holds a chunk's events (~10x its JSON) while staging it
_ENV_LIMIT = 64
_PR_SET_PDEATHSIG = 1  # linux/prctl.h


def staged_chunks(path: Path, progress, mode: dict) -> Iterator[tuple[Chunk, Staged | Mapped]]:
    """Each chunk of the trace (its `early_header` and `header`; its events are not kept) with
    its staged rows, or with its mapped rows where a worker mapped them, in file order.
    `mode["exact"]` as for `read_chunks`."""
    workers = worker_count()
    if workers < 1:
        for chunk in read_chunks(path, progress, mode):
            yield chunk, stage_chunk(chunk, mode)
        return
    with contextlib.closing(read_pieces(path, progress)) as pieces:
        first = next(pieces)  # a trace has at least its last chunk
        second = next(pieces, None)
        if second is None:  # one piece: not worth a process
            chunk = decode_piece(first, mode["exact"], path)
            yield chunk, stage_chunk(chunk, mode)
            return
        yield from _in_workers(path, itertools.chain([first, second], pieces), workers, mode)


def worker_count() -> int:
    """Worker processes to stage chunks in (0: this process stages them): TRNPROF_INGEST_WORKERS,
    else one per core (at most MAX_WORKERS: on 2 cores two workers beat one, this process mostly
    waiting), none on one core or off Linux."""
    if not sys.platform.startswith("linux"):
        return 0
    text = os.environ.get(WORKERS_ENV, "").strip()
    if text:
        if not re.fullmatch(r"[0-9]{1,3}", text) or int(text) > _ENV_LIMIT:
            raise TrnprofError(f"{WORKERS_ENV}={text[:20]!r}: write a whole number of processes from 0 to {_ENV_LIMIT}")
        return int(text)
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1
    return min(MAX_WORKERS, cores) if cores > 1 else 0


def _in_workers(path: Path, pieces, workers: int, mode: dict) -> Iterator[tuple[Chunk, Staged | Mapped]]:
    """Stage (and map, but for an export) `pieces` in `workers` forked processes, at most one
    piece per worker ahead of the one this process waits for."""
    import multiprocessing  # here: 20 ms of imports that a trace of one piece does without
    from concurrent.futures import ProcessPoolExecutor
    from concurrent.futures.process import BrokenProcessPool

    pool = ProcessPoolExecutor(
        workers, mp_context=multiprocessing.get_context("fork"), initializer=_worker_start, initargs=(os.getpid(),)
    )
    pending = collections.deque()
    source = None  # mapped here: a trnprof export
    try:
        for piece in pieces:
            if piece.early_header is not None and export_marker(piece.early_header) is None:
                source = path.name
            sent = Chunk([], piece.first_index, data=piece.data, offset=piece.offset)  # its entries stay here
            pending.append((piece, pool.submit(_stage_piece, path, sent, mode["exact"], source)))
            piece.events, piece.data = [], b""
            if len(pending) > workers:
                yield _staged(*pending.popleft(), mode)
        while pending:
            yield _staged(*pending.popleft(), mode)
    except BrokenProcessPool:
        raise TrnprofError(
            f"a process staging the trace ended unexpectedly (out of memory?); "
            f"set {WORKERS_ENV}=0 to ingest in one process"
        ) from None
    finally:
        pool.shutdown(wait=True, cancel_futures=True)


def _worker_start(parent: int) -> None:
    """A worker leaves Ctrl-C to this process (which stops the pool) and ends with it, however it
    ends: killed, this process would leave it waiting on its queue, holding the terminal's pipes."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    with contextlib.suppress(AttributeError, OSError):
        ctypes.CDLL(None, use_errno=True).prctl(_PR_SET_PDEATHSIG, signal.SIGKILL)
    if os.getppid() != parent:  # it ended before the signal was asked for
        os._exit(1)


def _staged(piece: Chunk, future, mode: dict) -> tuple[Chunk, Staged | Mapped]:
    result, exact = future.result()
    if exact:
        mode["exact"] = True  # pieces read from now on decode their times as text at once
    return piece, result


def _stage_piece(path: Path, piece: Chunk, exact: bool, source: str | None) -> tuple[Staged | Mapped, bool]:
    """In a worker: one piece decoded and staged, and mapped when `source` (the file's name) is
    given; and whether it needed exact times."""
    mode = {"exact": exact}
    staged = stage_chunk(decode_piece(piece, exact, path), mode)
    return (staged if source is None else map_chunk(staged, source)), mode["exact"]
