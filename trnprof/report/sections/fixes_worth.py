"""What the fixes are worth (template `fixes.html.j2`): for each finding whose fix is priced, the
change, the step time the what-if model (or the replay) predicts with it, the gain (the
finding's one number, its headline impact), its band and the method; then the findings whose fix
could not be priced, with the reason and the bound they carry instead. The numbers are the
findings document's `projected` fields (trnprof/whatif/projections.py); this section only draws
them."""

from __future__ import annotations

from ...rules_engine.document import Document
from ...textfmt import change_text
from .. import templates
from ..section import Section

INTRO = (
    "What fixing each finding is worth, the number each finding shows: the fix its rule declares, priced "
    "by the execution model fitted to this run's steady-state steps (a Trn1 job; trnprof whatif), with a band "
    "from the fit's residual, or else by replaying the run's own dependency graph with the fix's time scaled "
    "(trnprof whatif --scale, docs/critical-path.md); a fix neither prices is listed with the bound its "
    "finding carries instead (docs/whatif.md)."
)


def _row(finding) -> dict:
    projected = finding.projected
    method = projected.get("method")
    gain = projected.get("gain_fraction")
    if finding.impact.basis and gain is not None:
        gain = finding.impact.fraction_of_step  # the finding's headline, the same number
    if method == "bound":
        bound = f"up to {gain:.1%} of the step" if gain is not None else "no bound of step time"
        reason = "; ".join(filter(None, [projected.get("reason"), f"{bound}, assuming {projected.get('assumes')}"]))
        gain = None
    else:
        reason = projected.get("reason")
    return {
        "code": finding.code,
        "name": finding.name,
        "title": finding.title,
        "change": change_text(projected["change"]) if projected.get("change") else "",
        "step_time_s": projected.get("step_time_s"),
        "gain_fraction": gain,
        "band": projected.get("band"),
        "reason": reason,
        "method": method,
    }


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
    section.html = templates.render(
        "fixes.html.j2", priced=priced, unpriced=[r for r in rows if r["gain_fraction"] is None]
    )
    return section
