"""Detection quality (rules/_detection.yaml, rendered in docs/rules/index.md): each fault of the
Trn1 execution model makes its rule the top finding, with the share of the step the table gives,
clearly above the same job without the fault; clean jobs raise nothing above info; every real
Kineto trace (tests/data/kineto) is analyzed without rule errors, with the findings the table
explains. In every case the findings' time per step sums to no more than the mean step."""

from __future__ import annotations

import pytest

from trnprof.collectors.trn1 import load_config, simulate
from trnprof.rules_engine.engine import analyze
from trnprof import yamlio
from trnprof.rules_engine.docs import DETECTION_FILE
from trnprof.rules_engine.loader import builtin_dir

from tests.conftest import KINETO

DATA = yamlio.load((builtin_dir() / DETECTION_FILE).read_text(encoding="utf-8"))
SHARE_TOLERANCE = 0.03
CLEAR_MARGIN = 0.10   # a fault moves its rule's share at least this far beyond the baseline


def _simulated(tmp_path, preset, overrides=(), faults=(), steps=6):
    config = load_config(preset=preset, overrides=list(overrides), faults=list(faults))
    return analyze(simulate(config, tmp_path / "run", steps=steps, seed=0))


def _assert_exclusive(document):
    claimed = sum(f.impact.seconds_per_step for f in document.findings)
    assert claimed <= (document.mean_step_s or 0.0) + 1e-9, [(f.name, f.impact.seconds_per_step)
                                                            for f in document.findings]
    for finding in document.findings:
        if finding.impact.costless():
            assert finding.severity == "info", finding.name


@pytest.mark.parametrize("case", DATA["faults"], ids=[c["fault"]["kind"] for c in DATA["faults"]])
def test_a_fault_makes_its_rule_the_top_finding(tmp_path, case):
    document = _simulated(tmp_path / "fault", case["preset"], case.get("overrides", ()), [case["fault"]],
                          case.get("steps", 6))
    assert document.errors == []
    _assert_exclusive(document)
    summary = [(f.name, f.severity, f.impact.fraction_of_step) for f in document.findings]
    assert document.findings, f"nothing found for {case['fault']}"
    top = document.findings[0]
    assert top.name == case["top"], summary
    assert top.severity in ("medium", "high"), summary
    assert top.impact.fraction_of_step == pytest.approx(case["share"], abs=SHARE_TOLERANCE), summary
    if "rank" in case["fault"]:
        assert top.ranks == [case["fault"]["rank"]]
    if "node" in case["fault"]:
        assert top.pattern == f"node {case['fault']['node']}"


@pytest.mark.parametrize("case", DATA["faults"], ids=[c["fault"]["kind"] for c in DATA["faults"]])
def test_the_same_job_without_the_fault_is_the_baseline(tmp_path, case):
    document = _simulated(tmp_path / "base", case["preset"], case.get("overrides", ()), (), case.get("steps", 6))
    assert document.errors == []
    _assert_exclusive(document)
    same = [f for f in document.findings if f.name == case["top"] and f.severity != "info"]
    if case["baseline_share"] is None:
        assert same == [], [(f.name, f.severity) for f in same]
        return
    share = max(f.impact.fraction_of_step for f in same)
    assert share == pytest.approx(case["baseline_share"], abs=SHARE_TOLERANCE)
    assert case["share"] >= case["baseline_share"] + CLEAR_MARGIN


@pytest.mark.parametrize("case", DATA["clean"], ids=[" ".join([c["preset"], *c.get("overrides", ())]) for c in DATA["clean"]])
def test_a_clean_job_raises_nothing_above_info(tmp_path, case):
    document = _simulated(tmp_path, case["preset"], case.get("overrides", ()))
    assert document.errors == []
    _assert_exclusive(document)
    loud = [(f.name, f.severity) for f in document.findings if f.severity != "info"]
    assert loud == []


@pytest.mark.parametrize("trace", DATA["kineto"], ids=[t["trace"] for t in DATA["kineto"]])
def test_real_kineto_traces_are_analyzed(cli, tmp_path, trace):
    source = KINETO / trace["trace"]
    assert source.exists(), f"test trace missing: {source}"
    ingested = cli("ingest", source, "-o", tmp_path / "run")
    assert ingested.exit_code == 0, ingested.output
    document = analyze(tmp_path / "run")
    assert document.errors == []
    _assert_exclusive(document)
    assert sorted(f.name for f in document.findings if f.severity != "info") == sorted(trace["fired"])
