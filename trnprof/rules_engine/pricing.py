"""One finding, one price: a finding's headline impact is what its recommended fix is worth.

`trnprof.api.analyze` prices each finding's fix (trnprof/whatif/projections.py fills
`projected`); `headline` then makes that price the finding's `impact.seconds_per_step` and
`fraction_of_step`, keeps the exclusive claim in `impact.claimed_*` (the measurement stays in
the message), and grades the severity on the price: a rule's own `info` (not persistent, noise)
stays info; otherwise high from the high bar, medium from the medium bar, else low (5 % and 20 %
of the step, or the parameters the rule's `fix:` names), never above the most severe the rule
reports (its `severity` or the row's: a symptom such as unexplained idle time is at most
medium). A bound is graded the same way and marked as one (`impact.basis` = "bound").
Findings that cost no step time (memory, one-time
costs) keep their impact and severity. The rule engine never prices: it only reads the price.
"""

from __future__ import annotations

import msgspec

from .claims import HIGH_SHARE, MEDIUM_SHARE
from .document import Finding
from .spec import SEVERITIES, FixSpec, severity_rank


def bars(fix: FixSpec | None, params: dict) -> tuple[float, float]:
    """(medium, high) shares of the step the price is graded against."""
    medium = float(params[fix.medium]) if fix and fix.medium else MEDIUM_SHARE
    high = float(params[fix.high]) if fix and fix.high else HIGH_SHARE
    return medium, high


def band(fraction: float, medium: float, high: float) -> str:
    if fraction >= high:
        return "high"
    return "medium" if fraction >= medium else "low"


def headline(
    finding: Finding, fix: FixSpec | None, params: dict, mean_step_s: float | None, ceiling: str = "high"
) -> Finding:
    """`finding` with its price as the headline impact and the severity the price earns, at most
    the rule's own `ceiling` (its `severity`) or the finding's severity, whichever is higher: the
    most severe the rule reports."""
    projected = finding.projected
    if not projected or projected.get("gain_fraction") is None or not finding.impact.seconds_per_step:
        return finding
    fraction = round(max(float(projected["gain_fraction"]), 0.0), 6)  # as stored: 1 - 0.8 is 20 %, not below
    seconds = fraction * mean_step_s if mean_step_s else 0.0
    impact = msgspec.structs.replace(
        finding.impact,
        seconds_per_step=round(seconds, 9),
        fraction_of_step=round(fraction, 6),
        claimed_seconds_per_step=finding.impact.seconds_per_step,
        claimed_fraction_of_step=finding.impact.fraction_of_step,
        basis=projected["method"],
    )
    severity = (
        finding.severity
        if finding.severity == "info"
        else SEVERITIES[
            min(
                severity_rank(band(fraction, *bars(fix, params))),
                max(severity_rank(ceiling), severity_rank(finding.severity)),
            )
        ]
    )
    return msgspec.structs.replace(finding, impact=impact, severity=severity)
