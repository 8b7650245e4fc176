"""`trnprof analyze` (formats, exit codes) and `trnprof rules list | show | test | new | docs`."""

from __future__ import annotations

import json

import msgspec
import pytest

from tests.rules.test_rules_loader import rule_dict, write_rule
from trnprof.rules_engine.loader import builtin_dir


def test_analyze_text_by_default(cli, busy_run):  # noqa: F811
    result = cli("analyze", busy_run)
    assert result.exit_code == 0, result.output
    assert "overlap.exposed_communication" in result.stdout


@pytest.mark.parametrize(
    "fmt, check",
    [
        ("json", lambda out: json.loads(out)["schema"] == "trnprof.findings/1"),
        ("sarif", lambda out: json.loads(out)["version"] == "2.1.0"),
        ("markdown", lambda out: out.startswith("# trnprof findings")),
    ],
)
def test_analyze_formats(cli, busy_run, fmt, check):  # noqa: F811
    result = cli("analyze", busy_run, "--format", fmt)
    assert result.exit_code == 0 and check(result.stdout)


@pytest.mark.parametrize(
    "args, code",
    [
        ([], 0),
        (["--fail-on", "high"], 1),
        (["--select", "memory", "--fail-on", "high"], 0),
        (["--select", "memory", "--fail-on", "medium"], 1),
        (["--select", "memory", "--fail-on", "low"], 1),
        (["--select", "compile.recompilation", "--fail-on", "low"], 0),
    ],
)
def test_analyze_exit_codes_follow_fail_on(cli, busy_run, args, code):  # noqa: F811
    assert cli("analyze", busy_run, *args).exit_code == code


@pytest.mark.parametrize(
    "args, words",
    [
        (["--select", "nothing"], "--select 'nothing' matches no rule"),
        (["--set", "input.starvation.x=1"], "has no parameter 'x'"),
        (["--set", "input.starvation.high_share=lots"], "'lots' is not a number"),
        (["--rules", "/nonexistent/rules"], "rules folder not found"),
    ],
)
def test_analyze_usage_errors_exit_2_with_one_line(cli, busy_run, args, words):  # noqa: F811
    result = cli("analyze", busy_run, *args)
    assert result.exit_code == 2 and words in result.stderr and len(result.stderr.strip().splitlines()) == 1


def test_analyze_a_missing_run_exits_2(cli, tmp_path):
    result = cli("analyze", tmp_path / "nope")
    assert result.exit_code == 2 and result.stderr.startswith("error: run not found")


# binds (a misspelt column is a load error, see test_rules_authoring.py) but fails on the run's rows
FAILS_AT_RUN_TIME = "SELECT rank, step, CAST('x' || CAST(rank AS VARCHAR) AS INTEGER) AS broken FROM steps"


def test_analyze_with_a_user_pack_and_a_config_file(cli, busy_run, tmp_path):  # noqa: F811
    write_rule(
        tmp_path / "mine",
        rule_dict(
            sql="SELECT rank, step, dur AS lost_ns FROM steps WHERE rank = 2",
            message="rank {rank} is slow",
            severity="high",
        ),
    )
    write_rule(tmp_path / "mine", rule_dict(code="TS002", name="testpack.broken", sql=FAILS_AT_RUN_TIME))
    config = tmp_path / "trnprof.yaml"
    config.write_text("rules: [mine]\nselect: [testpack]\nfail_on: high\n")
    result = cli("analyze", busy_run, "--config", config, "--format", "json")
    assert result.exit_code == 2  # fail_on is set and a rule failed: the gate could not judge everything
    document = json.loads(result.stdout)
    assert [f["name"] for f in document["findings"]] == ["testpack.long_idle"]
    assert "warning: rule testpack.broken failed" in result.stderr
    sarif = json.loads(cli("analyze", busy_run, "--config", config, "--format", "sarif").stdout)
    assert {r["id"] for r in sarif["runs"][0]["tool"]["driver"]["rules"]} == {"TS001", "TS002"}


@pytest.mark.parametrize("args, code", [([], 0), (["--fail-on", "high"], 2), (["--fail-on", "low"], 2)])
def test_a_failed_rule_exits_2_under_fail_on(cli, busy_run, tmp_path, args, code):  # noqa: F811
    write_rule(tmp_path / "mine", rule_dict(code="TS002", name="testpack.broken", sql=FAILS_AT_RUN_TIME))
    result = cli("analyze", busy_run, "--rules", tmp_path / "mine", "--select", "testpack", *args)
    assert result.exit_code == code
    assert "warning: rule testpack.broken failed" in result.stderr


@pytest.mark.parametrize("value", ["nan", "inf", "-inf"])
def test_a_non_finite_parameter_is_one_error_line(cli, busy_run, value):  # noqa: F811
    result = cli("analyze", busy_run, "--set", f"input.starvation.high_share={value}")
    assert result.exit_code == 2 and len(result.stderr.strip().splitlines()) == 1
    assert f"--set input.starvation.high_share: '{value}' is not a finite number" in result.stderr


def test_the_config_file_and_the_rules_are_read_once(cli, busy_run, tmp_path, monkeypatch):  # noqa: F811
    from trnprof import yamlio

    monkeypatch.setenv("TRNPROF_CACHE_DIR", str(tmp_path / "cache"))  # the rules' SQL checks: not cached yet
    config = tmp_path / "trnprof.yaml"
    config.write_text("select: [input]\nfail_on: high\n")
    rule_text = (builtin_dir() / "input" / "starvation.yaml").read_text(encoding="utf-8")
    texts, load = [], yamlio.load
    monkeypatch.setattr(yamlio, "load", lambda text: texts.append(text) or load(text))
    result = cli("analyze", busy_run, "--config", config, "--format", "sarif")
    assert result.exit_code == 1 and json.loads(result.stdout)["runs"][0]["results"]
    assert texts.count(config.read_text()) == 1 and texts.count(rule_text) == 1
    texts.clear()  # the next command reads each rule from its file again (the cache holds no rule), once
    again = cli("analyze", busy_run, "--config", config, "--format", "sarif")
    assert again.stdout == result.stdout and texts.count(config.read_text()) == 1 and texts.count(rule_text) == 1


def test_rules_list_and_show(cli):
    listed = cli("rules", "list").stdout.splitlines()
    assert any(line.startswith("IN001  input.starvation") for line in listed)
    data = json.loads(cli("rules", "list", "--format", "json").stdout)
    assert {"code", "name", "pack", "severity", "title", "path"} <= set(data[0])
    for key in ("IN001", "input.starvation"):
        shown = cli("rules", "show", key)
        assert (
            shown.exit_code == 0 and "## IN001 `input.starvation`" in shown.stdout and "moderate_share" in shown.stdout
        )
    assert cli("rules", "show", "nope").exit_code == 2


def test_rules_test_runs_a_rule_files_cases(cli):
    result = cli("rules", "test", builtin_dir() / "input" / "starvation.yaml")
    assert result.exit_code == 0, result.stdout
    assert "ok   input.starvation: loader stalls a third of every step" in result.stdout
    assert result.stdout.strip().endswith("5 passed, 0 failed")  # 4 inline cases and a simulated one


def test_rules_test_fails_on_a_wrong_expectation(cli, tmp_path):
    rule = rule_dict()
    rule["tests"][0]["expect"] = [{"severity": "high", "ranks": [0]}]
    write_rule(tmp_path, rule)
    result = cli("rules", "test", tmp_path)
    assert result.exit_code == 1
    assert "FAIL testpack.long_idle: idle" in result.stdout and "unexpected finding: medium" in result.stdout


def test_rules_new_writes_a_rule_that_passes_its_tests(cli, tmp_path):
    result = cli("rules", "new", "mypack.long_steps", "--dir", tmp_path)
    assert result.exit_code == 0, result.output
    path = tmp_path / "mypack" / "long_steps.yaml"
    assert "code: MY001" in path.read_text()
    assert cli("rules", "test", tmp_path).exit_code == 0
    assert cli("rules", "new", "mypack.long_steps", "--dir", tmp_path).exit_code == 2  # exists
    assert cli("rules", "new", "mypack.other", "--dir", tmp_path).exit_code == 0
    assert "code: MY002" in (tmp_path / "mypack" / "other.yaml").read_text()
    assert cli("rules", "new", "Bad Name", "--dir", tmp_path).exit_code == 2
    assert cli("rules", "new", "input.again", "--dir", tmp_path / "fresh", "--code", "IN001").exit_code == 2


def test_rules_docs_writes_and_checks(cli, tmp_path):
    out = tmp_path / "docs"
    assert cli("rules", "docs", "--check", "--output", out).exit_code == 1
    assert cli("rules", "docs", "--output", out).exit_code == 0
    assert {p.name for p in out.iterdir()} >= {"index.md", "input.md", "memory.md"}
    assert cli("rules", "docs", "--check", "--output", out).exit_code == 0
    (out / "input.md").write_text("edited by hand\n")
    result = cli("rules", "docs", "--check", "--output", out)
    assert result.exit_code == 1 and "input.md" in result.stdout


def test_info_findings_never_fail_fail_on_low(busy_run):  # noqa: F811
    from trnprof.cli.analyze import fails
    from trnprof.rules_engine.engine import analyze

    document = analyze(busy_run)
    infos = [f for f in document.findings if f.severity == "info"]
    assert infos, "the busy run has findings whose time others claimed"
    only_info = msgspec.structs.replace(document, findings=infos)
    assert not fails(only_info, "low") and fails(only_info, "info")
