"""`write_report`: open the run, gather the findings, build every section, write the page
atomically (a temporary sibling renamed into place) and optionally export the charts."""

from __future__ import annotations

import datetime as dt
from pathlib import Path

import altair as alt

from .. import atomic
from .._version import __version__
from ..api import open_run
from ..errors import TrnprofError
from ..rules_engine.document import Document
from . import export, findings as findings_mod, vega
from .page import render
from .sections import (breakdown, collectives, comparison, critical_path, findings_table, fixes_worth, header,
                       input_pipeline, memory, stragglers, timeline)

CHART_SECTIONS = (breakdown, timeline, critical_path, collectives, memory, stragglers, input_pipeline)


def _findings(run, findings, analyze: bool, config=None) -> tuple[Document | None, str]:
    """The findings document and a line saying where it came from."""
    if findings is not None:
        document = findings_mod.read_findings(findings)
        analyzed = f" (analyzed run: {document.run})"
        if Path(document.run).resolve() != Path(run.path).resolve():
            analyzed += " WARNING: that is not the run this report shows; re-run `trnprof analyze` on it."
        return document, f"Findings loaded from {findings}{analyzed}."
    if analyze:
        return findings_mod.from_engine(run, config), "Findings of the built-in rule packs, computed for this report."
    return None, ""


def _spec(chart) -> dict:
    """The chart's Vega-Lite spec with its data inline (the report samples before this point)."""
    with alt.data_transformers.enable("default", max_rows=None):
        return chart.to_dict()


def _check_output(path: Path) -> None:
    if path.is_dir():
        raise TrnprofError(f"output {path} is a folder: give a file name, e.g. {path / 'report.html'}")


def write_report(run, out, *, findings=None, analyze: bool = True, png_dir=None, threads: int | None = None,
                 baseline=None, config=None) -> dict:
    """Write the HTML report of `run` to `out`.

    findings: a saved `trnprof analyze --format json` file to use instead of running the rules;
    analyze=False with no file: no findings (the page says so). png_dir: also write every chart
    there as PNG and SVG. baseline: a run to compare with (adds the comparison section of
    `trnprof diff`). config: a rules config file for the findings. Returns what was written: path, bytes, charts, sections without data."""
    out = Path(out)
    _check_output(out)
    vega.javascript_bundle()  # fail before any work when the JavaScript cannot be inlined
    with open_run(run, threads=threads) as opened:
        opened.materialize()  # the views the report and the rules share, computed once
        document, origin = _findings(opened, findings, analyze, config)
        sections = [header.build(opened, document), findings_table.build(document, origin),
                    fixes_worth.build(document)]
        if baseline is not None:
            from ..diff.document import diff
            sections.append(comparison.build(diff(baseline, opened, new_findings=document)))
        sections += [module.build(opened) for module in CHART_SECTIONS]
        manifest = opened.manifest
    specs = {s.id: _spec(s.chart) for s in sections if s.chart is not None}
    job = manifest.get("job") or {}
    title = f"trnprof report: {Path(run).resolve().name}" + (f" ({job['model']})" if job.get("model") else "")
    subtitle = (f"run {Path(run).resolve()} · source {manifest.get('source', {}).get('collector', 'unknown')} · "
                f"written {dt.datetime.now().astimezone().isoformat(timespec='seconds')} by trnprof {__version__}")
    footer = ("Self-contained page: the Vega, Vega-Lite and Vega-Embed libraries are inlined and it makes no "
              "network request. Charts: hover for details; the … menu exports PNG/SVG.")
    page = render(title, subtitle, sections, specs, footer)
    atomic.write_text(out, page)
    exported = export.export_charts(specs, png_dir) if png_dir is not None else []
    return {"path": str(out), "bytes": len(page.encode()), "charts": list(specs),
            "empty": {s.id: s.empty for s in sections if s.empty},
            "findings": None if document is None else len(document.findings),
            "exports": [str(p) for p in exported]}
