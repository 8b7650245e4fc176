"""From a rule's rows to findings: grouping, impact, severity, evidence, messages."""

from __future__ import annotations

import pandas as pd
import pytest

from tests.rules.test_rules_loader import rule_dict, write_rule
from trnprof.rules_engine.document import Finding, Impact
from trnprof.rules_engine.findings import EVIDENCE_ROWS, FindingError, build, compact, finish, impact, render, sort_key
from trnprof.rules_engine.loader import load_rule_file


@pytest.fixture
def rule(tmp_path):
    return load_rule_file(
        write_rule(
            tmp_path,
            rule_dict(
                message="{n_ranks} ranks ({ranks}), steps {steps}, {ms_per_step:.1f} ms, worst rank {rank}, x={x}",
                recommendation="raise {min_share:.0%}",
            ),
        ),
        "testpack",
    )


def _findings(rule, params, frame, n_steps, mean_step_ns, warmup=frozenset()):
    """build, then finish with every claim granted in full (no other finding competes)."""
    found = []
    for draft in build(rule, params, frame, n_steps, mean_step_ns, warmup):
        claim = draft.claim()
        claim.granted = claim.seconds
        found.append(finish(draft, claim, mean_step_ns))
    return found


def _rows(records):
    frame = pd.DataFrame(records)
    frame["_lost"] = frame.get("lost_ns", 0.0)
    return frame


def test_compact_ranges():
    assert compact([5, 0, 1, 2, 7, 8, 2]) == "0-2, 5, 7-8"
    assert compact([]) == "none" and compact([3]) == "3"


def test_impact_takes_the_worst_rank_per_step_and_averages_over_steps():
    rows = _rows(
        [
            {"rank": 0, "step": 0, "lost_ns": 2e6},
            {"rank": 1, "step": 0, "lost_ns": 4e6},
            {"rank": 0, "step": 1, "lost_ns": 1e6},
        ]
    )
    cost = impact(rows, n_steps=4, mean_step_ns=10e6)
    assert cost.seconds_per_step == pytest.approx((4e6 + 1e6) / 4 / 1e9)
    assert cost.fraction_of_step == pytest.approx((4e6 + 1e6) / 4 / 10e6)


def test_a_row_without_step_counts_in_every_step():
    rows = _rows([{"rank": 0, "step": None, "lost_ns": 1e6}, {"rank": 1, "step": 2, "lost_ns": 3e6}])
    assert impact(rows, n_steps=3, mean_step_ns=10e6).seconds_per_step == pytest.approx((3e6 + 1e6 + 1e6) / 3 / 1e9)


def test_without_steps_the_largest_loss_counts_and_the_fraction_is_zero():
    cost = impact(_rows([{"lost_ns": 5e6}, {"lost_ns": 2e6}]), n_steps=0, mean_step_ns=None)
    assert cost == Impact(seconds_per_step=0.005, fraction_of_step=0.0)


def test_one_finding_per_pattern_with_ranks_steps_severity_and_evidence(rule):
    frame = pd.DataFrame(
        [
            {
                "rank": r,
                "step": s,
                "lost_ns": 1e6 * (r + 1),
                "x": r,
                "pattern": "p1" if r < 3 else "p2",
                "severity": "high" if r == 1 else "medium",
            }
            for r in range(5)
            for s in range(3)
        ]
    )
    findings = _findings(rule, {"min_share": 0.1}, frame, n_steps=3, mean_step_ns=10e6)
    assert [f.pattern for f in findings] == ["p1", "p2"]
    p1 = findings[0]
    assert p1.ranks == [0, 1, 2] and p1.steps == [0, 1, 2] and p1.severity == "high"
    assert p1.impact.seconds_per_step == pytest.approx(3e-3)
    assert len(p1.evidence) == EVIDENCE_ROWS and p1.evidence[0]["rank"] == 2
    assert p1.message == "3 ranks (0-2), steps 0-2, 3.0 ms, worst rank 2, x=2"
    assert p1.recommendation == "raise 10%"
    assert findings[1].severity == "medium"


def test_warmup_rows_are_evidence_but_not_impact(rule):
    frame = pd.DataFrame(
        [{"rank": 0, "step": 0, "lost_ns": 9e9, "x": 1}, {"rank": 0, "step": 1, "lost_ns": 1e6, "x": 1}]
    )
    finding = _findings(rule, {"min_share": 0.1}, frame, n_steps=1, mean_step_ns=10e6, warmup={0})[0]
    assert finding.impact.seconds_per_step == pytest.approx(1e-3) and finding.steps == [0, 1]


def test_no_rows_no_finding(rule):
    assert build(rule, {}, pd.DataFrame({"rank": []}), 3, 1.0) == []


@pytest.mark.parametrize(
    "frame, words",
    [
        (pd.DataFrame([{"rank": 0, "severity": "critical", "x": 1}]), "severity holds 'critical'"),
        (pd.DataFrame([{"rank": 0, "lost_ns": "lots", "x": 1}]), "lost_ns must be numeric"),
        (pd.DataFrame([{"rank": "zero", "x": 1}]), "rank must hold integers"),
        (pd.DataFrame([{"rank": 0}]), "template field {x} is not a column"),
    ],
)
def test_unusable_rows_are_a_rule_error(rule, frame, words):
    with pytest.raises(FindingError, match=words.replace("{", r"\{").replace("}", r"\}")):
        _findings(rule, {"min_share": 0.1}, frame, 1, 1.0)


def test_templates_refuse_attribute_access_and_print_nulls():
    with pytest.raises(FindingError, match="not a plain name"):
        render("{x.__class__}", {"x": 1})
    assert render("{x:.1%} of {y}", {"x": None, "y": 2}) == "n/a of 2"


def test_one_time_cost_and_bytes_take_the_largest_row_and_make_a_finding_costly(rule):
    frame = pd.DataFrame(
        [
            {"rank": 0, "step": 0, "one_time_ns": 4e9, "lost_bytes": 1 << 30, "x": 1},
            {"rank": 1, "step": 0, "one_time_ns": 5e9, "lost_bytes": 2 << 30, "x": 1},
        ]
    )
    finding = _findings(rule, {"min_share": 0.1}, frame, n_steps=2, mean_step_ns=10e6)[0]
    assert finding.impact.seconds_per_step == 0 and finding.impact.one_time_seconds == pytest.approx(5.0)
    assert finding.impact.bytes == 2 << 30 and finding.severity == "medium"


def test_a_finding_without_any_cost_is_info(rule):
    frame = pd.DataFrame([{"rank": 0, "step": 0, "x": 1, "severity": "high"}])
    assert _findings(rule, {"min_share": 0.1}, frame, n_steps=2, mean_step_ns=10e6)[0].severity == "info"


def test_sorted_by_severity_then_time_lost():
    def finding(severity, seconds):
        return Finding(
            code="X",
            name="x",
            pack="p",
            severity=severity,
            title="t",
            message="m",
            recommendation="r",
            ranks=[],
            steps=[],
            impact=Impact(seconds, seconds),
            evidence=[],
        )

    found = [
        finding("medium", 9.0),
        finding("info", 50.0),
        finding("high", 0.1),
        finding("high", 0.5),
        finding("low", 99.0),
    ]
    assert [(f.severity, f.impact.seconds_per_step) for f in sorted(found, key=sort_key)] == [
        ("high", 0.5),
        ("high", 0.1),
        ("medium", 9.0),
        ("low", 99.0),
        ("info", 50.0),
    ]
