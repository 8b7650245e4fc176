"""--fail-if expressions: parsing, one clear error for a bad one, and when a gate trips."""

from __future__ import annotations

import pytest

from trnprof.diff.gates import evaluate, evaluate_gates, parse_gate
from trnprof.errors import TrnprofError


def _document(change=0.08, significant=True, exposed_delta=0.012, new=(), throughput=True):
    def bucket(name, delta):
        return {
            "category": name,
            "base_s": 0.01,
            "new_s": 0.01 + delta,
            "delta_s": delta,
            "change": delta / 0.01,
            "p_value": 0.001 if significant else 0.5,
            "significant": significant,
        }

    return {
        "step_time": {
            "base_s": 0.1,
            "new_s": 0.1 * (1 + change),
            "change": change,
            "p_value": 0.001 if significant else 0.5,
            "significant": significant,
        },
        "throughput": {
            "base": 100.0,
            "new": 100.0 / (1 + change),
            "change": 1 / (1 + change) - 1,
            "significant": significant,
        }
        if throughput
        else None,
        "mfu": None,
        "breakdown": [
            bucket("compute", 0.0),
            bucket("exposed_comm", exposed_delta),
            bucket("input_wait", 0.0),
            bucket("host", 0.0),
            bucket("transfer_exposed", 0.0),
            bucket("compile", 0.0),
            bucket("idle", 0.0),
        ],
        "findings": {"new_details": [{"name": n, "severity": s} for n, s in new]},
    }


@pytest.mark.parametrize(
    "text,kind,threshold",
    [
        ("step_time>+5%", "relative", 0.05),
        ("throughput<-3%", "relative", -0.03),
        ("step_time >= 5 %", None, None),
        ("exposed_comm>+10ms", "absolute", 0.010),
        ("idle>500us", "absolute", 500e-6),
        ("step_time<=-0.2s", "absolute", -0.2),
        ("new_findings>=medium", "severity", 2.0),
        ("new_findings>0", "count", 0.0),
    ],
)
def test_gates_parse(text, kind, threshold):
    if kind is None:  # a space between number and unit is not the documented form
        with pytest.raises(TrnprofError):
            parse_gate(text)
        return
    gate = parse_gate(text)
    assert (gate.kind, gate.threshold) == (kind, pytest.approx(threshold))


@pytest.mark.parametrize(
    "text,says",
    [
        ("step_time=5%", "METRIC OP VALUE"),
        ("latency>5%", "unknown metric"),
        ("step_time>5", "give a unit"),
        ("throughput>5ms", "not a time"),
        ("new_findings>=severe", "severity"),
        ("step_time>fast", "cannot read"),
        ("step_time>+" + "9" * 400 + "%", "not a finite number"),
        ("exposed_comm>" + "9" * 400 + "ms", "not a finite number"),
    ],
)
def test_bad_gates_say_what_is_wrong(text, says):
    with pytest.raises(TrnprofError, match=says):
        parse_gate(text)


def test_a_significant_regression_past_the_threshold_trips():
    results = evaluate_gates(["step_time>+5%", "throughput<-3%", "exposed_comm>+10ms", "step_time>+10%"], _document())
    assert [r["tripped"] for r in results] == [True, True, True, False]


def test_a_change_within_noise_trips_only_under_strict():
    document = _document(significant=False)
    assert not evaluate(parse_gate("step_time>+5%"), document)["tripped"]
    assert evaluate(parse_gate("step_time>+5%"), document)["past_threshold"]
    assert evaluate(parse_gate("step_time>+5%"), document, strict=True)["tripped"]


def test_improvements_do_not_trip_regression_gates():
    document = _document(change=-0.2, exposed_delta=-0.02)
    assert not any(
        r["tripped"] for r in evaluate_gates(["step_time>+5%", "throughput<-3%", "exposed_comm>+1ms"], document)
    )


def test_new_findings_gates_compare_severities_and_counts():
    low_only = _document(new=[("input.starvation", "low")])
    medium = _document(new=[("input.starvation", "low"), ("scale.straggler", "medium")])
    assert not evaluate(parse_gate("new_findings>=medium"), low_only)["tripped"]
    assert evaluate(parse_gate("new_findings>=medium"), medium)["tripped"]
    assert not evaluate(parse_gate("new_findings>=low"), _document())["tripped"]
    assert evaluate(parse_gate("new_findings>1"), medium)["tripped"]


def test_a_metric_the_runs_lack_is_an_error_not_a_pass():
    with pytest.raises(TrnprofError, match="samples per step"):
        evaluate(parse_gate("throughput<-3%"), _document(throughput=False))
