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
# loudly until they are moved back): hiding gradient all-reduces under backward on a CPU.
#
# straggler_pipeline, derived from the physics: rank 0 (the first stage) runs 40 ms of matmuls
# between its last forward send and its first gradient receive, so rank 1's first gradient send
# blocks until rank 0 posts that receive (the raw events: 33.9, 33.7, 35.1, 35.7 and 34.6 ms over
# the five steps). SC001 sizes that as arrival skew at the transfers and prices rank:0=peers,
# which takes rank 0's excess off the work rank 1 does not do (the extra matmuls) first: 41.5 %
# of the step (the replay: 49.8 ms per step against the trace's 85.2 ms). The clean job is the
# same two-stage pipeline without the extra matmuls (capture.py CLEAN_KEEPS): 43.6 ms, a measured
# 51.7 % (the job's clock, 90.3 ms with the problem), so the price lands 20 % under it. Most of
# that is capture noise: the two kept traces' own steps (85.7 and 47.9 ms, medians over ranks)
# differ by 44.1 %, 6 % from the price.
#
# The overlap cases, derived from the traces: the fix is DDP all-reducing 1 MB buckets as
# backward produces them (capture.py FIXED_BY). Hidden under backward on the two cores the two
# ranks' compute threads already fill, the all-reduces do not vanish: the fixed job's six gloo
# all-reduces per step take 40-62 ms a step against the twelve exposed ones' 34-35 ms, and slow
# the backward they share the cores with. The replay hides the transfer for free (an upper bound
# on a CPU; the projection says so and its band reaches down to no gain: projections.HIDING).
HIDDEN_ON_CPU = "on CPU the hidden all-reduces share the cores backward uses; the replay hides them for free"
KNOWN_MISSES = {
    # 12 per-parameter all-reduces after backward: OV002 42 % (the replay, capped at its measured
    # share), measured 18.0 % (71.5 -> 58.7 ms)
    ("found", "no_overlap"): HIDDEN_ON_CPU,
    # DDP's default 25 MB buckets: two all-reduces a step, the second (all but the first MiB of
    # the 14 MB of gradients) after backward: OV002 12.6 %, measured 5.9 % (59.5 -> 56.0 ms)
    ("found", "one_bucket"): HIDDEN_ON_CPU,
}


def cases(test: str):
    return [
        pytest.param(name, marks=pytest.mark.xfail(strict=True, reason=KNOWN_MISSES[(test, name)]))
        if (test, name) in KNOWN_MISSES
        else name
        for name in CASES
    ]


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
    assert {
        "slow_loader",
        "straggler_compute",
        "straggler_python",
        "straggler_sleep",
        "straggler_pipeline",
        "small_ops",
        "no_overlap",
        "one_bucket",
    } <= set(CASES)


@pytest.mark.parametrize("name", cases("found"))
def test_the_problem_is_found_and_priced_as_measured(name, findings_of):
    spec = case(name)
    expected = spec["expected_gain"]
    found = {f.name: f for f in findings_of(CORPUS / name / "problem")}
    assert spec["rule"] in found, f"{name}: {spec['problem']}; found {sorted(found)}"
    finding = found[spec["rule"]]
    assert finding.severity in SEVERE
    assert price(finding) == pytest.approx(expected, rel=TOLERANCE), (
        f"{name}: priced {price(finding)}, measured {expected:+.1%} ({spec['problem']})"
    )


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
            assert price(finding) is not None and price(finding) >= 0.05, (
                f"{finding.name} is {finding.severity} at a price of {price(finding)}"
            )


@pytest.mark.parametrize("name", [n for n in CASES if case(n)["rule"] == "scale.straggler"])
def test_untraced_time_of_the_late_rank_is_priced_once(name, findings_of):
    """The late rank's Python or sleep is its work: SC001 prices it (rank:N=peers), and its
    peers' wait for it is that straggler's cost too, so unexplained idle (CU005) claims no
    second saving on the same time (it claimed 31-34 % of the step on ranks 0-1 beside SC001)."""
    found = {f.name: f for f in findings_of(CORPUS / name / "problem")}
    assert "compute.unexplained_idle" not in found or found["compute.unexplained_idle"].severity not in SEVERE
