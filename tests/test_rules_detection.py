"""Detection quality (rules/_detection.yaml, rendered in docs/rules/index.md): each fault of the
Trn1 execution model makes its rule the top finding; clean jobs raise nothing of medium or
above; every real Kineto trace (tests/data/kineto) is analyzed without rule errors, with the findings the
table explains."""

from __future__ import annotations

import pytest

from trnprof.collectors.trn1 import load_config, simulate
from trnprof.rules_engine import analyze
from trnprof import yamlio
from trnprof.rules_engine.docs import DETECTION_FILE
from trnprof.rules_engine.loader import builtin_dir

from .conftest import KINETO

DATA = yamlio.load((builtin_dir() / DETECTION_FILE).read_text(encoding="utf-8"))


def _simulated(tmp_path, preset, overrides=(), faults=(), steps=6):
    config = load_config(preset=preset, overrides=list(overrides), faults=list(faults))
    return analyze(simulate(config, tmp_path / "run", steps=steps, seed=0))


@pytest.mark.parametrize("case", DATA["faults"], ids=[c["fault"]["kind"] for c in DATA["faults"]])
def test_a_fault_makes_its_rule_the_top_finding(tmp_path, case):
    document = _simulated(tmp_path, case["preset"], case.get("overrides", ()), [case["fault"]], case.get("steps", 6))
    assert document.errors == []
    summary = [(f.name, f.severity, f.impact.fraction_of_step) for f in document.findings]
    assert document.findings, f"nothing found for {case['fault']}"
    top = document.findings[0]
    assert top.name == case["top"], summary
    assert top.severity in ("medium", "high"), summary
    if "rank" in case["fault"]:
        assert top.ranks == [case["fault"]["rank"]]
    if "node" in case["fault"]:
        assert top.pattern == f"node {case['fault']['node']}"


@pytest.mark.parametrize("case", DATA["clean"], ids=[" ".join([c["preset"], *c.get("overrides", ())]) for c in DATA["clean"]])
def test_a_clean_job_raises_nothing_of_medium_or_above(tmp_path, case):
    document = _simulated(tmp_path, case["preset"], case.get("overrides", ()))
    assert document.errors == []
    loud = [(f.name, f.severity) for f in document.findings if f.severity != "low"]
    assert loud == []


@pytest.mark.parametrize("trace", DATA["kineto"], ids=[t["trace"] for t in DATA["kineto"]])
def test_real_kineto_traces_are_analyzed(cli, tmp_path, trace):
    source = KINETO / trace["trace"]
    assert source.exists(), f"test trace missing: {source}"
    ingested = cli("ingest", source, "-o", tmp_path / "run")
    assert ingested.exit_code == 0, ingested.output
    document = analyze(tmp_path / "run")
    assert document.errors == []
    assert sorted(f.name for f in document.findings) == sorted(trace["fired"])
