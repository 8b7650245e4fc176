"""Traces into runs: `trnprof ingest`, and a trace given where a run is expected (`analyze`)."""

from __future__ import annotations

import contextlib
from pathlib import Path

from ..errors import TrnprofError
from ..heap import trim
from ..schema import MANIFEST_FILE
from . import ahead


def _no_bar(length: int):
    return contextlib.nullcontext()


def ingest_traces(paths, out, *, fmt: str = "auto", rank: int | None = None, force: bool = False, bar=_no_bar) -> dict:
    """Ingest traces and tool outputs (files or folders) into the run folder `out` (`trnprof
    ingest`): the ingest summary. bar(total input bytes): a context manager that yields a
    progress bar (its `update(bytes)` is called as the inputs are read) or None for none."""
    from ..collectors.ingest import ingest, input_bytes
    from ..collectors.ingest.detect import expand

    inputs = expand(list(paths), fmt)
    with bar(input_bytes(inputs)) as shown:
        return ingest(
            paths,
            out,
            fmt=fmt,
            rank=rank,
            force=force,
            inputs=inputs,
            progress=shown.update if shown is not None else None,
        )


@contextlib.contextmanager
def run_or_traces(path: str | Path, *, into: str | Path | None = None):
    """Yield (run folder, lines for the user) for `path`: a run as it is, or a trace file (a folder
    of per-rank traces) ingested here, into the folder `into` or else a run in the user's cache
    that the next command finds again (`collectors.ingest.traces`). `into` is for traces only."""
    path = Path(path)
    if (path / MANIFEST_FILE).is_file():
        if into is not None:
            raise TrnprofError(f"{path} is a run: the run folder option is for a trace given instead of a run")
        yield path, []
        return
    if not path.exists():  # the run reader says what is missing
        yield path, []
        return
    from ..collectors.ingest.traces import is_trace_input, run_of_traces  # the ingest loads only for a trace

    if not is_trace_input(path):
        yield path, []
        return
    with run_of_traces([path], run=into, ahead=ahead.started(path)) as traced:
        trim()  # the trace's objects are gone: their pages need not sit under the analysis's peak
        lines = [f"ingested {path} into {traced.path}"] if traced.ingested else []
        yield traced.path, lines + ([f"warning: {traced.note}"] if traced.note else [])
