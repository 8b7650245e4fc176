"""The corpus of measured counterfactuals (tests/data/counterfactuals, captured by
bench/counterfactuals/capture.py): the same real torch CPU job recorded with and without one
problem under `trnprof record`. What fixing the problem is worth was measured, not modelled:

    expected gain = 1 - (clean step) / (problem step)

over the profiled steps' own wall-clock times (the job's clock, printed by the job; medians of
three alternated captures of each). Each case's case.json keeps the figures and what was
injected. The finding that names the problem must print one number, its fix's price, within
+-20 % of that measurement; the clean job must not get the finding at medium or above; and no
finding at medium or above may be worth under 5 % of the step.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from trnprof.api import analyze
from trnprof.collectors.ingest.traces import run_of_traces

CORPUS = Path(__file__).resolve().parents[1] / "data" / "counterfactuals"
CASES = sorted(p.name for p in CORPUS.iterdir() if (p / "case.json").is_file())
TOLERANCE = 0.20
SEVERE = ("medium", "high")
# Cases trnprof gets wrong today, kept in the corpus and run (strict xfail: a fix makes them fail
# loudly until they are moved back): the clean capture of the sleep case gets SC001 at medium on
# rank 0 (a flaw of the capture, below).
#
# straggler_pipeline, derived from the physics: rank 0 (the first stage) runs 40 ms of matmuls
# between its last forward send and its first gradient receive, so rank 1's first gradient send
# blocks ~35 ms every step until rank 0 posts that receive (the raw events: 31.7, 36.9, 36.9,
# 35.0 and ~33 ms over the five steps). SC001 sizes that as arrival skew at the transfers (the
# first side's wait for the later one: 35.4 ms per step net of rank 0's own waits) and prices
# rank:0=peers, which takes rank 0's excess off the work rank 1 does not do (the extra matmuls)
# first: 43.2 % of the step (the replay: 44.9 ms per step against 79.0 ms). The capture's
# "clean" job is flawed as a counterfactual: capture.py runs the clean variant without any
# option, so it is the DDP job (both ranks run all six layers), not the pipeline without its
# straggler; its 42.2 ms happens to sit near the pipeline's balanced step (the replay's 44.9 ms,
# and the problem step less rank 1's blocked send: ~44 ms), so the measured 47.35 % is kept as
# the reference and the price lands 9 % under it.
KNOWN_MISSES = {
    # From the trace: both ranks run the same ops (same names, same counts per step); rank 0's
    # backward matmuls (aten::mm under AddmmBackward0) take 14.6-19.9 ms per step against rank
    # 1's 10.9-13.1, in every one of the five steps, so rank 0 reaches the all-reduces 8.0 ms
    # late per step (rank 1 blocks 5.9-12.7 ms in them) and its replay at rank 1's pace gives
    # 39.7 ms per step against 44.6: 11 %, what the run would have gained. No extra work: the
    # same work ran slower, persistently and beyond the run's step noise (twice its robust
    # spread: 6.8 ms). The cause is outside the job: in the other clean captures the slower
    # rank changes (straggler_python: rank 0's mm +18 %; straggler_compute: rank 1's +54 %), the
    # contention of other processes on the shared 2-core machine, persistent over a 0.2 s
    # capture. Judged by physics the finding is right for this run (a real straggler, priced by
    # what it cost; SC001's advice names CPU contention) and the capture is flawed as a clean
    # reference: the job's own clock puts its three clean captures at 43.0, 41.1 and 37.6 ms
    # (median steps), a spread as large as the price. Kept as a known miss of the corpus.
    ("clean", "straggler_sleep"): "the clean capture itself had a straggler: rank 0's same ops ran ~37 % slower "
                                  "for the whole capture (outside contention), a real 11 % for that run",
}


def cases(test: str):
    return [pytest.param(name, marks=pytest.mark.xfail(strict=True, reason=KNOWN_MISSES[(test, name)]))
            if (test, name) in KNOWN_MISSES else name for name in CASES]


def case(name: str) -> dict:
    return json.loads((CORPUS / name / "case.json").read_text())


@pytest.fixture(scope="module")
def findings_of(tmp_path_factory):
    """Each capture ingested and analyzed once for the module."""
    done = {}

    def of(traces: Path):
        if traces not in done:
            into = tmp_path_factory.mktemp("run") / "run"
            with run_of_traces([traces], run=into) as traced:
                done[traces] = analyze(traced.path).findings
        return done[traces]
    return of


def price(finding) -> float | None:
    """The finding's one number: the share of the step its fix gives back."""
    projected = finding.projected or {}
    return projected.get("gain_fraction")


def test_the_corpus_is_there():
    assert {"slow_loader", "straggler_compute", "straggler_python", "straggler_sleep"} <= set(CASES)


@pytest.mark.parametrize("name", cases("found"))
def test_the_problem_is_found_and_priced_as_measured(name, findings_of):
    spec = case(name)
    expected = spec["expected_gain"]
    found = {f.name: f for f in findings_of(CORPUS / name / "problem")}
    assert spec["rule"] in found, f"{name}: {spec['problem']}; found {sorted(found)}"
    finding = found[spec["rule"]]
    assert finding.severity in SEVERE
    assert price(finding) == pytest.approx(expected, rel=TOLERANCE), \
        f"{name}: priced {price(finding)}, measured {expected:+.1%} ({spec['problem']})"


@pytest.mark.parametrize("name", cases("clean"))
def test_the_clean_job_does_not_get_the_finding(name, findings_of):
    spec = case(name)
    found = {f.name: f for f in findings_of(CORPUS / name / "clean")}
    assert spec["rule"] not in found or found[spec["rule"]].severity not in SEVERE


@pytest.mark.parametrize("name", CASES)
@pytest.mark.parametrize("variant", ["problem", "clean"])
def test_nothing_severe_is_worth_under_five_percent(name, variant, findings_of):
    for finding in findings_of(CORPUS / name / variant):
        if finding.severity in SEVERE:
            assert price(finding) is not None and price(finding) >= 0.05, \
                f"{finding.name} is {finding.severity} at a price of {price(finding)}"


@pytest.mark.parametrize("name", [n for n in CASES if case(n)["rule"] == "scale.straggler"])
def test_untraced_time_of_the_late_rank_is_priced_once(name, findings_of):
    """The late rank's Python or sleep is its work: SC001 prices it (rank:N=peers), and its
    peers' wait for it is that straggler's cost too, so unexplained idle (CU005) claims no
    second saving on the same time (it claimed 31-34 % of the step on ranks 0-1 beside SC001)."""
    found = {f.name: f for f in findings_of(CORPUS / name / "problem")}
    assert "compute.unexplained_idle" not in found or found["compute.unexplained_idle"].severity not in SEVERE
