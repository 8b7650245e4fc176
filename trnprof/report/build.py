"""`build_report`: every section of an open run, its findings document and an optional `trnprof
diff` document, written as one page atomically (a temporary sibling renamed into place), and
optionally the charts exported. `trnprof.api.report` opens the run and makes the documents."""

from __future__ import annotations

import datetime as dt
from pathlib import Path

import altair as alt

from .. import atomic
from .._version import __version__
from ..errors import TrnprofError
from ..rules_engine.document import Document
from . import export, vega
from .page import render
from .sections import (
    breakdown,
    collectives,
    critical_path,
    findings_table,
    fixes_worth,
    header,
    input_pipeline,
    memory,
    stragglers,
    timeline,
)
from .sections import comparison as comparison_section
from .sections import device as device_section

CHART_SECTIONS = (breakdown, timeline, critical_path, collectives, memory, stragglers, input_pipeline)


def _spec(chart) -> dict:
    """The chart's Vega-Lite spec with its data inline (the report samples before this point)."""
    with alt.data_transformers.enable("default", max_rows=None):
        return chart.to_dict()


def check_destination(path: Path) -> None:
    """Fail before any work when `path` cannot be the page or the JavaScript cannot be inlined."""
    if Path(path).is_dir():
        raise TrnprofError(f"output {path} is a folder: give a file name, e.g. {Path(path) / 'report.html'}")
    vega.javascript_bundle()


def build_report(
    run,
    out,
    *,
    findings: Document | None,
    origin: str = "",
    comparison: dict | None = None,
    png_dir=None,
    overwrite: bool = True,
) -> dict:
    """Write the HTML report of the open `run` to `out` (overwrite=False: never over a file there).

    findings: its findings document (None: the page says findings were not computed), origin: a
    line saying where they came from; comparison: a `trnprof diff` document with `run` as the
    new side (adds the comparison section); png_dir: also write every chart there as PNG and SVG.
    Returns what was written: path, bytes, charts, sections without data."""
    out = Path(out)
    check_destination(out)
    run.materialize()  # the views the report's sections share, computed once
    sections = [header.build(run, findings), findings_table.build(findings, origin), fixes_worth.build(findings)]
    if comparison is not None:
        sections.append(comparison_section.build(comparison))
    sections += [module.build(run) for module in CHART_SECTIONS]
    device = device_section.build(run, findings)  # None without a device profile: no section at all
    if device is not None:
        sections.append(device)
    manifest = run.manifest
    specs = {s.id: _spec(s.chart) for s in sections if s.chart is not None}
    job = manifest.get("job") or {}
    title = f"trnprof report: {Path(run.path).resolve().name}" + (f" ({job['model']})" if job.get("model") else "")
    subtitle = (
        f"run {Path(run.path).resolve()} · source {manifest.get('source', {}).get('collector', 'unknown')} · "
        f"written {dt.datetime.now().astimezone().isoformat(timespec='seconds')} by trnprof {__version__}"
    )
    footer = (
        "Self-contained page: the Vega, Vega-Lite and Vega-Embed libraries are inlined and it makes no "
        "network request. Charts: hover for details; the … menu exports PNG/SVG."
    )
    page = render(title, subtitle, sections, specs, footer)
    atomic.write_text(out, page, overwrite=overwrite)
    exported = export.export_charts(specs, png_dir) if png_dir is not None else []
    return {
        "path": str(out),
        "bytes": len(page.encode()),
        "charts": list(specs),
        "empty": {s.id: s.empty for s in sections if s.empty},
        "findings": None if findings is None else len(findings.findings),
        "exports": [str(p) for p in exported],
    }
