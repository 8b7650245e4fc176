"""Findings of two runs by rule name: new, resolved (the quantity they measure dropped), no longer
reported (it did not), and those in both whose impact changed."""

from __future__ import annotations

import msgspec

from ..rules_engine.document import Document
from ..rules_engine.spec import severity_rank


def _by_rule(document: Document) -> dict[str, dict]:
    """Per rule name: its worst severity, summed impact over its findings (patterns of one rule
    are different places, e.g. one per straggler) and the code and title."""
    rules: dict[str, dict] = {}
    for finding in document.findings:
        entry = rules.setdefault(
            finding.name,
            {
                "name": finding.name,
                "code": finding.code,
                "title": finding.title,
                "severity": finding.severity,
                "seconds_per_step": 0.0,
                "fraction_of_step": 0.0,
                "measured_seconds_per_step": 0.0,
                "draws_from": finding.impact.draws_from,
                "one_time_seconds": 0.0,
                "bytes": 0,
                "patterns": [],
            },
        )
        if severity_rank(finding.severity) > severity_rank(entry["severity"]):
            entry["severity"] = finding.severity
        entry["seconds_per_step"] += finding.impact.seconds_per_step
        entry["fraction_of_step"] += finding.impact.fraction_of_step
        entry["one_time_seconds"] = max(entry["one_time_seconds"], finding.impact.one_time_seconds)
        entry["bytes"] = max(entry["bytes"], finding.impact.bytes)
        entry["measured_seconds_per_step"] = max(
            entry["measured_seconds_per_step"], finding.impact.measured_seconds_per_step
        )
        if finding.pattern:
            entry["patterns"].append(finding.pattern)
    return rules


def _dropped(entry: dict, breakdown: list[dict]) -> tuple[bool, str | None]:
    """Whether the quantity a base-only finding measured dropped in the new run: the step
    breakdown category its time is drawn from fell significantly, or below what the finding
    measured. A finding without a category (memory, one-time costs) counts as dropped: the rule
    no longer finding it is all the runs say."""
    category = entry.get("draws_from")
    row = next((r for r in breakdown if r["category"] == category), None)
    if row is None or row["new_s"] is None or row["base_s"] is None:
        return True, None
    if (row["delta_s"] < 0 and row["significant"]) or row["new_s"] < entry["measured_seconds_per_step"] / 2:
        return True, None
    return False, (
        f"no longer reported, but {category} did not drop ({row['base_s'] * 1e3:.2f} -> "
        f"{row['new_s'] * 1e3:.2f} ms per step)"
    )


def compare(base_doc: Document, new_doc: Document, breakdown: list[dict] | None = None) -> dict:
    """`new`: rule names found only in the new run; `resolved`: found only in the base run and
    the quantity they measure dropped (`breakdown`: the diff's breakdown rows); `unreported`:
    found only in the base run, not evaluated or failed in the new one, or their quantity did not
    drop (with the `reason`); `changed`: rules in both, with both impacts."""
    base, new = _by_rule(base_doc), _by_rule(new_doc)
    changed = []
    for name in sorted(set(base) & set(new)):
        b, n = base[name], new[name]
        changed.append(
            {
                "name": name,
                "code": n["code"],
                "base_severity": b["severity"],
                "new_severity": n["severity"],
                "base_s": b["seconds_per_step"],
                "new_s": n["seconds_per_step"],
                "delta_s": n["seconds_per_step"] - b["seconds_per_step"],
                "base_fraction": b["fraction_of_step"],
                "new_fraction": n["fraction_of_step"],
                "base_once_s": b["one_time_seconds"],
                "new_once_s": n["one_time_seconds"],
                "base_bytes": b["bytes"],
                "new_bytes": n["bytes"],
            }
        )
    changed.sort(key=lambda row: -abs(row["delta_s"]))
    new_names = sorted(set(new) - set(base), key=lambda k: (-severity_rank(new[k]["severity"]), k))
    gone = sorted(set(base) - set(new), key=lambda k: (-severity_rank(base[k]["severity"]), k))
    unjudged = {item.name: "not evaluated in the new run: " + item.reason for item in new_doc.not_evaluated}
    unjudged.update({item.name: "failed in the new run: " + item.error for item in new_doc.errors})
    resolved, unreported = [], []
    for name in gone:
        dropped, reason = (False, unjudged[name]) if name in unjudged else _dropped(base[name], breakdown or [])
        if dropped:
            resolved.append(name)
        else:
            unreported.append({**base[name], "reason": reason})
    return {
        "new": new_names,
        "resolved": resolved,
        "changed": changed,
        "new_details": [new[k] for k in new_names],
        "resolved_details": [base[k] for k in resolved],
        "unreported": unreported,
        "errors": {"base": msgspec.to_builtins(base_doc.errors), "new": msgspec.to_builtins(new_doc.errors)},
    }
