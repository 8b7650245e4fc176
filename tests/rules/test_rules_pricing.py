"""One finding, one price (docs/whatif.md): each rule declares its fix (`fix:`), checked at load;
analyze prices it (execution model, replay, else a bound) and the price is the finding's one
number: its headline impact, its severity, its order. The text never shows two savings."""

from __future__ import annotations

import re

import msgspec
import pytest

from tests.rules.test_rules_loader import rule_dict, write_rule
from trnprof.api import analyze
from trnprof.rules_engine import pricing
from trnprof.rules_engine.document import Document, Finding, Impact
from trnprof.rules_engine.loader import RuleError, load_rule_file, load_rules
from trnprof.rules_engine.render import to_markdown, to_text
from trnprof.rules_engine.spec import FixSpec, Inline, ModelEdit, ModelFix
from trnprof.rules_engine.testing import write_inline
from trnprof.whatif import projections

MEAN_STEP_S = 0.1


def _finding(share: float, projected: dict | None, severity: str = "high", message: str = "") -> Finding:
    return Finding(
        code="OV002",
        name="overlap.low_overlap_ratio",
        pack="overlap",
        severity=severity,
        title="Little of the communication is hidden",
        message=message or f"the exposed transfer measured {share:.0%} of the mean step",
        recommendation="overlap it",
        ranks=[0, 1],
        steps=[0, 1],
        impact=Impact(share * MEAN_STEP_S, share),
        evidence=[],
        projected=projected,
    )


def _replayed(gain: float, **more) -> dict:
    return {
        "method": "replay",
        "change": {"scale": ["communication=0"]},
        "step_time_s": MEAN_STEP_S * (1 - gain),
        "gain_fraction": gain,
        "band": None,
        "gain_band": None,
        "reason": None,
        "note": None,
        "steps": 5,
        **more,
    }


# -- the price is the headline, the severity and the order ------------------------------------------


def test_a_large_measurement_whose_fix_is_priced_near_zero_is_low():
    """The V100 DDP case of issue 35: OV002 measured 21 % of the step, the replay of its fix -0.0 %."""
    priced = pricing.headline(_finding(0.21, _replayed(-0.0004)), FixSpec(), {}, MEAN_STEP_S)
    assert priced.severity == "low"
    assert priced.impact.fraction_of_step == 0.0 and priced.impact.seconds_per_step == 0.0
    assert priced.impact.claimed_fraction_of_step == 0.21 and priced.impact.basis == "replay"


@pytest.mark.parametrize("gain, severity", [(0.04, "low"), (0.05, "medium"), (0.19, "medium"), (0.20, "high")])
def test_severity_reads_the_price_on_the_default_bars(gain, severity):
    priced = pricing.headline(_finding(0.30, _replayed(gain)), FixSpec(), {}, MEAN_STEP_S)
    assert priced.severity == severity
    assert priced.impact.seconds_per_step == pytest.approx(gain * MEAN_STEP_S)


def test_severity_bars_are_the_parameters_the_fix_names_and_never_above_the_rule():
    fix = FixSpec(medium="moderate", high="top")
    params = {"moderate": 0.02, "top": 0.10}
    assert pricing.headline(_finding(0.3, _replayed(0.03)), fix, params, MEAN_STEP_S).severity == "medium"
    assert pricing.headline(_finding(0.3, _replayed(0.12)), fix, params, MEAN_STEP_S).severity == "high"
    # a symptom rule reports at most medium: a large price does not make it high
    capped = pricing.headline(
        _finding(0.3, _replayed(0.5), severity="medium"), FixSpec(), {}, MEAN_STEP_S, ceiling="medium"
    )
    assert capped.severity == "medium"


def test_a_rules_own_info_stays_info_and_a_bound_is_marked():
    assert (
        pricing.headline(_finding(0.3, _replayed(0.3), severity="info"), FixSpec(), {}, MEAN_STEP_S).severity == "info"
    )
    bound = {
        "method": "bound",
        "change": None,
        "step_time_s": None,
        "gain_fraction": 0.3,
        "band": None,
        "gain_band": None,
        "reason": None,
        "assumes": "the idle time goes",
        "note": None,
    }
    priced = pricing.headline(_finding(0.3, bound), FixSpec(), {}, MEAN_STEP_S)
    assert priced.impact.basis == "bound" and priced.severity == "high"
    text = to_text(Document(schema="s", run="r", findings=[priced]))
    assert "up to 30.00 ms/step, 30.0% of step (bound)" in text
    assert text.count("price: a bound, assuming the idle time goes") == 1  # the assumption, stated once


_SAVING = re.compile(r"\d+(\.\d+)?\s?%")


def _block(text: str, code: str) -> list[str]:
    lines = text.splitlines()
    start = next(i for i, line in enumerate(lines) if code in line)
    end = next((i for i in range(start + 1, len(lines)) if not lines[i].startswith(" ")), len(lines))
    return lines[start:end]


def test_the_text_of_a_finding_shows_one_saving():
    """Outside the message (the measurement), a finding's text carries one share of the step: its
    price. The fix line names the change and the method, never a second saving."""
    finding = pricing.headline(_finding(0.21, _replayed(0.004)), FixSpec(), {}, MEAN_STEP_S)
    text = to_text(Document(schema="s", run="r", findings=[finding]))
    outside = [line for line in _block(text, "OV002") if "measured" not in line]
    assert sum(len(_SAVING.findall(line)) for line in outside) == 1, text
    assert "fix worth 400.0 µs/step, 0.4% of step, by replay" in text
    assert "price: replay of the run's dependency graph over 5 steady steps with communication=0" in text
    assert "would save" not in text and "fix this" not in text
    markdown = to_markdown(Document(schema="s", run="r", findings=[finding]))
    assert "fix worth 400.0 µs/step, 0.4% of step, by replay" in markdown and "**How the fix is priced:**" in markdown


def test_findings_are_ordered_by_severity_then_price(tmp_path):
    """Two rules on one run: the one whose fix is worth more comes first at equal severity."""
    folder = tmp_path / "rules"
    for code, name, share, fix in (
        ("TS001", "testpack.first", 0.5, "compute=0.9"),
        ("TS002", "testpack.second", 0.3, "compute=0.5"),
    ):
        sql = f"SELECT rank, step, CAST(dur * {share} AS BIGINT) AS lost_ns FROM steady_breakdown"
        write_rule(folder, rule_dict(code=code, name=name, sql=sql, params={}, severity="high", fix={"replay": [fix]}))
    run = write_inline(
        msgspec.convert(
            {
                "tile": {"ranks": 1, "steps": 3, "period_ns": 1000000},
                "events": {"columns": ["kind", "ts", "dur"], "rows": [["step", 0, 1000000], ["compute", 0, 1000000]]},
            },
            Inline,
        ),
        tmp_path / "run",
    )
    document = analyze(run, rules=[folder], builtin=False)
    # the first rule measured more (50 % vs 30 %) but its fix (compute 10 % faster) is worth 10 %,
    # the second's (compute twice as fast) 50 %: medium and high by price, the second first
    names = [(f.name, f.severity, round(f.impact.fraction_of_step, 3), f.impact.basis) for f in document.findings]
    assert names == [("testpack.second", "high", 0.5, "replay"), ("testpack.first", "medium", 0.1, "replay")]


# -- the fix declared in the rule file, checked at load ---------------------------------------------


@pytest.mark.parametrize(
    "fix, field, says",
    [
        (
            {"replay": ["rank:{rank}=fast"]},
            "fix.replay[0]",
            "factor 'fast' is not a number, 'peers', 'launch' or 'early'",
        ),
        ({"replay": ["colective=0"]}, "fix.replay[0]", "unknown selector 'colective'"),
        ({"replay": ["rank:{a.b}=peers"]}, "fix.replay[0]", "not a plain name"),
        (
            {"model": {"edits": [{"set": {"comm.overlap": True}}], "unchanged": "u"}},
            "fix.model.edits[0].set.comm.overlap",
            "'comm.overlap' is not a key of the Trn1 job description",
        ),
        (
            {"model": {"edits": [{"set": {"precision.compute": "fp64"}}], "unchanged": "u"}},
            "fix.model.edits[0].set.precision.compute",
            "fp64",
        ),
        (
            {"model": {"edits": [{"multiply": {"precision.compute": 2}}], "unchanged": "u"}},
            "fix.model.edits[0].precision.compute",
            "is not a number",
        ),
        (
            {"model": {"edits": [{"remove_faults": ["gremlin"]}], "unchanged": "u"}},
            "fix.model.edits[0].remove_faults",
            "unknown fault kind 'gremlin'",
        ),
        (
            {
                "model": {
                    "edits": [{"multiply": {"input.workers": 2}, "at_most": {"input.workers": "cores"}}],
                    "unchanged": "u",
                }
            },
            "fix.model.edits[0].at_most.input.workers",
            "unknown job limit 'cores'",
        ),
        ({"model": {"edits": [{}], "unchanged": "u"}}, "fix.model.edits[0]", "changes nothing"),
        ({"bound": "b", "high": "top_share"}, "fix.high", "unknown parameter 'top_share'"),
        ({}, "fix", "declares nothing"),
    ],
)
def test_a_bad_fix_is_one_error_line_naming_the_field(tmp_path, fix, field, says):
    path = write_rule(tmp_path, rule_dict(fix=fix))
    with pytest.raises(RuleError) as caught:
        load_rule_file(path, "testpack")
    message = str(caught.value)
    assert "\n" not in message and f": {field}: " in message and says in message, message


def test_a_misspelt_fix_key_is_refused_by_the_format(tmp_path):
    path = write_rule(tmp_path, rule_dict(fix={"replays": ["input=0"]}))
    with pytest.raises(RuleError, match=r"fix.*replays"):
        load_rule_file(path, "testpack")


def test_every_builtin_time_rule_declares_its_fix_and_its_cases_check_the_price():
    rules = {rule.name: rule for rule in load_rules()}
    for rule in rules.values():
        if rule.spec.impact.draws_from is not None:
            assert rule.spec.fix is not None, rule.name
        if rule.spec.fix is not None and rule.spec.fix.replay:
            priced = [
                e
                for case in rule.spec.tests
                if isinstance(case.expect, list)
                for e in case.expect
                if e.priced_by is not None
            ]
            assert priced, f"{rule.name}: no case checks how its fix is priced"


# -- the machinery that applies a declared fix ------------------------------------------------------


def _job(**sections) -> dict:
    from trnprof.model.config import Config, to_dict

    config = to_dict(Config())
    for key, value in sections.items():
        config[key] = {**config.get(key, {}), **value} if isinstance(value, dict) else value
    return config


LOADER = FixSpec(
    model=ModelFix(
        edits=[
            ModelEdit(multiply={"input.workers": 2}, at_most={"input.workers": "spare_vcpus_per_rank"}),
            ModelEdit(multiply={"input.prefetch": 2}),
        ],
        unchanged="nothing left",
    )
)


def test_the_first_edit_that_changes_the_job_is_the_fix():
    # trn1.32xlarge: 128 vCPUs for 32 NeuronCores, 4 per rank, 3 spare for loader workers
    assert projections.model_change(LOADER, _job(input={"workers": 1})) == {"input": {"workers": 2}}
    assert projections.model_change(LOADER, _job(input={"workers": 2})) == {"input": {"workers": 3}}
    assert projections.model_change(LOADER, _job(input={"workers": 3, "prefetch": 2})) == {"input": {"prefetch": 4}}


def test_an_edit_that_changes_nothing_says_why():
    micro = FixSpec(
        model=ModelFix(edits=[ModelEdit(multiply={"batch.micro": 0.5})], unchanged="the micro-batch is 1 already")
    )
    assert projections.model_change(micro, _job(batch={"micro": 4})) == {"batch": {"micro": 2}}
    with pytest.raises(projections.NoFix, match="the micro-batch is 1 already"):
        projections.model_change(micro, _job(batch={"micro": 1}))
    faults = FixSpec(model=ModelFix(edits=[ModelEdit(remove_faults=["straggler"])], unchanged="no straggler fault"))
    job = _job(faults=[{"kind": "straggler", "rank": 3, "slowdown": 1.5}, {"kind": "no_overlap"}])
    assert projections.model_change(faults, job) == {"faults": [{"kind": "no_overlap"}]}
    with pytest.raises(projections.NoFix, match="no straggler fault"):
        projections.model_change(faults, _job())


def test_replay_specs_are_templated_from_the_finding():
    fix = FixSpec(replay=["rank:{rank}=peers", "matmul={factor:.3g}"])
    finding = msgspec.structs.replace(_finding(0.3, None), ranks=[1, 3], evidence=[{"factor": 0.1466253}])
    assert projections.replay_specs(fix, finding) == ["rank:1=peers", "rank:3=peers", "matmul=0.147"]
    with pytest.raises(projections.NoFix, match="no factor"):
        projections.replay_specs(fix, msgspec.structs.replace(finding, evidence=[{"factor": None}]))


def _priced_on_cpu(monkeypatch, fix: FixSpec, gain: float, measured: float = 0.45):
    """A finding that measured `measured` of the step, its fix replayed to `gain` on a CPU run."""
    finding = _finding(measured, None)
    monkeypatch.setattr(
        projections,
        "replay_prices",
        lambda run, fixes: [
            {"change": {"scale": specs}, "step_time_s": 0.0863, "gain_fraction": gain, "steps": 5} for specs in fixes
        ],
    )
    monkeypatch.setattr(projections, "_device_kind", lambda run: "cpu")
    monkeypatch.setattr(projections, "check_within_a_minute", lambda run: None)  # no run to count
    projections.project(None, [finding], {finding.name: fix})
    return finding


def test_cpu_collectives_widen_the_band_once(monkeypatch):
    """On a CPU run, a fix that removes communication also removes contention for the cores the
    graph cannot see: the price is the replay's, its band reaches the measured share, said once."""
    fix = FixSpec(replay=["communication=0"])
    finding = _priced_on_cpu(monkeypatch, fix, 0.137)
    assert finding.projected["gain_fraction"] == 0.137
    assert finding.projected["gain_band"] == {"low": 0.137, "high": 0.45}
    priced = pricing.headline(finding, fix, {}, MEAN_STEP_S)
    text = to_text(Document(schema="s", run="r", findings=[priced]))
    assert "13.7% of step, 13.7%..45.0%, by replay" in text
    assert text.count("contention") == 1
    # the same fix on a GPU run: no contention to speak of, no band
    monkeypatch.setattr(projections, "_device_kind", lambda run: "cuda")
    other = _finding(0.45, None)
    monkeypatch.setattr(projections, "check_within_a_minute", lambda run: None)  # no run to count
    projections.project(None, [other], {other.name: fix})
    assert other.projected["gain_band"] is None and other.projected["note"] is None


def test_a_replay_that_does_more_than_the_fix_is_capped_at_the_measurement(monkeypatch):
    finding = _finding(0.09, None)
    fix = FixSpec(replay=["communication=0"], at_most_measured=True)
    monkeypatch.setattr(
        projections,
        "replay_prices",
        lambda run, fixes: [
            {"change": {"scale": specs}, "step_time_s": 0.07, "gain_fraction": 0.30, "steps": 5} for specs in fixes
        ],
    )
    monkeypatch.setattr(projections, "_device_kind", lambda run: None)
    monkeypatch.setattr(projections, "check_within_a_minute", lambda run: None)  # no run to count
    projections.project(None, [finding], {finding.name: fix})
    assert finding.projected["gain_fraction"] == 0.09 and "capped" in finding.projected["note"]


def test_a_run_without_a_replay_falls_back_to_the_bound_with_the_reason(monkeypatch):
    from trnprof.errors import TrnprofError

    def no_replay(run, fixes):
        raise TrnprofError("run r: no steps with recorded work to replay")

    monkeypatch.setattr(projections, "replay_prices", no_replay)
    finding = _finding(0.3, None)
    monkeypatch.setattr(projections, "check_within_a_minute", lambda run: None)  # no run to count
    projections.project(None, [finding], {finding.name: FixSpec(replay=["communication=0"], bound="all of it hides")})
    assert finding.projected["method"] == "bound" and finding.projected["gain_fraction"] == 0.3
    assert "no steps with recorded work" in finding.projected["reason"]
    assert finding.projected["assumes"] == "all of it hides"


# -- every output shows the one number: diff's findings comparison too ------------------------------


def _tensor_engine_run(path, dtype: str):
    """Rule compute.fp32_matmul's tensor-engine case: FP32 matmuls measured at 60 % of the step,
    but the replay's graph selects matmuls by name, so its fix is priced at 0 on this run."""
    return write_inline(
        msgspec.convert(
            {
                "tile": {"ranks": 1, "steps": 3, "period_ns": 1000000},
                "events": {
                    "columns": ["kind", "name", "lane", "ts", "dur", "args"],
                    "rows": [
                        ["step", "train_step", "host/main", 0, 1000000, None],
                        ["compute", "layers.0.mlp", "nc/tensor", 0, 800000, f'{{"dtype": "{dtype}"}}'],
                        ["compute", "layers.0.mlp", "nc/vector", 800000, 100000, f'{{"dtype": "{dtype}"}}'],
                    ],
                },
            },
            Inline,
        ),
        path,
    )


def test_diff_compares_the_findings_by_their_price(tmp_path):
    from trnprof.api import diff

    base = _tensor_engine_run(tmp_path / "bf16", "bf16")
    new = _tensor_engine_run(tmp_path / "fp32", "fp32")
    document = diff(base, new, analyze_options={"select": ["compute.fp32_matmul"]})
    entry = next(d for d in document["findings"]["new_details"] if d["name"] == "compute.fp32_matmul")
    assert entry["fraction_of_step"] == 0.0 and entry["severity"] == "low"
    assert entry["measured_seconds_per_step"] == pytest.approx(0.6e-3, rel=0.01)  # the measurement, kept apart


def test_the_model_and_the_replay_agree_on_a_fix_both_price(tmp_path):
    """A Trn1 job recompiling every second step (docs/whatif.md, *One finding, one price*): the
    model (the `recompile` fault removed) and the replay (`compile=0`) price the same fix alike."""
    from trnprof.collectors.trn1 import load_config, simulate
    from trnprof.engines import open_run
    from trnprof.whatif.replay import replay_prices

    run = simulate(
        load_config(preset="tiny", faults=[{"kind": "recompile", "every": 2}]), tmp_path / "run", steps=6, seed=0
    )
    finding = next(f for f in analyze(run, select=["compile.recompilation"]).findings)
    assert finding.impact.basis == "execution model"
    with open_run(run) as opened:
        replayed = replay_prices(opened, [["compile=0"]])[0]["gain_fraction"]
    assert finding.projected["gain_fraction"] == pytest.approx(replayed, abs=0.02)


def test_two_findings_with_the_same_fix_are_worth_it_once(monkeypatch):
    """Exposed communication (claimed 1 % of the step: the rest went to low overlap first) and
    low overlap (29 %) share one fix: the price goes to the larger claim, the other is worth 0
    and names whose price it shares."""
    monkeypatch.setattr(
        projections,
        "replay_prices",
        lambda run, fixes: [
            {"change": {"scale": specs}, "step_time_s": 0.077, "gain_fraction": 0.23, "steps": 5} for specs in fixes
        ],
    )
    monkeypatch.setattr(projections, "_device_kind", lambda run: None)
    exposed = msgspec.structs.replace(_finding(0.01, None), code="OV001", name="overlap.exposed_communication")
    overlap = _finding(0.29, None)
    fix = FixSpec(replay=["communication=0"])
    monkeypatch.setattr(projections, "check_within_a_minute", lambda run: None)  # no run to count
    projections.project(None, [exposed, overlap], {exposed.name: fix, overlap.name: fix})
    assert overlap.projected["gain_fraction"] == 0.23 and overlap.projected["note"] is None
    assert exposed.projected["gain_fraction"] == 0.0 and "OV002" in exposed.projected["note"]


def test_no_trn1_question_on_a_run_of_another_platform(tmp_path):
    """A CUDA trace (V100, FP32 sgemm) with no job description: the fix is priced by replay and
    nothing in the finding asks for a Trn1 instance or job."""
    run = write_inline(
        msgspec.convert(
            {
                "tile": {"ranks": 1, "steps": 3, "period_ns": 1000000},
                "job": {"device_kind": "cuda", "device_model": "Tesla V100-SXM2-32GB"},
                "events": {
                    "columns": ["kind", "name", "ts", "dur", "args"],
                    "rows": [
                        ["step", "train_step", 0, 1000000, None],
                        ["compute", "volta_sgemm_128x64_nn", 0, 800000, None],
                    ],
                },
            },
            Inline,
        ),
        tmp_path / "run",
    )
    document = analyze(run, select=["compute.fp32_matmul"])
    finding = document.findings[0]
    assert finding.impact.basis == "replay"
    # the 0.8 ms sgemm 8x faster (V100: 125 FP16 vs 15.7 FP32 TFLOPS): 0.1 ms, a 0.3 ms step
    assert finding.impact.fraction_of_step == pytest.approx(0.8 * (1 - 15.7 / 125), abs=0.01)
    text = to_text(document).lower().split("\n", 1)[1]  # past the header, which names the run folder
    assert "trn1" not in text and "trainium" not in text and "instance" not in text and "execution model" not in text


def test_cpu_collectives_hidden_under_compute_band_down_to_no_gain(monkeypatch):
    """Hiding communication on a CPU run (an overlap fix, `at_most_measured`) leaves the
    collectives' threads on the cores compute needs: the replay's price is an upper bound and the
    band reaches down to nothing (bench/counterfactuals no_overlap: priced 42 %, measured 18 %)."""
    finding = _priced_on_cpu(monkeypatch, FixSpec(replay=["communication=0"], at_most_measured=True), 0.30)
    assert finding.projected["gain_fraction"] == 0.30
    assert finding.projected["gain_band"] == {"low": 0.0, "high": 0.30}
    assert finding.projected["note"] == projections.HIDING


def test_a_run_too_large_to_walk_within_a_minute_is_priced_by_its_bound(tmp_path, monkeypatch):
    """The same V100 sgemm finding on a run whose steps hold more work events than a command walks
    within about a minute: analyze does not replay it (no path computed) and prices the fix as its
    bound, the reason said."""
    from trnprof.critical_path import compute

    run = write_inline(
        msgspec.convert(
            {
                "tile": {"ranks": 1, "steps": 3, "period_ns": 1000000},
                "job": {"device_kind": "cuda", "device_model": "Tesla V100-SXM2-32GB"},
                "events": {
                    "columns": ["kind", "name", "ts", "dur"],
                    "rows": [["step", "train_step", 0, 1000000], ["compute", "volta_sgemm_128x64_nn", 0, 800000]],
                },
            },
            Inline,
        ),
        tmp_path / "run",
    )
    monkeypatch.setattr(compute, "WITHIN_A_MINUTE_EVENTS", 2)
    monkeypatch.setattr(compute.Replayer, "__init__", lambda *a, **k: pytest.fail("walked the graph"))
    finding = analyze(run, select=["compute.fp32_matmul"]).findings[0]
    assert finding.impact.basis == "bound"
    text = " ".join(to_text(Document(schema="s", run="r", findings=[finding])).split())  # unwrapped
    assert "price: a bound (no replay: the run's steps hold" in text
    assert "whose critical path a command computes within about a minute" in text
