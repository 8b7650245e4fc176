"""Where the report's findings come from: a saved `trnprof analyze --format json` document, the
rule engine run on the spot, or nothing (the page then says findings were not computed). Both
are the rule engine's typed `Document` (schema `trnprof.findings/1`)."""

from __future__ import annotations

from pathlib import Path

from ..rules_engine.document import Document, read_document


def read_findings(path: str | Path) -> Document:
    """A saved findings document, checked; one TrnprofError line when it is not one."""
    return read_document(path)


def from_engine(run, config=None) -> Document:
    """Run the rules (every built-in rule, or as the rules `config` file says) over the open run
    and return its findings document."""
    from ..rules_engine import analyze
    return analyze(run, config=config)
