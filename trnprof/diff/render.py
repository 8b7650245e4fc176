"""The diff document as terminal text or as Markdown fit for a pull-request comment."""

from __future__ import annotations

from ..textfmt import markdown_text, terminal
from . import tables


def _summary(document: dict) -> list[str]:
    step = document["step_time"]
    lines = [
        f"base {document['base']} ({document['world_size']['base']} ranks, {step['base_steps']} steady steps)",
        f"new  {document['new']} ({document['world_size']['new']} ranks, {step['new_steps']} steady steps)",
    ]
    if not document["comparable"]:
        lines.append("NOT COMPARABLE: " + "; ".join(document["reasons"]))
    lines += [f"note: {note}" for note in document["notes"]]
    if step["min_p_value"] >= document["alpha"]:
        lines.append(
            f"note: {step['base_steps']} and {step['new_steps']} steady steps are too few for any change "
            f"to be significant at alpha {document['alpha']:g}; record more steps (or gate with --strict)"
        )
    return lines


def _gate_line(result: dict) -> str:
    state = "TRIPPED" if result["tripped"] else "passed"
    value, kind = result["value"], result.get("kind")
    shown = (
        tables.percent(value)
        if kind == "relative"
        else tables.signed_duration(value) + "/step"
        if kind == "absolute"
        else str(value)
    )
    if result.get("from_zero"):
        shown = "up from 0 in the base"
    if result.get("view") == "effective":
        shown += " (effective step: wall time per step)"
    extra = ""
    if result.get("past_threshold") and not result["tripped"]:
        extra = " (past the threshold but within noise)"
    return f"{state:<8} {result['gate']}  value {shown}{extra}"


def _text_table(rows: list[dict]) -> list[str]:
    if not rows:
        return ["  none"]
    columns = list(rows[0])
    widths = {c: max(len(c), *(len(str(r[c])) for r in rows)) for c in columns}
    lines = ["  " + "  ".join(c.ljust(widths[c]) for c in columns)]
    lines += ["  " + "  ".join(str(r[c]).ljust(widths[c]) for c in columns) for r in rows]
    return [line.rstrip() for line in lines]


def to_text(document: dict, gates: list[dict] | None = None) -> str:
    lines = _summary(document)
    for title, rows in tables.sections(document):
        lines += ["", title + ":"] + _text_table(rows)
    if gates:
        lines += ["", "gates:"] + ["  " + _gate_line(g) for g in gates]
    return terminal("\n".join(lines))


def _cell(value) -> str:
    return markdown_text(value)


def _code(value) -> str:
    """A code span that no value can close early (its backticks become quotes; one line)."""
    return "`" + terminal(" ".join(str(value).split())).replace("`", "'").replace("|", "\\|") + "`"


def _md_table(rows: list[dict]) -> list[str]:
    if not rows:
        return ["none"]
    columns = list(rows[0])
    return ["| " + " | ".join(columns) + " |", "|" + "---|" * len(columns)] + [
        "| " + " | ".join(_cell(r[c]) for c in columns) + " |" for r in rows
    ]


def to_markdown(document: dict, gates: list[dict] | None = None) -> str:
    step = document["step_time"]
    head = f"**Step time {tables.percent(step['change'])}** ({tables.verdict(step)})"
    if document["findings"]["new"]:
        head += f", new findings: {', '.join(_code(n) for n in document['findings']['new'])}"
    lines = ["## trnprof diff", "", head + ".", ""] + [f"- {_cell(line)}" for line in _summary(document)]
    if gates:
        lines += ["", "| gate | result | value |", "|---|---|---|"]
        lines += [
            f"| {_code(g['gate'])} | {'**tripped**' if g['tripped'] else 'passed'} | "
            f"{_cell(_gate_line(g).split('value ', 1)[1])} |"
            for g in gates
        ]
    for title, rows in tables.sections(document):
        lines += ["", f"### {title}", ""] + _md_table(rows)
    lines += ["", f"_Significance: {document['test']}, alpha {document['alpha']:g}._"]
    return "\n".join(lines) + "\n"
