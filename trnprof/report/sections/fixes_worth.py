"""What the fixes are worth (template `fixes.html.j2`): for each finding whose fix is priced, the
change, the step time the what-if model (or the replay) predicts with it, the gain, its band and
the method;
then the findings whose fix could not be priced, with the reason. The numbers are the findings
document's `projected` fields (trnprof/whatif/projections.py); this section only draws them."""

from __future__ import annotations

from .. import templates
from ..section import Section
from ...rules_engine.document import Document
from ...textfmt import change_text

INTRO = ("What fixing each finding is worth: the execution model fitted to this run's steady-state steps, "
         "re-run with the fix as a config change (trnprof whatif), with a band from the fit's residual; on a run "
         "the model cannot describe, the run's own dependency graph replayed with the fix's time scaled "
         "(trnprof whatif --scale, docs/critical-path.md), without a band.")


def _row(finding) -> dict:
    projected = finding.projected
    return {"code": finding.code, "name": finding.name, "title": finding.title,
            "change": change_text(projected["change"]) if projected.get("change") else "",
            "step_time_s": projected.get("step_time_s"), "gain_fraction": projected.get("gain_fraction"),
            "band": projected.get("band"), "reason": projected.get("reason"), "method": projected.get("method")}


def build(findings: Document | None) -> Section:
    section = Section("fixes", "What the fixes are worth", intro=INTRO)
    if findings is None:
        section.empty = "Findings were not computed, so no fix was priced."
        return section
    rows = [_row(f) for f in findings.findings if f.projected]
    if not rows:
        section.empty = "No finding on this run has a fix the what-if model can price as a config change."
        return section
    priced = sorted((r for r in rows if r["gain_fraction"] is not None), key=lambda r: -r["gain_fraction"])
    section.html = templates.render("fixes.html.j2", priced=priced,
                                    unpriced=[r for r in rows if r["gain_fraction"] is None])
    return section
