"""A live job recorded (`trnprof record`): the command run under the PyTorch profiler with host
metrics (and on a Neuron host the runtime's system profile and neuron-monitor) captured beside
it, ingested into one run, then optionally analyzed and reported."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable

if TYPE_CHECKING:
    from ..record.recorder import Recorded
    from ..rules_engine.document import Document


@dataclass
class Recording:
    """What `trnprof record` made: the recorder's result (`recorded.capture`, `.summary`,
    `.error`, `.kept`), the findings when asked for, what the report wrote when asked for."""

    recorded: Recorded
    document: Document | None = None
    report: dict | None = None


def record(
    command: list[str],
    out: str | Path,
    *,
    wait: int = 1,
    warmup: int = 1,
    active: int = 5,
    shapes: bool = False,
    memory: bool = False,
    stack: bool = False,
    max_bytes: int | None = None,
    interval: float = 0.5,
    neuron_mode: str = "auto",
    capture: str | Path | None = None,
    keep_capture: bool = False,
    analyze: bool = False,
    report: str | Path | None = None,
    force: bool = False,
    note: Callable[[str], None] = lambda text: None,
    started: Callable[[], Any] = lambda: None,
    recorded: Callable[[Recorded], Any] = lambda done: None,
) -> Recording:
    """Run `command` and profile it into the run `out` (docs/record.md for the step window
    wait/warmup/active and what is captured). Everything checkable is checked before the job
    runs (the output, --capture and --report destinations, the Neuron tools), then started() is
    called; recorded(result) once the run is written (or not: `result.error`), before the
    findings (`analyze`) and the HTML page (`report`, a file) are made. note(text): what the
    user should know while it runs."""
    from ..record.preflight import check_all
    from ..record.recorder import record as run_recorded
    from ..record.runtime import Settings
    from .reporting import check_page

    out = Path(out)
    check_all(out, force, Path(capture) if capture else None, Path(report) if report else None, neuron_mode)
    if report:
        check_page(report)  # the page can be made (its JavaScript is at hand)
    settings = Settings(
        capture="",
        wait=wait,
        warmup=warmup,
        active=active,
        shapes=shapes,
        memory=memory,
        stack=stack,
        max_bytes=max_bytes,
    )
    started()
    done = run_recorded(
        list(command),
        out,
        settings,
        force=force,
        capture=capture,
        keep=keep_capture,
        neuron_mode=neuron_mode,
        interval=interval,
        note=note,
    )
    recorded(done)
    made = Recording(done)
    if done.error:
        return made
    if analyze:
        from .findings import analyze as analyze_run

        made.document = analyze_run(done.summary["run"])
    if report:
        from .reporting import report as write_report

        made.report = write_report(done.summary["run"], report, overwrite=force)
    return made
