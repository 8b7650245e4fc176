"""Comparison with a baseline run (`trnprof report NEW --baseline BASE`): the steady-state step
times of both runs side by side, the step breakdown delta, the top regressions by op and the
bus bandwidth per collective size class, drawn
from a `trnprof diff` document (the report computes nothing itself)."""

from __future__ import annotations

import altair as alt
import pandas as pd

from ...diff import tables
from .. import templates
from ..section import Section

COLORS = {"base": "#9ecae9", "new": "#4c78a8"}
WIDTH = 420


def _chart(document: dict) -> alt.Chart | None:
    times = document["step_times_s"]
    frame = pd.DataFrame([{"run": label, "ms": seconds * 1e3} for label in ("base", "new") for seconds in times[label]])
    if frame.empty:
        return None
    color = alt.Color("run:N", scale=alt.Scale(domain=list(COLORS), range=list(COLORS.values())), legend=None)
    x = alt.X("run:N", title=None, sort=["base", "new"], axis=alt.Axis(labelAngle=0))
    y = alt.Y("ms:Q", title="step time (ms)", scale=alt.Scale(zero=False))
    box = alt.Chart(frame).mark_boxplot(extent="min-max", opacity=0.5).encode(x=x, y=y, color=color)
    points = (
        alt.Chart(frame)
        .mark_tick(thickness=2, size=30)
        .encode(
            x=x, y=y, color=color, tooltip=[alt.Tooltip("run:N"), alt.Tooltip("ms:Q", format=",.3f", title="step ms")]
        )
    )
    return (box + points).properties(width=WIDTH, height=260)


def _summary(document: dict) -> str:
    step = document["step_time"]
    parts = [
        f"Baseline {document['base']}: typical step {tables.duration(step['base_s'])} -> "
        f"{tables.duration(step['new_s'])} ({tables.percent(step['change'])}, {tables.verdict(step)}, "
        f"p={step['p_value']:.2g}, {step['base_steps']} vs {step['new_steps']} steady steps)."
    ]
    effective = step.get("effective")
    if effective:
        parts.append(
            f"Effective step (wall time per step): {tables.duration(effective['base_s'])} -> "
            f"{tables.duration(effective['new_s'])} ({tables.percent(effective['change'])}, "
            f"{tables.verdict(effective)})."
        )
    if step["min_p_value"] >= document["alpha"]:
        parts.append(
            f"With {step['base_steps']} and {step['new_steps']} steady steps no change can be significant "
            f"at alpha {document['alpha']:g}: record more steps."
        )
    if document.get("moved_by"):
        parts.append(f"The step time moved with {tables.LABELS[document['moved_by']]}.")
    found = document["findings"]
    if found["new"]:
        parts.append("New findings: " + ", ".join(found["new"]) + ".")
    if found["resolved"]:
        parts.append("Resolved findings: " + ", ".join(found["resolved"]) + ".")
    return " ".join(parts)


def build(document: dict) -> Section:
    section = Section(
        "comparison",
        "Comparison with the baseline",
        intro="Steady-state step times of the baseline and this run (each tick a step), the "
        "step breakdown delta per rank and step, and the ops that regressed most. "
        f"Significance: {document['test']}, alpha {document['alpha']:g}.",
    )
    section.chart = _chart(document)
    if section.chart is None:
        section.gaps.append("No steady-state steps in one of the runs, so there are no step times to compare.")
    section.html = templates.render(
        "comparison.html.j2",
        summary=_summary(document),
        comparable=document["comparable"],
        reasons=document["reasons"],
        notes=document["notes"],
        tables=[
            ("Step breakdown per rank and step", tables.breakdown(document)),
            ("Top regressions by op", tables.ops(document["top_regressions"])),
            ("Collectives by op and size class: bus bandwidth", tables.collectives(document)),
            ("Findings by rule", tables.findings(document)),
        ],
    )
    return section
