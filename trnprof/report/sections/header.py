"""The header: the job, its step time, throughput and MFU, and the findings that cost most."""

from __future__ import annotations

from ...info import run_info
from ...rules_engine.document import Document
from .. import limits, queries, templates
from ..format import duration, job_value, share
from ..section import Section


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
        (
            "step time",
            f"typical (median) {duration(step['median'])}, p95 {duration(step['p95'])} "
            f"over {step['steps']:,} steady steps"
            if step
            else "n/a",
        ),
        (
            "effective step",
            f"{duration(step['effective'])} (wall time per steady step, recurring outliers included)"
            if step
            else "n/a",
        ),
        ("warm-up", ", ".join(f"step {w['step']}: {duration(w['seconds'])}" for w in info["warmup"]) or "none"),
        (
            "throughput",
            f"typical {throughput['value']:,.1f}, effective {throughput['effective']:,.1f} {throughput['unit']}"
            if throughput
            else "unknown",
        ),
        (
            "MFU",
            f"typical {share(info['mfu'])}, effective {share(info['effective_mfu'])}"
            if info["mfu"] is not None
            else "unknown",
        ),
    ]


def build(run, findings: Document | None) -> Section:
    top = [] if findings is None else findings.findings[: limits.TOP_FINDINGS]
    more = 0 if findings is None else len(findings.findings) - len(top)
    html = templates.render("summary.html.j2", facts=_facts(run), findings=findings, top=top, more=more)
    return Section("summary", "Summary", html=html)
