"""`trnprof.profile()` and `trnprof.step()`: the capture of `trnprof record` from inside a script
or a notebook.

    with trnprof.profile("RUN", active=5):
        for batch in loader:
            train_step(batch)
            trnprof.step()

Under `trnprof record` the trace goes to the recording (which ingests it); otherwise, with an
output, the trace is ingested into that run when the block ends.
"""

from __future__ import annotations

import os
import shutil
import sys
import uuid
from contextlib import contextmanager
from pathlib import Path

from ..errors import TrnprofError

BOOT_RUNTIME = "_trnprof_record_runtime"  # the runtime as the launcher loaded it (boot/sitecustomize.py)


def _runtime():
    """The runtime module in use: the launcher's under `trnprof record`, so an explicit
    profile() replaces its automatic session rather than running beside it."""
    booted = sys.modules.get(BOOT_RUNTIME)
    if booted is not None:
        return booted
    from . import runtime

    return runtime


class Profile:
    """What a `profile()` block captured: `trace` (this rank's file), `run` and `summary` (the
    ingest's) when it was ingested."""

    def __init__(self, session, run: Path | None):
        self.session = session
        self.run = run
        self.summary: dict | None = None

    @property
    def trace(self) -> Path | None:
        return self.session.written


@contextmanager
def profile(
    output: str | Path | None = None,
    *,
    capture: str | Path | None = None,
    wait: int = 1,
    warmup: int = 1,
    active: int = 5,
    shapes: bool = False,
    memory: bool = False,
    stack: bool = False,
    force: bool = False,
):
    """Profile this process's steps (mark each with `trnprof.step()`): `wait` steps skipped,
    `warmup` recorded and dropped, `active` kept. The trace goes to `capture` (a folder; by
    default a temporary one beside `output`, removed after the ingest) and, with `output`, is
    ingested into that run when the block ends (single-process jobs; in a multi-rank job give
    `capture` and ingest the folder after the job: `trnprof ingest CAPTURE -o RUN`)."""
    runtime = _runtime()
    recording = runtime.Settings.from_env()
    made = None
    if capture is None and recording is not None:
        capture, output = recording.capture, None  # `trnprof record` ingests it
    if output is not None and runtime.rank_identity()["world_size"] > 1:
        raise TrnprofError(
            "profile(output=...) ingests one process's trace; in a multi-rank job pass "
            "capture=FOLDER and run `trnprof ingest FOLDER -o RUN` after the job"
        )
    if output is not None:
        from ..record.recorder import check_output

        check_output(Path(output), force)
    if capture is None:
        if output is None:
            raise TrnprofError("profile() needs an output run or a capture folder")
        made = capture = Path(output).parent / f".{Path(output).name}.capture-{os.getpid()}-{uuid.uuid4().hex[:8]}"
    Path(capture).mkdir(parents=True, exist_ok=True)
    settings = runtime.Settings(
        capture=str(Path(capture).resolve()),
        wait=wait,
        warmup=warmup,
        active=active,
        shapes=shapes,
        memory=memory,
        stack=stack,
    )
    result = Profile(runtime.begin(settings, manual=True), Path(output) if output is not None else None)
    try:
        yield result
    finally:
        result.session.stop()
        try:
            if output is not None and result.trace is not None:
                from trnprof.collectors.ingest import ingest

                result.summary = ingest([result.trace], output, force=force)
        finally:
            if made is not None:
                shutil.rmtree(made, ignore_errors=True)


def step() -> None:
    """Mark the end of a training step (no-op outside a recording or a profile() block)."""
    _runtime().step()
