"""The header: the job, its step time, throughput and MFU, and the findings that cost most."""

from __future__ import annotations

from .. import limits, queries
from ..escape import text
from ..format import duration, job_value, share
from ..section import Section
from ...info import run_info


def _facts(run) -> list[tuple[str, str]]:
    info = run_info(run)
    job = info["job"] or {}
    step = info["step_time_s"]
    throughput = info["throughput"]
    return [
        ("source", job_value(info["source"])),
        ("model", job_value(job.get("model"))),
        ("instance type", job_value(queries.instance_type(run))),
        ("nodes", job_value(job.get("nodes"))),
        ("world size", job_value(info["world_size"])),
        ("parallelism", job_value(job.get("parallelism") or job.get("parallel"))),
        ("precision", job_value(job.get("precision"))),
        ("steps", job_value(info["steps"])),
        ("step time", f"median {duration(step['median'])}, p95 {duration(step['p95'])}" if step else "n/a"),
        ("throughput", f"{throughput['value']:,.1f} {throughput['unit']}" if throughput else "unknown"),
        ("MFU", share(info["mfu"]) if info["mfu"] is not None else "unknown"),
    ]


def _top_findings(findings: dict | None) -> str:
    if findings is None:
        return '<p class="muted">Findings were not computed.</p>'
    top = findings["findings"][: limits.TOP_FINDINGS]
    if not top:
        return '<p class="muted">No findings: no rule fired on this run.</p>'
    items = []
    for index, f in enumerate(top):
        impact = f["impact"]
        items.append(
            f'<li><span class="sev sev-{text(f["severity"])}">{text(f["severity"])}</span> '
            f'<a href="#finding-{index}">{text(f["title"])}</a> '
            f'<span class="impact">{text(duration(impact["seconds_per_step"]))} per step '
            f'({text(share(impact["fraction_of_step"]))} of step time)</span></li>')
    more = len(findings["findings"]) - len(top)
    tail = f'<p class="muted">{more} more in <a href="#findings">Findings</a>.</p>' if more > 0 else ""
    return f'<ol class="top-findings">{"".join(items)}</ol>{tail}'


def build(run, findings: dict | None) -> Section:
    rows = "".join(f"<div><dt>{text(k)}</dt><dd>{text(v)}</dd></div>" for k, v in _facts(run))
    html = (f'<dl class="facts">{rows}</dl><h3>Top findings</h3>{_top_findings(findings)}')
    return Section("summary", "Summary", html=html)
