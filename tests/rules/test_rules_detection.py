"""Detection quality (rules/_detection.yaml, rendered in docs/rules/index.md): each fault of the
Trn1 execution model makes its rule the top finding, claiming the share of the step the table
gives, clearly above the same job without the fault, and priced (its one number, `trnprof
analyze`'s) within 20 % of what its fix is worth by the same job run fixed; clean jobs raise
nothing above info; every real Kineto trace (tests/data/kineto) is analyzed without rule errors,
with the findings the table explains. In every case the findings' claims per step sum to no more
than the mean step."""

from __future__ import annotations

import pytest

from tests.conftest import KINETO
from trnprof import yamlio
from trnprof.api import analyze, open_run
from trnprof.collectors.trn1 import load_config, simulate
from trnprof.rules_engine.docs import DETECTION_FILE
from trnprof.rules_engine.loader import builtin_dir

DATA = yamlio.load((builtin_dir() / DETECTION_FILE).read_text(encoding="utf-8"))
SHARE_TOLERANCE = 0.03
CLEAR_MARGIN = 0.10  # a fault moves its rule's share at least this far beyond the baseline
PRICE_TOLERANCE = 0.20  # issue 35: a finding's price within 20 % of the measured counterfactual


def _run(tmp_path, preset, overrides=(), faults=(), steps=6):
    config = load_config(preset=preset, overrides=list(overrides), faults=list(faults))
    return simulate(config, tmp_path / "run", steps=steps, seed=0)


def _simulated(tmp_path, preset, overrides=(), faults=(), steps=6):
    return analyze(_run(tmp_path, preset, overrides, faults, steps))


def _claimed(finding) -> float:
    claimed = finding.impact.claimed_seconds_per_step
    return finding.impact.seconds_per_step if claimed is None else claimed


def _claimed_share(finding) -> float:
    claimed = finding.impact.claimed_fraction_of_step
    return finding.impact.fraction_of_step if claimed is None else claimed


def _wall_per_step(path) -> float:
    """Mean steady wall time per step (view step_slots: a step and the time before the next)."""
    with open_run(path) as run:
        return float(
            run.sql(
                "SELECT AVG(s.slot) FROM step_slots AS s JOIN step_phases AS p USING (step) WHERE NOT p.warmup"
            ).iloc[0, 0]
        )


def _assert_exclusive(document):
    claimed = sum(_claimed(f) for f in document.findings)
    assert claimed <= (document.mean_step_s or 0.0) + 1e-9, [(f.name, _claimed(f)) for f in document.findings]
    for finding in document.findings:  # no cost of its own: no claim, no one-time time, no bytes
        if not (_claimed(finding) or finding.impact.one_time_seconds or finding.impact.bytes):
            assert finding.severity == "info", finding.name


@pytest.mark.parametrize("case", DATA["faults"], ids=[c["fault"]["kind"] for c in DATA["faults"]])
def test_a_fault_makes_its_rule_the_top_finding(tmp_path, case):
    document = _simulated(
        tmp_path / "fault", case["preset"], case.get("overrides", ()), [case["fault"]], case.get("steps", 6)
    )
    assert document.errors == []
    _assert_exclusive(document)
    summary = [(f.name, f.severity, f.impact.fraction_of_step, _claimed_share(f)) for f in document.findings]
    assert document.findings, f"nothing found for {case['fault']}"
    top = document.findings[0]
    assert top.name == case["top"], summary
    assert top.severity in ("medium", "high"), summary
    assert _claimed_share(top) == pytest.approx(case["share"], abs=SHARE_TOLERANCE), summary
    if "rank" in case["fault"]:
        assert top.ranks == [case["fault"]["rank"]]
    if "node" in case["fault"]:
        assert top.pattern == f"node {case['fault']['node']}"


PRICED = [c for c in DATA["faults"] if c["price"] is not None]


@pytest.mark.parametrize("case", PRICED, ids=[c["fault"]["kind"] for c in PRICED])
def test_the_top_findings_price_is_what_running_the_job_fixed_saves(tmp_path, case):
    """The derivation: the same job run with the fix (the fault removed, or the change the fix
    makes: `fixed_overrides`), its mean steady wall time per step over the faulty job's."""
    steps = case.get("steps", 6)
    faulty = _run(tmp_path / "fault", case["preset"], case.get("overrides", ()), [case["fault"]], steps)
    fixed_overrides = [*case.get("overrides", ()), *case.get("fixed_overrides", ())]
    fixed = _run(
        tmp_path / "fixed",
        case["preset"],
        fixed_overrides,
        [case["fault"]] if case.get("fixed_overrides") else [],
        steps,
    )
    worth = 1 - _wall_per_step(fixed) / _wall_per_step(faulty)
    assert worth == pytest.approx(case["price"], abs=SHARE_TOLERANCE)  # the table's figure holds
    top = analyze(faulty).findings[0]
    assert top.name == case["top"] and top.impact.basis is not None
    assert top.impact.fraction_of_step == pytest.approx(worth, rel=PRICE_TOLERANCE), (top.impact, top.projected)


@pytest.mark.parametrize("case", DATA["faults"], ids=[c["fault"]["kind"] for c in DATA["faults"]])
def test_the_same_job_without_the_fault_is_the_baseline(tmp_path, case):
    document = _simulated(tmp_path / "base", case["preset"], case.get("overrides", ()), (), case.get("steps", 6))
    assert document.errors == []
    _assert_exclusive(document)
    same = [f for f in document.findings if f.name == case["top"] and f.severity != "info"]
    if case["baseline_share"] is None:
        assert same == [], [(f.name, f.severity) for f in same]
        return
    share = max(_claimed_share(f) for f in same)
    assert share == pytest.approx(case["baseline_share"], abs=SHARE_TOLERANCE)
    assert case["share"] >= case["baseline_share"] + CLEAR_MARGIN


@pytest.mark.parametrize(
    "case", DATA["clean"], ids=[" ".join([c["preset"], *c.get("overrides", ())]) for c in DATA["clean"]]
)
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
