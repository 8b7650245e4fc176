"""Exclusive impacts: every lost second of a step is claimed by one finding.

Each rule declares the step_breakdown category its time at stake is drawn from and how specific
a cause it names (`impact: {draws_from, specificity}` in the rule file). The engine grants the
findings' claims most specific first (then the larger claim first): a finding gets at most what
is left of its category's time per step (mean over the steady steps of the largest value over
ranks) and of the mean steady step itself, so the findings' seconds per step sum to no more
than the step. A finding that got less than it measured names the findings that claimed first
(`related`), and its severity is capped by what it kept; one left with no cost of any kind is
`info`.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import pandas as pd

from trnprof.textfmt import duration

from .spec import CATEGORIES, SEVERITIES, severity_rank

# Severity bands for a claim cut short by a more specific finding, as shares of the mean step:
# the bars every pack uses by default (5 % of the step worth a look, after TensorFlow Profiler's
# input-bound bar; 20 % among the first causes to fix).
MEDIUM_SHARE = 0.05
HIGH_SHARE = 0.20
_EPS_S = 1e-9


@dataclass
class Claim:
    """One finding's request: what its rows measured, where it draws from, how specific it is."""

    name: str
    seconds: float
    draws_from: str | None
    specificity: int
    severity: str
    granted: float = 0.0
    related: list[str] = field(default_factory=list)


def budgets(breakdown: pd.DataFrame) -> dict[str, float]:
    """Seconds per steady step of each category: per step the largest over ranks (the step waits
    for its slowest rank), averaged over the steps. `breakdown` is steady_breakdown."""
    if breakdown.empty:
        return {c: 0.0 for c in CATEGORIES}
    worst = breakdown.groupby("step")[list(CATEGORIES)].max()
    return {c: float(worst[c].mean()) / 1e9 for c in CATEGORIES}


def _band(fraction: float) -> str:
    if fraction >= HIGH_SHARE:
        return "high"
    return "medium" if fraction >= MEDIUM_SHARE else "low"


def grant(claims: list[Claim], budget: dict[str, float], mean_step_s: float | None) -> None:
    """Fill each claim's `granted` and `related`, most specific first. A claim drawing from
    several categories (`idle+compute`) takes from each in turn."""
    left = dict(budget)
    step_left = mean_step_s or 0.0
    takers: dict[str | None, list[str]] = {}
    for claim in sorted(claims, key=lambda c: (-c.specificity, -c.seconds, c.name)):
        categories = claim.draws_from.split("+") if claim.draws_from else []
        pool = sum(left.get(c, 0.0) for c in categories) if categories else float("inf")
        claim.granted = max(min(claim.seconds, pool, step_left), 0.0)
        if claim.granted < claim.seconds - _EPS_S:
            before = (
                [n for c in categories for n in takers.get(c, [])]
                if categories and pool <= step_left
                else [n for names in takers.values() for n in names]
            )
            claim.related = sorted(set(before) - {claim.name})
        step_left -= claim.granted
        unpaid = claim.granted
        for category in categories:
            paid = min(left.get(category, 0.0), unpaid)
            left[category] = left.get(category, 0.0) - paid
            unpaid -= paid
            if paid > 0:
                takers.setdefault(category, []).append(claim.name)
        if not categories and claim.granted > 0:
            takers.setdefault(None, []).append(claim.name)


def graded(severity: str, cut_short: bool, fraction: float, costless: bool) -> str:
    """The severity a finding keeps: info without any cost; capped by the share it kept when a
    more specific finding claimed part of its time."""
    if costless:
        return "info"
    if cut_short:
        return SEVERITIES[min(severity_rank(severity), severity_rank(_band(fraction)))]
    return severity


def claim_sentence(claimed_s: float, measured_s: float, related: list[str]) -> str:
    """What is left of a measurement to a finding after more specific ones claimed first: the
    message states the measurement, this sentence the exclusive claim."""
    others = ", ".join(related) or "more specific findings"
    if claimed_s <= _EPS_S:
        return f"All of it ({duration(measured_s)} per step) is explained by {others}, which claimed it first."
    return (
        f"{duration(claimed_s)} per step of it ({claimed_s / measured_s:.0%}) is not explained by {others}, "
        "which claimed the rest first."
    )
