"""Sections: a valid Vega-Lite chart when the run has the data, one line saying why not when it
has none; the header and findings table as escaped HTML."""

from __future__ import annotations

import msgspec
import pytest

from tests.conftest import write_inline_run
from trnprof.api import open_run
from trnprof.report.sections import (
    breakdown,
    collectives,
    critical_path,
    findings_table,
    header,
    input_pipeline,
    memory,
    stragglers,
    timeline,
)
from trnprof.rules_engine.document import SCHEMA, Document

CHARTS = (breakdown, timeline, critical_path, collectives, memory, stragglers, input_pipeline)
HOSTILE = "</script><img src=x onerror=alert(1)>"


def _finding(**extra):
    finding = {
        "code": "SC001",
        "name": "scale.straggler",
        "pack": "scale",
        "severity": "high",
        "title": "Slow rank",
        "message": "rank 5 is slow",
        "recommendation": "check its host",
        "ranks": [5],
        "steps": [0, 1, 2, 3],
        "impact": {"seconds_per_step": 0.002, "fraction_of_step": 0.3},
        "evidence": [{"rank": 5, "step": 0, "lost_ns": 2_000_000}],
    }
    return finding | extra


def _document(findings, **extra) -> Document:
    document = {
        "schema": SCHEMA,
        "run": "r",
        "findings": findings,
        "not_evaluated": [],
        "errors": [],
        "rules": [],
        "steps": 4,
        "warmup_steps": [],
        "mean_step_s": None,
        "seconds": 0.0,
        "rule_seconds": {},
    }
    return msgspec.convert(document | extra, Document)


@pytest.mark.parametrize("module", CHARTS, ids=lambda m: m.__name__.rsplit(".", 1)[-1])
def test_every_chart_section_draws_the_sample_run(run, module):
    section = module.build(run)
    assert section.empty is None and section.chart is not None
    spec = section.chart.to_dict(validate=True)  # against Altair's Vega-Lite schema
    assert spec["datasets"] and all(spec["datasets"].values())  # data inline, never a URL
    assert section.notes == []  # small run: nothing sampled
    no_queue = ["No input.queue_depth counter in this run: queue depth not drawn."]
    assert section.gaps == (no_queue if module is input_pipeline else [])


def test_sections_without_data_say_so_in_one_line(tmp_path):
    events = [dict(rank=0, ts=0, dur=100, kind="compute", name="op", lane="nc/tensor")]
    with open_run(write_inline_run(tmp_path / "bare", events)) as bare:
        sections = {m.__name__.rsplit(".", 1)[-1]: m.build(bare) for m in CHARTS}
    assert all(s.chart is None and s.empty and "\n" not in s.empty for s in sections.values())
    assert "no steps" in sections["breakdown"].empty and "no step" in sections["timeline"].empty
    assert sections["collectives"].empty == "No collective or point-to-point events in this run."
    assert sections["memory"].empty == "No device-memory counters (hbm.*) in this run."
    assert sections["input_pipeline"].empty == "No input-pipeline events or queue-depth counters in this run."
    assert "no step" in sections["critical_path"].empty.lower()


def test_critical_path_section_says_what_bounds_the_steps(run):
    section = critical_path.build(run)
    bound = run.sql("SELECT bound_by, COUNT(*) AS n FROM critical_path_steps GROUP BY bound_by ORDER BY n DESC")
    assert section.intro.endswith(
        f"Bound by {bound['bound_by'][0]} in {bound['n'][0]} of 4 steps"
        + ("." if len(bound) == 1 else f", {bound['bound_by'][1]} in {bound['n'][1]} of 4 steps.")
    )
    bars = section.chart.to_dict()["datasets"]
    drawn = sum(row["ns"] for rows in bars.values() for row in rows)
    # the bars add up to the steps' critical paths, which add up to the measured steps
    assert drawn == int(run.sql("SELECT SUM(dur) AS d FROM step_times")["d"][0])


def test_collectives_without_bytes_cannot_show_bandwidth(tmp_path):
    events = [
        dict(
            rank=r,
            ts=0,
            dur=100,
            kind="collective",
            name="ar",
            lane="nc/cc",
            coll_op="all_reduce",
            coll_group="dp",
            coll_seq=0,
        )
        for r in range(2)
    ]
    with open_run(write_inline_run(tmp_path / "nobytes", events)) as bare:
        section = collectives.build(bare)
    assert section.chart is None and section.empty.startswith("1 collective instances, but none with both")


def test_unknown_instance_type_is_noted(tmp_path):
    events = [
        dict(
            rank=r,
            ts=0,
            dur=100,
            kind="collective",
            name="ar",
            lane="nc/cc",
            coll_op="all_reduce",
            coll_group="dp",
            coll_seq=0,
            bytes=1 << 20,
            coll_ranks=2,
        )
        for r in range(2)
    ]
    with open_run(write_inline_run(tmp_path / "unknown", events)) as bare:
        section = collectives.build(bare)
    assert section.chart is not None and section.gaps == [
        "No peak bus bandwidth known for the collective groups (instance type (unknown)): none drawn."
    ]


def test_header_lists_job_facts_and_top_findings(run):
    document = _document(
        [
            _finding(),
            _finding(code="IN001", severity="medium", title="Input"),
            _finding(code="OV001", title="Overlap"),
            _finding(code="ME001", title="Memory"),
        ]
    )
    html = header.build(run, document).html
    assert "<dt>instance type</dt><dd>trn1.32xlarge</dd>" in html and "<dt>world size</dt><dd>8</dd>" in html
    assert html.count("<li>") == 3 and '<a href="#finding-2">Overlap</a>' in html
    assert "2.00 ms/step, 30.0% of step" in html and "1 more in" in html
    assert "Findings were not computed." in header.build(run, None).html


def test_header_states_each_cost_in_its_own_unit(run):
    # a one-time compile and a memory finding cost no time per step: never "0 s per step"
    document = _document(
        [
            _finding(
                code="CM002",
                title="First step",
                impact={"seconds_per_step": 0.0, "fraction_of_step": 0.0, "one_time_seconds": 49.753},
            ),
            _finding(
                code="ME001",
                title="Memory",
                impact={"seconds_per_step": 0.0, "fraction_of_step": 0.0, "bytes": 3 * 2**30},
            ),
        ]
    )
    html = header.build(run, document).html
    assert "49.753 s once" in html and "3.00 GiB of memory" in html and "0 s per step" not in html


def test_findings_table_escapes_and_shows_evidence():
    document = _document(
        [_finding(message=HOSTILE, evidence=[{"name": HOSTILE, "lost_ns": 5}])],
        not_evaluated=[{"code": "CP002", "name": "compile.recompilation", "reason": "no compile events"}],
    )
    section = findings_table.build(document, "from a file")
    assert HOSTILE not in section.html and "&lt;/script&gt;&lt;img src=x onerror=alert(1)&gt;" in section.html
    assert "<summary>evidence (1 rows)</summary>" in section.html and "<td>5</td>" in section.html
    assert '<td class="idx">5</td><td class="idx">0-3</td>' in section.html
    assert "compile.recompilation</code>: no compile events" in section.html


def test_findings_table_without_findings():
    assert findings_table.build(None, "").empty.startswith("Findings were not computed")
    assert "No rule fired" in findings_table.build(_document([]), "").html


def test_input_section_with_queue_depth_only(tmp_path):
    events = [dict(rank=0, ts=0, dur=100, kind="step", name="s", lane="host", step=0)]
    counters = [dict(rank=0, ts=t, name="input.queue_depth", value=2.0, unit="count") for t in (0, 50)]
    with open_run(write_inline_run(tmp_path / "q", events, counters=counters)) as bare:
        section = input_pipeline.build(bare)
    assert section.chart is not None and section.empty is None
    assert section.gaps == ["No input events in this run: wait per step not drawn."]
    assert section.chart.to_dict()["title"] == "input queue depth"
