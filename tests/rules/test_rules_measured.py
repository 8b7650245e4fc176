"""Findings state the measurement and the exclusive claim apart: a finding cut short by more
specific findings still says what its rows measured, then how much of it is left to it; no
message prints a positive figure as zero."""

from __future__ import annotations

import re

import pytest

from trnprof.api import analyze, open_run
from trnprof.collectors.trn1 import load_config, simulate
from trnprof.rules_engine.findings import render

JOB = ["cluster.instance=trn1.2xlarge", "cluster.nodes=2", "batch.global=32", "batch.micro=4", "run.steps=6"]


@pytest.fixture(scope="module")
def slow_link(tmp_path_factory):
    path = tmp_path_factory.mktemp("measured") / "link"
    config = load_config(preset="tiny", overrides=JOB, faults=[{"kind": "slow_link", "node": 1, "factor": 4}])
    simulate(config, path)
    return path, analyze(path)


def test_a_finding_cut_short_states_its_measurement_then_its_claim(slow_link):
    path, document = slow_link
    [exposed] = [f for f in document.findings if f.name == "overlap.exposed_communication"]
    assert exposed.related, "more specific findings claim the exposed communication first"
    with open_run(path) as run:  # exposed transfer: exposed communication less the waits, worst rank per step
        truth = run.sql("""SELECT AVG(worst) / 1e9 AS s FROM (
            SELECT b.step, MAX(GREATEST(b.exposed_comm - x.wait_exposed, 0)) AS worst
            FROM steady_breakdown AS b JOIN comm_exposure AS x ON x.rank = b.rank AND x.step = b.step
            GROUP BY b.step)""").iloc[0, 0]
    assert exposed.impact.measured_seconds_per_step == pytest.approx(truth, rel=1e-6)
    assert exposed.impact.seconds_per_step < exposed.impact.measured_seconds_per_step
    assert f"({truth * 1e3:.2f} ms per step" in exposed.message
    if exposed.impact.seconds_per_step > 0:  # a part is left: the sentence states it
        claimed = re.search(r"([\d.]+) ms per step of it \((\d+)%\) is not explained by ([^,]+)", exposed.message)
        assert claimed and float(claimed.group(1)) == pytest.approx(exposed.impact.seconds_per_step * 1e3, abs=0.01)
        assert claimed.group(3) == exposed.related[0]
    else:  # the slow link claims all of it first (scale.slow_link is never silent): said, not printed as 0
        assert f"All of it ({truth * 1e3:.2f} ms per step) is explained by {exposed.related[0]}" in exposed.message


def test_no_message_prints_zero_for_a_positive_figure(slow_link):
    _, document = slow_link
    for finding in document.findings:
        if finding.impact.measured_seconds_per_step > 0:
            # time figures (a ratio may truly be 0 %, e.g. no communication overlapped)
            assert not re.search(r"(?<![\d.])0(\.0+)? ?(% of the mean step|ms)", finding.message), finding.message


@pytest.mark.parametrize(
    "template, value, expected",
    [
        ("{x:.0%}", 0.003, "0.3%"),
        ("{x:.2f} ms", 0.0004, "0.0004 ms"),
        ("{x:.0%}", 0.0, "0%"),
        ("{x:.1f}", 12.34, "12.3"),
        ("{x:.0%}", 0.25, "25%"),
    ],
)
def test_positive_figures_get_the_digits_they_need(template, value, expected):
    assert render(template, {"x": value}) == expected


def _document(findings, not_evaluated=()):
    from trnprof.rules_engine.document import SCHEMA, Document

    return Document(
        schema=SCHEMA,
        run="r",
        findings=list(findings),
        not_evaluated=list(not_evaluated),
        errors=[],
        rules=[],
        steps=10,
        warmup_steps=[],
        mean_step_s=1.0,
        seconds=0.0,
        rule_seconds={},
    )


def _exposed(measured_s: float):
    from trnprof.rules_engine.document import Finding, Impact

    return Finding(
        code="OV001",
        name="overlap.exposed_communication",
        pack="overlap",
        severity="high",
        title="t",
        message="m",
        recommendation="r",
        ranks=[0],
        steps=[1],
        impact=Impact(0.0, 0.0, measured_seconds_per_step=measured_s, draws_from="exposed_comm"),
        evidence=[],
    )


@pytest.mark.parametrize(
    "base_s, new_s, significant, resolved",
    [
        (0.638, 0.638, False, False),  # exposed communication the same in both runs: not resolved
        (0.638, 0.200, True, True),  # it dropped beyond noise
        (0.638, 0.250, False, True),  # it fell below half of what the finding measured
    ],
)
def test_a_finding_is_resolved_only_when_its_quantity_dropped(base_s, new_s, significant, resolved):
    from trnprof.diff.findings import compare

    breakdown = [
        {
            "category": "exposed_comm",
            "base_s": base_s,
            "new_s": new_s,
            "delta_s": new_s - base_s,
            "change": new_s / base_s - 1,
            "significant": significant,
        }
    ]
    result = compare(_document([_exposed(0.6)]), _document([]), breakdown)
    assert (result["resolved"] == ["overlap.exposed_communication"]) is resolved
    assert bool(result["unreported"]) is not resolved
    if not resolved:
        assert "did not drop" in result["unreported"][0]["reason"]


def test_a_rule_not_evaluated_in_the_new_run_is_not_resolved():
    from trnprof.diff.findings import compare
    from trnprof.rules_engine.document import NotEvaluated

    result = compare(
        _document([_exposed(0.6)]),
        _document([], [NotEvaluated(name="overlap.exposed_communication", reason="no collectives")]),
        [],
    )
    assert result["resolved"] == [] and "not evaluated" in result["unreported"][0]["reason"]
