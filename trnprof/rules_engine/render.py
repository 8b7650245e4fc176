"""Render a findings document as text (terminal), JSON or Markdown; SARIF lives in `sarif.py`."""

from __future__ import annotations

import textwrap

from trnprof.textfmt import compact, duration, markdown_table

from .spec import SEVERITIES


def _cost(finding: dict) -> str:
    impact = finding["impact"]
    if not impact["seconds_per_step"]:
        return "no time cost measured"
    return f"{impact['fraction_of_step']:.1%} of step, {duration(impact['seconds_per_step'])}/step"


def _counts(findings: list[dict]) -> str:
    counts = {s: sum(f["severity"] == s for f in findings) for s in reversed(SEVERITIES)}
    parts = [f"{n} {s}" for s, n in counts.items() if n]
    return f"{len(findings)} finding{'s' if len(findings) != 1 else ''}" + (f" ({', '.join(parts)})" if parts else "")


def _header(document: dict) -> str:
    mean = document.get("mean_step_s")
    steps = f"{document.get('steps', 0)} steps"
    if document.get("warmup_steps"):
        steps += f" after warm-up (step {compact(document['warmup_steps'])})"
    if mean:
        steps += f", mean step {duration(mean)}"
    return f"{document['run']}: {steps}, {len(document['rules'])} rules, {_counts(document['findings'])}"


def to_text(document: dict, *, width: int = 100) -> str:
    lines = [_header(document)]
    wrap = lambda text: textwrap.fill(text, width, initial_indent=" " * 8, subsequent_indent=" " * 8)  # noqa: E731
    for finding in document["findings"]:
        label = f"{finding['code']} {finding['name']}" + (f" [{finding['pattern']}]" if finding.get("pattern") else "")
        lines += ["", f"{finding['severity'].upper():<7} {label}  ({_cost(finding)})",
                  wrap(finding["title"] + ". " + finding["message"])]
        where = []
        if finding["ranks"]:
            where.append(f"ranks {compact(finding['ranks'])}")
        if finding["steps"]:
            where.append(f"steps {compact(finding['steps'])}")
        if where:
            lines.append(" " * 8 + "; ".join(where))
        lines.append(wrap("fix: " + finding["recommendation"]))
    if document["not_evaluated"]:
        lines += ["", f"not evaluated ({len(document['not_evaluated'])}):"]
        lines += [f"  {item['name']}: {item['reason']}" for item in document["not_evaluated"]]
    if document["errors"]:
        lines += ["", f"rule errors ({len(document['errors'])}):"]
        lines += [f"  {item['name']}: {item['error']}" for item in document["errors"]]
    if not document["findings"] and not document["errors"]:
        lines += ["", "no findings"]
    return "\n".join(lines)


def _table(rows: list[dict]) -> list[str]:
    if not rows:
        return []
    columns = list(rows[0])
    return markdown_table([[row.get(c) for c in columns] for row in rows], columns)


def to_markdown(document: dict) -> str:
    lines = ["# trnprof findings", "", _header(document), ""]
    if document["findings"]:
        lines += _table([{"severity": f["severity"], "rule": f"{f['code']} {f['name']}",
                          "impact": _cost(f), "ranks": compact(f["ranks"]) if f["ranks"] else "",
                          "steps": compact(f["steps"]) if f["steps"] else ""} for f in document["findings"]])
    for finding in document["findings"]:
        suffix = f" [{finding['pattern']}]" if finding.get("pattern") else ""
        lines += ["", f"## {finding['code']} {finding['name']}{suffix}: {finding['title']}", "",
                  f"**{finding['severity']}**, {_cost(finding)}.", "", finding["message"], "",
                  f"**How to fix:** {finding['recommendation']}", ""]
        if finding["evidence"]:
            lines += ["Evidence (worst rows):", ""] + _table(finding["evidence"])
    if document["not_evaluated"]:
        lines += ["", "## Not evaluated", ""] + [f"- `{i['name']}`: {i['reason']}" for i in document["not_evaluated"]]
    if document["errors"]:
        lines += ["", "## Rule errors", ""] + [f"- `{i['name']}`: {i['error']}" for i in document["errors"]]
    return "\n".join(lines) + "\n"



