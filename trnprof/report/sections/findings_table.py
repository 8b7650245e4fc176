"""The findings table: severity, impact, message, recommendation, affected ranks and steps, and
each finding's evidence rows behind a <details> toggle (no script needed)."""

from __future__ import annotations

from ..escape import text
from ..format import duration, index_list, job_value, share
from ..section import Section


def _evidence(rows: list[dict]) -> str:
    if not rows:
        return ""
    columns = list(dict.fromkeys(k for row in rows for k in row))
    head = "".join(f"<th>{text(c)}</th>" for c in columns)
    body = "".join("<tr>" + "".join(f"<td>{text(job_value(row.get(c)))}</td>" for c in columns) + "</tr>"
                   for row in rows)
    return (f"<details><summary>evidence ({len(rows)} rows)</summary>"
            f'<table class="evidence"><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table></details>')


def _row(index: int, f: dict) -> str:
    impact = f["impact"]
    return (f'<tr id="finding-{index}">'
            f'<td class="sevcell"><span class="sev sev-{text(f["severity"])}">{text(f["severity"])}</span></td>'
            f'<td class="num">{text(duration(impact["seconds_per_step"]))}/step<br>'
            f'{text(share(impact["fraction_of_step"]))}</td>'
            f'<td><b>{text(f["title"])}</b> <code>{text(f["code"])} {text(f["name"])}</code>'
            f'<p>{text(f["message"])}</p>{_evidence(f["evidence"])}</td>'
            f'<td>{text(f["recommendation"] or "")}</td>'
            f'<td class="idx">{text(index_list(f["ranks"]))}</td><td class="idx">{text(index_list(f["steps"]))}</td></tr>')


def _list(title: str, items: list[str]) -> str:
    return f"<h3>{text(title)}</h3><ul>{''.join(f'<li>{i}</li>' for i in items)}</ul>" if items else ""


def build(findings: dict | None, origin: str) -> Section:
    section = Section("findings", "Findings", intro=origin)
    if findings is None:
        section.empty = "Findings were not computed (run `trnprof analyze RUN --format json` and pass --findings)."
        return section
    if findings["findings"]:
        head = "".join(f"<th>{h}</th>" for h in ("severity", "impact", "finding", "recommendation", "ranks", "steps"))
        section.html = (f'<table class="findings"><thead><tr>{head}</tr></thead>'
                        f'<tbody>{"".join(_row(i, f) for i, f in enumerate(findings["findings"]))}</tbody></table>')
    else:
        section.html = "<p>No rule fired on this run.</p>"
    section.html += _list("Rules not evaluated on this run", [
        f"<code>{text(n['name'])}</code>: {text(n['reason'])}" for n in findings["not_evaluated"]])
    section.html += _list("Rules that failed", [
        f"<code>{text(e['name'])}</code>: {text(e['error'])}" for e in findings["errors"]])
    return section
