"""The HTML report (`trnprof report`): this module opens the run, gets the findings and the
comparison, and hands the documents to `report.build.build_report`; the report itself runs no
rules, no model and no diff."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from ..rules_engine.document import Document
    from ..run import Run


def _findings(run: Run, findings, analyze_rules: bool, config) -> tuple[Document | None, str]:
    """The report's findings document and a line saying where it came from."""
    from ..report.findings import read_findings
    from .findings import analyze

    if findings is not None:
        document = read_findings(findings)
        analyzed = f" (analyzed run: {document.run})"
        if Path(document.run).resolve() != Path(run.path).resolve():
            analyzed += " WARNING: that is not the run this report shows; re-run `trnprof analyze` on it."
        return document, f"Findings loaded from {findings}{analyzed}."
    if analyze_rules:
        return analyze(run, config=config), "Findings of the built-in rule packs, computed for this report."
    return None, ""


def check_page(out) -> None:
    """Fail when the page cannot be made (its JavaScript bundle is not at hand), before any work."""
    from ..report.build import check_destination

    check_destination(Path(out))


def report(
    run: str | Path,
    out,
    *,
    findings=None,
    analyze: bool = True,
    png_dir=None,
    threads: int | None = None,
    baseline=None,
    config=None,
    overwrite: bool = True,
) -> dict:
    """Write the HTML report of `run` to `out` (`trnprof report`); overwrite=False: refuse a file
    there, before any work and when the page is written.

    findings: a saved `trnprof analyze --format json` file to use instead of running the rules;
    analyze=False with no file: no findings (the page says so). png_dir: also write every chart
    there as PNG and SVG. baseline: a run to compare with (adds the comparison section of
    `trnprof diff`). config: a rules config file for the findings. Returns what was written:
    path, bytes, charts, sections without data."""
    from ..atomic import check_replaceable
    from ..diff.document import diff
    from ..engines import open_run
    from ..report.build import build_report
    from .findings import priced

    check_page(out)
    check_replaceable(out, overwrite)
    with open_run(run, threads=threads) as opened:
        opened.materialize()  # the views the report and the rules share, computed once
        document, origin = _findings(opened, findings, analyze, config)
        comparison = None if baseline is None else diff(baseline, opened, new_findings=document, price=priced)
        return build_report(
            opened, out, findings=document, origin=origin, comparison=comparison, png_dir=png_dir, overwrite=overwrite
        )
