"""Findings of two runs by rule name: new, resolved, and those in both whose impact changed."""

from __future__ import annotations

import msgspec

from ..rules_engine.document import Document
from ..rules_engine.spec import severity_rank


def _by_rule(document: Document) -> dict[str, dict]:
    """Per rule name: its worst severity, summed impact over its findings (patterns of one rule
    are different places, e.g. one per straggler) and the code and title."""
    rules: dict[str, dict] = {}
    for finding in document.findings:
        entry = rules.setdefault(finding.name, {"name": finding.name, "code": finding.code,
                                                "title": finding.title, "severity": finding.severity,
                                                "seconds_per_step": 0.0, "fraction_of_step": 0.0,
                                                "patterns": []})
        if severity_rank(finding.severity) > severity_rank(entry["severity"]):
            entry["severity"] = finding.severity
        entry["seconds_per_step"] += finding.impact.seconds_per_step
        entry["fraction_of_step"] += finding.impact.fraction_of_step
        if finding.pattern:
            entry["patterns"].append(finding.pattern)
    return rules


def compare(base_doc: Document, new_doc: Document) -> dict:
    """`new` and `resolved`: rule names found in only one run (with their details in
    `new_details` / `resolved_details`); `changed`: rules in both, with both impacts."""
    base, new = _by_rule(base_doc), _by_rule(new_doc)
    changed = []
    for name in sorted(set(base) & set(new)):
        b, n = base[name], new[name]
        changed.append({"name": name, "code": n["code"], "base_severity": b["severity"],
                        "new_severity": n["severity"], "base_s": b["seconds_per_step"],
                        "new_s": n["seconds_per_step"], "delta_s": n["seconds_per_step"] - b["seconds_per_step"],
                        "base_fraction": b["fraction_of_step"], "new_fraction": n["fraction_of_step"]})
    changed.sort(key=lambda row: -abs(row["delta_s"]))
    new_names = sorted(set(new) - set(base), key=lambda k: (-severity_rank(new[k]["severity"]), k))
    resolved = sorted(set(base) - set(new), key=lambda k: (-severity_rank(base[k]["severity"]), k))
    return {"new": new_names, "resolved": resolved, "changed": changed,
            "new_details": [new[k] for k in new_names], "resolved_details": [base[k] for k in resolved],
            "errors": {"base": msgspec.to_builtins(base_doc.errors), "new": msgspec.to_builtins(new_doc.errors)}}
