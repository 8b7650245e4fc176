"""`trnprof diff` on runs of the execution model: two seeds of one job differ by noise only; a
straggler is a significant regression with the straggler finding new; different world sizes
compare per rank; different models are not comparable."""

from __future__ import annotations

import json
import re

import pytest

import trnprof
from tests.diff.diff_runs import simulate_job
from trnprof.rules_engine.spec import severity_rank

STRAGGLER = [{"kind": "straggler", "rank": 3, "slowdown": 1.5}]
GATES = ["step_time>+5%", "throughput<-3%", "exposed_comm>+1ms", "new_findings>=medium"]


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    folder = tmp_path_factory.mktemp("diff")
    return {
        "seed1": simulate_job(folder / "seed1", seed=1),
        "seed2": simulate_job(folder / "seed2", seed=2),
        "straggler": simulate_job(folder / "straggler", seed=1, faults=STRAGGLER),
    }


@pytest.fixture(scope="module")
def noise(runs):
    return trnprof.api.diff(runs["seed1"], runs["seed2"])


@pytest.fixture(scope="module")
def straggler(runs):
    return trnprof.api.diff(runs["seed1"], runs["straggler"])


def test_two_seeds_differ_by_noise_only(noise):
    assert not noise["step_time"]["significant"] and abs(noise["step_time"]["change"]) < 0.01
    assert noise["throughput"]["significant"] is False and noise["mfu"]["significant"] is False
    assert not any(row["significant"] for row in noise["breakdown"])
    assert not any(row["significant"] for row in noise["top_regressions"] + noise["top_improvements"])
    assert noise["findings"]["new"] == [] and noise["findings"]["resolved"] == []
    assert noise["comparable"] and noise["moved_by"] is None


def test_every_gate_passes_on_two_seeds(runs, cli):
    result = cli("diff", runs["seed1"], runs["seed2"], *[a for g in GATES for a in ("--fail-if", g)])
    assert result.exit_code == 0, result.output
    assert "TRIPPED" not in result.output and result.output.count("passed") == len(GATES)


def test_a_straggler_is_a_significant_regression(straggler):
    step = straggler["step_time"]
    assert step["significant"] and step["change"] > 0.05
    assert straggler["throughput"]["change"] < -0.05 and straggler["throughput"]["significant"]
    assert "scale.straggler" in straggler["findings"]["new"]
    # the other ranks wait for the straggler in the gradient all-reduce: exposed communication
    assert straggler["moved_by"] == "exposed_comm"
    top = straggler["top_regressions"][0]
    assert top["kind"] == "collective" and top["name"].endswith("all_reduce") and top["significant"]
    # the straggler's compute, per rank and step: one rank of 32 at 1.5x adds 1.6% on average
    compute = next(row for row in straggler["breakdown"] if row["category"] == "compute")
    assert compute["significant"] and compute["change"] == pytest.approx(0.5 / 32, rel=0.1)


def test_the_step_time_gate_exits_1_on_the_straggler(runs, cli):
    result = cli("diff", runs["seed1"], runs["straggler"], "--fail-if", "step_time>+5%", "--fail-if", "step_time>+50%")
    assert result.exit_code == 1
    assert re.search(r"TRIPPED  step_time>\+5%  value \+\d+\.\d%", result.output)
    assert "passed   step_time>+50%" in result.output


def test_the_reverse_diff_is_an_improvement_that_trips_nothing(runs, cli):
    result = cli(
        "diff", runs["straggler"], runs["seed1"], "--format", "json", *[a for g in GATES for a in ("--fail-if", g)]
    )
    assert result.exit_code == 0
    document = json.loads(result.output)
    assert document["step_time"]["change"] < -0.05 and document["step_time"]["significant"]
    assert document["findings"]["resolved"] == ["scale.straggler"]
    assert document["top_improvements"][0]["name"].endswith("all_reduce")


def test_json_holds_the_documented_contract(runs, cli):
    result = cli("diff", runs["seed1"], runs["straggler"], "--format", "json", "--fail-if", "new_findings>=medium")
    document = json.loads(result.output)
    assert {"base_s", "new_s", "change", "significant"} <= set(document["step_time"])
    assert {"base", "new", "change", "significant"} <= set(document["throughput"])
    assert [row["category"] for row in document["breakdown"]] == [
        "compute",
        "exposed_comm",
        "input_wait",
        "host_sync",
        "host",
        "transfer_exposed",
        "compile",
        "idle",
    ]
    assert {"name", "base_s", "new_s", "change"} <= set(document["top_regressions"][0])
    assert set(document["findings"]) >= {"new", "resolved", "changed"}
    worst_new = max((f["severity"] for f in document["findings"]["new_details"]), key=severity_rank)
    assert severity_rank(worst_new) >= severity_rank("medium")
    assert document["gates"] == [
        {"gate": "new_findings>=medium", "kind": "severity", "value": worst_new, "tripped": True, "significant": None}
    ]
    assert result.exit_code == 1


def test_markdown_is_a_pr_comment(runs, cli):
    result = cli("diff", runs["seed1"], runs["straggler"], "--format", "markdown", "--fail-if", "step_time>+5%")
    text = result.output
    assert text.startswith("## trnprof diff\n") and "**Step time +" in text and "`scale.straggler`" in text
    assert "| `step_time>+5%` | **tripped** |" in text
    assert "| category | base | new | delta | change | verdict |" in text


def test_different_world_sizes_compare_per_rank(runs, tmp_path):
    small = simulate_job(tmp_path / "small", seed=1, overrides=["cluster.instance=trn1.2xlarge", "batch.global=32"])
    document = trnprof.api.diff(small, runs["seed1"])
    assert document["comparable"] and document["world_size"] == {"base": 2, "new": 32}
    assert any("world size differs" in note for note in document["notes"])
    ops = {(row["name"], row["lane"]) for row in document["top_regressions"] + document["top_improvements"]}
    assert ("lm_head", "nc/tensor") in ops  # matched by name and lane, per rank and step


def test_different_models_are_not_comparable_and_cannot_be_gated(runs, tmp_path, cli):
    other = simulate_job(tmp_path / "other", seed=1, overrides=["model.seq_len=1024"])
    result = cli("diff", runs["seed1"], other)
    assert result.exit_code == 0 and "NOT COMPARABLE: different seq_len: 2048 vs 1024" in result.output
    gated = cli("diff", runs["seed1"], other, "--fail-if", "step_time>+5%")
    assert gated.exit_code == 2 and gated.stderr.startswith("error: the runs are not comparable")
    assert len(gated.stderr.strip().splitlines()) == 1


def test_bad_input_is_one_line_and_exit_2(runs, cli, tmp_path):
    missing = cli("diff", runs["seed1"], tmp_path / "nope")
    assert missing.exit_code == 2 and missing.stderr.startswith("error: run not found")
    bad_gate = cli("diff", runs["seed1"], runs["seed2"], "--fail-if", "step_time>5")
    assert bad_gate.exit_code == 2 and "give a unit" in bad_gate.stderr
    assert len(bad_gate.stderr.strip().splitlines()) == 1


def test_a_rules_config_applies_to_both_runs(runs, cli, tmp_path):
    config = tmp_path / "rules.yaml"
    config.write_text("ignore: [scale]\n")
    result = cli(
        "diff",
        runs["seed1"],
        runs["straggler"],
        "--config",
        config,
        "--format",
        "json",
        "--fail-if",
        "new_findings>=medium",
    )
    document = json.loads(result.output)
    assert "scale.straggler" not in document["findings"]["new"] and result.exit_code == 0
    bad = tmp_path / "bad.yaml"
    bad.write_text("ignore: [scale\n")
    failed = cli("diff", runs["seed1"], runs["straggler"], "--config", bad)
    assert failed.exit_code == 2 and failed.stderr.startswith(f"error: config {bad}: line 2: not valid YAML")
