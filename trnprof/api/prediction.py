"""What if (`trnprof whatif`): the job changed, predicted by the Trn1 execution model fitted to
the run; or durations scaled, replayed along the run's own dependency graph."""

from __future__ import annotations

import time
from typing import TYPE_CHECKING

from ..errors import TrnprofError

if TYPE_CHECKING:
    from pathlib import Path

    from ..run import Run


def whatif(run: str | Path | Run, overrides=(), *, job=None, scales=(), threads: int | None = None) -> dict:
    """Fit the execution model to `run` (a path or an open run) and predict the job with
    `overrides` ("tp=16", "parallel.tp=16", ... or a mapping): the `trnprof whatif --format json`
    document. job: a YAML job description over the run's recorded job (`whatif --job`).
    scales: `--scale SELECTOR=FACTOR` specs instead: the run's dependency graph replayed with
    those durations scaled, on any run (its document's `fit.method` is "replay")."""
    if scales:
        return _replay(run, list(scales), overrides, job, threads)
    from ..whatif import document as whatif_document

    return whatif_document.whatif(run, overrides, config=job, threads=threads)


def _replay(run, scales: list[str], overrides, job, threads) -> dict:
    if overrides or job:
        raise TrnprofError(
            "--scale replays the trace; --set/--job change the execution model's job: give one or the other"
        )
    from ..critical_path import scale
    from ..engines import open_run
    from ..whatif import replay

    started = time.perf_counter()
    for spec in scales:
        scale.parse(spec)  # a bad selector fails before the run is read
    with open_run(run, threads=threads) as opened:
        return replay.document(opened, scales, started)
