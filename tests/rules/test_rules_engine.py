"""analyze(): the findings document (the JSON contract), requirements, parameters, warm-up."""

from __future__ import annotations

import json
import shutil

import pytest

from tests.conftest import REPO
from trnprof.api import open_run
from trnprof.rules_engine.document import SCHEMA, to_json_bytes
from trnprof.rules_engine.engine import analyze
from trnprof.rules_engine.loader import load_rules
from trnprof.units import GIB


@pytest.fixture(scope="module")
def document(busy_run):
    return analyze(busy_run)


def test_the_document_follows_the_json_contract(document, busy_run):
    assert document.schema == SCHEMA == "trnprof.findings/1" and document.run == str(busy_run)
    saved = json.loads(to_json_bytes(document))  # plain JSON, no NaN
    json.dumps(saved, allow_nan=False)
    for finding in saved["findings"]:
        assert set(finding) >= {
            "code",
            "name",
            "pack",
            "severity",
            "title",
            "message",
            "recommendation",
            "ranks",
            "steps",
            "impact",
            "evidence",
        }
    for finding in document.findings:
        assert finding.impact.seconds_per_step >= 0 and finding.impact.fraction_of_step >= 0
        assert finding.severity in ("info", "low", "medium", "high")
        assert all(isinstance(r, int) for r in finding.ranks + finding.steps)
    for item in document.not_evaluated:
        assert item.code and item.name and item.reason
    assert document.errors == []


def test_findings_name_ranks_steps_and_cost(document):
    by_name = {f.name: f for f in document.findings}
    comm = by_name["overlap.low_overlap_ratio"]  # the 3 ms all-reduce after compute could run under it
    assert comm.severity == "high" and comm.ranks == [0, 1, 2, 3] and comm.steps == [1, 2, 3]  # 0: warm-up
    assert comm.impact.seconds_per_step == pytest.approx(0.003)
    assert comm.impact.fraction_of_step == pytest.approx(0.3)
    starvation = by_name["input.starvation"]
    assert starvation.severity == "high" and starvation.impact.fraction_of_step == pytest.approx(0.2)
    memory = by_name["memory.hbm_pressure"]
    assert memory.ranks == [3] and memory.severity == "medium" and "95%" in memory.message
    assert {"rank": 3}.items() <= memory.evidence[0].items()
    assert memory.impact.seconds_per_step == 0 and memory.impact.bytes == pytest.approx(15.2 * GIB, rel=0.01)


def test_each_lost_second_is_claimed_once(document):
    """The exposed all-reduce is claimed by the more specific overlap.low_overlap_ratio; the
    rules that measured the same time name it instead of claiming it again."""
    by_name = {f.name: f for f in document.findings}
    for name in ("overlap.exposed_communication", "collectives.low_bus_bandwidth"):
        assert by_name[name].related == ["overlap.low_overlap_ratio"]
        assert by_name[name].impact.seconds_per_step == 0 and by_name[name].severity == "info"
    assert sum(f.impact.seconds_per_step for f in document.findings) <= document.mean_step_s


def test_findings_are_sorted_by_severity_then_time(document):
    order = [(f.severity, f.impact.seconds_per_step) for f in document.findings]
    ranks = {"high": 0, "medium": 1, "low": 2, "info": 3}
    assert order == sorted(order, key=lambda x: (ranks[x[0]], -x[1]))
    assert document.findings[0].name == "overlap.low_overlap_ratio"


def test_rules_without_their_signal_are_listed_not_guessed(document):
    skipped = {item.name: item.reason for item in document.not_evaluated}
    assert "compute.low_mfu" in skipped and "FLOPs" in skipped["compute.low_mfu"]
    assert "pipeline" in skipped["scale.pipeline_bubble"]
    evaluated = set(document.rules) - set(skipped)
    assert "input.starvation" in evaluated and len(document.rules) == len(load_rules())


def test_a_rule_whose_flag_is_false_has_none_of_its_tables_computed(busy_run, tmp_path):
    """The run has no device profile: the device rules are not evaluated, and the views only
    they read (throttling, the device's utilization) are never computed or stored."""
    run_dir = shutil.copytree(busy_run, tmp_path / "run")
    with open_run(run_dir) as run:
        document = analyze(run)
        skipped = {item.name: item.reason for item in document.not_evaluated}
        assert "device_profile" in skipped["device.throttling"] and "device_profile" in skipped["device.recompute"]
        assert not run.is_stored("throttling") and not run.is_stored("device_utilization")
        assert run.is_stored("signals") and run.is_stored("step_breakdown")


def test_warmup_step_is_left_out_of_the_step_count(document):
    assert document.warmup_steps == [0] and document.steps == 3
    assert document.mean_step_s == pytest.approx(0.01)


def test_set_moves_a_threshold(busy_run):
    document = analyze(busy_run, select=["input.starvation"], set=["input.starvation.high_share=0.5"])
    assert [f.severity for f in document.findings] == ["medium"]
    document = analyze(busy_run, select=["input.starvation"], set={"input.starvation.moderate_share": 0.5})
    assert document.findings == []


def test_select_ignore_and_an_open_run(busy_run):
    with open_run(busy_run) as run:
        document = analyze(run, select=["input", "overlap"], ignore=["IN002"])
    assert set(document.rules) == {"input.starvation", "overlap.exposed_communication", "overlap.low_overlap_ratio"}


def test_config_file_options(busy_run, tmp_path):
    config = tmp_path / "trnprof.yaml"
    config.write_text("select: [input]\nset: {input.starvation.high_share: 0.9}\n")
    document = analyze(busy_run, config=config)
    assert {f.name: f.severity for f in document.findings} == {"input.starvation": "medium"}


def test_the_synthetic_sample_run_is_analyzed_without_errors(sample_run):
    document = analyze(sample_run)
    assert document.errors == []
    names = {f.name for f in document.findings} | {n.name for n in document.not_evaluated}
    assert names <= set(document.rules)
    assert "input.starvation" in {f.name for f in document.findings}


def test_a_run_without_events_lists_the_rules_that_need_them_as_not_evaluated(cli, tmp_path):
    """neuron-monitor output holds counters only: no step and no event to judge."""
    ingested = cli("ingest", REPO / "tests" / "data" / "neuron" / "neuron_monitor.jsonl", "-o", tmp_path / "run")
    assert ingested.exit_code == 0, ingested.output
    document = analyze(tmp_path / "run")
    assert document.errors == [] and document.findings == [] and document.steps == 0
    need_steps = {rule.name for rule in load_rules() if "steps" in rule.spec.requires}
    assert need_steps and need_steps <= {item.name for item in document.not_evaluated}
    assert cli("analyze", tmp_path / "run").exit_code == 0


def test_a_run_that_is_not_a_run_is_one_error(tmp_path):
    with pytest.raises(Exception, match="run not found"):
        analyze(tmp_path / "missing")
