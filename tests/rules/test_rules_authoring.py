"""Writing rules: the scaffold reads the steady state, mistakes are one error line naming the
rule file and the field (column typos, unknown parameter fields, codes that clash with the
built-in rules), and the session tables are queryable like the views."""

from __future__ import annotations

import json

import pytest

from tests.conftest import REPO
from trnprof.rules_engine.engine import analyze

GROWTH = REPO / "rules" / "memory" / "growth.yaml"


@pytest.fixture
def scaffolded(cli, tmp_path):
    assert cli("rules", "new", "mypack.long_idle", "--dir", tmp_path / "rules").exit_code == 0
    return tmp_path / "rules" / "mypack" / "long_idle.yaml"


def _one_error(result, *parts):
    assert result.exit_code == 2, result.output
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: "), result.stderr
    for part in parts:
        assert part in lines[0], lines[0]
    return lines[0]


def test_the_scaffold_judges_the_steady_steps_only(scaffolded, tmp_path, cli):
    text = scaffolded.read_text()
    assert "FROM steady_breakdown" in text and "step_breakdown\n" not in text
    out = tmp_path / "sim"
    assert cli("simulate", "--preset", "tiny", "--steps", "4", "-o", out).exit_code == 0
    document = analyze(out, rules=[tmp_path / "rules"], select=["mypack"], set=["mypack.long_idle.min_share=0"])
    [finding] = document.findings
    assert document.warmup_steps == [0] and finding.steps == [1, 2, 3]  # the compiling step 0 is warm-up


def test_a_column_typo_names_the_file_the_field_and_the_candidates(scaffolded, tmp_path, cli, sample_run):
    scaffolded.write_text(
        scaffolded.read_text().replace("CAST(idle AS DOUBLE) / dur >=", "CAST(idel AS DOUBLE) / dur >=")
    )
    for args in (("rules", "test", tmp_path / "rules"), ("analyze", sample_run, "--rules", tmp_path / "rules")):
        _one_error(cli(*args), str(scaffolded), ": sql: ", '"idel" not found', 'Candidate bindings: "idle"')


def test_a_column_typo_in_a_probe_names_the_probe(scaffolded, tmp_path, cli):
    text = scaffolded.read_text().replace(
        "requires: [steps]",
        "requires:\n  - sql: SELECT COUNT(*) > 0 FROM steady_breakdown WHERE idl > 0\n    reason: needs idle time",
    )
    scaffolded.write_text(text)
    _one_error(cli("rules", "test", tmp_path / "rules"), str(scaffolded), ": requires[0].sql: ", '"idl" not found')


def test_an_unknown_parameter_field_names_the_parameter(scaffolded, tmp_path, cli):
    scaffolded.write_text(scaffolded.read_text().replace("    source: TODO", "    unit: s\n    source: TODO"))
    _one_error(
        cli("rules", "test", tmp_path / "rules"), str(scaffolded), ": params.min_share: ", "unknown field `unit`"
    )


def test_rules_test_refuses_a_code_a_built_in_rule_uses(scaffolded, tmp_path, cli):
    scaffolded.write_text(scaffolded.read_text().replace("code: MY001", "code: CO002"))
    _one_error(
        cli("rules", "test", tmp_path / "rules"),
        str(scaffolded),
        ": code: CO002 is already used by",
        "small_messages.yaml",
    )
    _one_error(cli("rules", "test", scaffolded), str(scaffolded), "CO002")  # one file as well


def test_the_built_in_rules_test_on_their_own(cli):
    result = cli("rules", "test", GROWTH)
    assert result.exit_code == 0 and "6 passed" in result.stdout  # no clash with itself


@pytest.mark.parametrize("table, column", [("run_job", "instance_type"), ("hardware", "instance_type")])
def test_session_tables_are_queryable(cli, tmp_path, table, column):
    out = tmp_path / "sim"
    assert cli("simulate", "--preset", "tiny", "--steps", "2", "-o", out).exit_code == 0
    result = cli("query", out, f"SELECT {column} FROM {table}", "--format", "json")
    assert result.exit_code == 0, result.output
    values = [row[column] for row in json.loads(result.stdout)]
    assert "trn1.2xlarge" in values and (table == "hardware" or values == ["trn1.2xlarge"])
