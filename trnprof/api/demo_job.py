"""`trnprof demo`: the tiny job with a slow data loader simulated, analyzed and reported, in a
folder the demo claims with a marker (`.trnprof-demo`) written before anything else: a later
demo replaces the run, analyze.json and report.html of a folder with the marker, and refuses a
folder holding anything else unless forced (docs/cli.md: the overwrite contract)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Callable

from .. import atomic
from ..errors import TrnprofError

MARKER = ".trnprof-demo"


def _is_demo(folder: Path) -> bool:
    try:
        return json.loads((folder / MARKER).read_text(encoding="utf-8")).get("made_by") == "trnprof demo"
    except (OSError, UnicodeDecodeError, ValueError, AttributeError):
        return False


def claim_folder(out: Path, force: bool) -> bool:
    """Make `out` the demo's folder: new, empty, an earlier demo's, or (with `force`) anything;
    returns whether earlier outputs there may be replaced. Refused otherwise, before any work."""
    if out.exists() and not out.is_dir():
        raise TrnprofError(f"cannot write the demo into {out}: it is not a folder")
    earlier = out.is_dir() and _is_demo(out)
    if out.is_dir() and not earlier and any(out.iterdir()) and not force:
        raise TrnprofError(
            f"{out} holds files an earlier trnprof demo did not write: choose another folder "
            "or pass --force to replace its run, analyze.json and report.html"
        )
    if not earlier:
        atomic.write_text(out / MARKER, json.dumps({"made_by": "trnprof demo"}) + "\n")
    return earlier or force


def demo(out: str | Path, *, force: bool = False, started: Callable[[], None] | None = None) -> dict:
    """Simulate the demo job into `out`/run, analyze it (`out`/analyze.json) and write its report
    (`out`/report.html): {"run": its path, "document": the findings, "report": what the report
    wrote, "info": the run's info}. started() is called once the folder is claimed, before the work."""
    from ..collectors.trn1 import demo_config, simulate
    from ..rules_engine.document import to_json_bytes
    from .findings import analyze
    from .reporting import report
    from .runs import run_info

    out = Path(out)
    replace = claim_folder(out, force)
    run_path = out / "run"
    for name in ("analyze.json", "report.html"):
        atomic.check_replaceable(out / name, replace)
    (started or (lambda: None))()
    simulate(demo_config(), run_path, overwrite=replace)
    document = analyze(run_path)
    atomic.write_bytes(out / "analyze.json", to_json_bytes(document) + b"\n", overwrite=replace)
    written = report(run_path, out / "report.html", findings=out / "analyze.json", overwrite=replace)
    return {"run": run_path, "document": document, "report": written, "info": run_info(run_path)}
