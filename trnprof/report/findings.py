"""The report's findings when they come from a file: a saved `trnprof analyze --format json`
document, checked, as the rule engine's typed `Document` (schema `trnprof.findings/1`).
`trnprof.api.report` otherwise runs the rules on the spot, or passes none (the page then says
findings were not computed)."""

from __future__ import annotations

from pathlib import Path

from ..rules_engine.document import Document, read_document


def read_findings(path: str | Path) -> Document:
    """A saved findings document, checked; one TrnprofError line when it is not one."""
    return read_document(path)
