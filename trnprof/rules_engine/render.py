"""Render a findings document as text (terminal), JSON or Markdown; SARIF lives in `sarif.py`."""

from __future__ import annotations

import textwrap

from trnprof.textfmt import compact, cost, duration, gain_line, markdown_table, terminal
from trnprof.textfmt import markdown_text as md

from .document import Document, Finding
from .spec import SEVERITIES

NOT_JUDGED = (
    "not judged: the run has no whole step (no step events, or only steps the trace cut at its "
    "start or end; `trnprof info` lists them): profile at least one whole training step"
)


def _cost(finding: Finding) -> str:
    return cost(finding.impact, finding.projected)


def _related(finding: Finding) -> str:
    return f"time first claimed by {', '.join(finding.related)}" if finding.related else ""


def _counts(findings: list[Finding]) -> str:
    counts = {s: sum(f.severity == s for f in findings) for s in reversed(SEVERITIES)}
    parts = [f"{n} {s}" for s, n in counts.items() if n]
    return f"{len(findings)} finding{'s' if len(findings) != 1 else ''}" + (f" ({', '.join(parts)})" if parts else "")


def _header(document: Document) -> str:
    steps = f"{document.steps} steps"
    if document.warmup_steps:
        steps += f" after warm-up (step {compact(document.warmup_steps)})"
    if document.mean_step_s:
        steps += f", mean step {duration(document.mean_step_s)}"
    return f"{document.run}: {steps}, {len(document.rules)} rules, {_counts(document.findings)}"


def _label(finding: Finding) -> str:
    return f"{finding.code} {finding.name}" + (f" [{finding.pattern}]" if finding.pattern else "")


def _where(finding: Finding) -> str:
    where = [f"ranks {compact(finding.ranks)}"] if finding.ranks else []
    return "; ".join(where + ([f"steps {compact(finding.steps)}"] if finding.steps else []))


def to_text(document: Document, *, width: int = 100) -> str:
    lines = [_header(document)] + (["", NOT_JUDGED] if not document.steps else [])
    wrap = lambda text: textwrap.fill(text, width, initial_indent=" " * 8, subsequent_indent=" " * 8)  # noqa: E731
    for finding in document.findings:
        lines += [
            "",
            f"{finding.severity.upper():<7} {_label(finding)}  ({_cost(finding)})",
            wrap(finding.title + ". " + finding.message),
        ]
        if _where(finding):
            lines.append(" " * 8 + _where(finding))
        if finding.related:
            lines.append(" " * 8 + _related(finding))
        lines.append(wrap("fix: " + finding.recommendation))
        if gain_line(finding):
            lines.append(wrap(gain_line(finding)))
    if document.not_evaluated:
        lines += ["", f"not evaluated ({len(document.not_evaluated)}):"]
        lines += [f"  {item.name}: {item.reason}" for item in document.not_evaluated]
    if document.errors:
        lines += ["", f"rule errors ({len(document.errors)}):"]
        lines += [f"  {item.name}: {item.error}" for item in document.errors]
    if document.steps and not document.findings and not document.errors:
        lines += ["", "no findings"]
    return terminal("\n".join(lines))


def _table(rows: list[dict]) -> list[str]:
    if not rows:
        return []
    columns = list(rows[0])
    return markdown_table([[row.get(c) for c in columns] for row in rows], columns)


def to_markdown(document: Document) -> str:
    """Every value from the run or a rule (names, messages, evidence) is escaped (`markdown_text`)."""
    lines = ["# trnprof findings", "", md(_header(document)), ""]
    if not document.steps:
        lines += [md(NOT_JUDGED), ""]
    if document.findings:
        lines += markdown_table(
            [
                [
                    f.severity,
                    f"{f.code} {f.name}",
                    _cost(f),
                    compact(f.ranks) if f.ranks else "",
                    compact(f.steps) if f.steps else "",
                ]
                for f in document.findings
            ],
            ["severity", "rule", "impact", "ranks", "steps"],
        )
    for finding in document.findings:
        suffix = f" [{finding.pattern}]" if finding.pattern else ""
        lines += [
            "",
            f"## {md(f'{finding.code} {finding.name}{suffix}: {finding.title}')}",
            "",
            f"**{md(finding.severity)}**, {md(_cost(finding))}.",
            "",
            md(finding.message),
            "",
            *([f"Related: {md(_related(finding))}.", ""] if finding.related else []),
            f"**How to fix:** {md(finding.recommendation)}",
            "",
        ]
        if gain_line(finding):
            lines += [f"**How the fix is priced:** {gain_line(finding)}", ""]  # trnprof's numbers and config keys
        if finding.evidence:
            lines += ["Evidence (worst rows):", ""] + _table(finding.evidence)
    if document.not_evaluated:
        lines += ["", "## Not evaluated", ""] + [f"- {md(i.name)}: {md(i.reason)}" for i in document.not_evaluated]
    if document.errors:
        lines += ["", "## Rule errors", ""] + [f"- {md(i.name)}: {md(i.error)}" for i in document.errors]
    return "\n".join(lines) + "\n"
