"""A run for other tools (`trnprof export`): the Chrome trace that Perfetto opens."""

from __future__ import annotations

from pathlib import Path


def export(
    run: str | Path, out: str | Path, *, fmt: str = "chrome", force: bool = False, threads: int | None = None
) -> dict:
    """Write `run` to the file `out` in format `fmt` (`trnprof.export.FORMATS`): the counts of
    events, counters and ranks written, and the non-finite counter samples left out."""
    from ..export import FORMATS

    return FORMATS[fmt](run, out, force=force, threads=threads)
