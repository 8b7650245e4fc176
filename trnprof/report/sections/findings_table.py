"""The findings table (template `findings.html.j2`): severity, impact, message, recommendation,
affected ranks and steps, and each finding's evidence rows behind a <details> toggle (no script
needed); then the rules not evaluated and the rules that failed."""

from __future__ import annotations

from ...rules_engine.document import Document
from .. import templates
from ..section import Section


def build(findings: Document | None, origin: str) -> Section:
    section = Section("findings", "Findings", intro=origin)
    if findings is None:
        section.empty = "Findings were not computed (run `trnprof analyze RUN --format json` and pass --findings)."
        return section
    section.html = templates.render("findings.html.j2", document=findings)
    return section
