"""Rule files: decoding, validation (file, field and fix in one line), discovery, uniqueness."""

from __future__ import annotations

import copy

import pytest
import yaml

from trnprof.rules_engine.loader import RuleError, builtin_dir, load_folder, load_rule_file, load_rules

BASE = {
    "code": "TS001",
    "name": "testpack.long_idle",
    "pack": "testpack",
    "title": "Idle steps",
    "severity": "medium",
    "requires": ["steps"],
    "params": {"min_share": {"default": 0.1, "doc": "idle share", "source": "a test"}},
    "sql": "SELECT rank, step, idle AS lost_ns FROM step_breakdown WHERE CAST(idle AS DOUBLE) / dur >= $min_share",
    "message": "idle {fraction_of_step:.0%} on {ranks}",
    "recommendation": "do less nothing",
    "doc": {"what": "w", "why": "y", "fix": "f"},
    "tests": [
        {
            "name": "idle",
            "run": {
                "inline": {
                    "tile": {"ranks": 1, "steps": 2, "period_ns": 1000},
                    "events": {"columns": ["kind", "ts", "dur"], "rows": [["step", 0, 1000], ["compute", 0, 100]]},
                }
            },
            "expect": [{"ranks": [0]}],
        }
    ],
}


def rule_dict(**changes) -> dict:
    """A valid rule as a dict, with top-level fields replaced (None removes a field)."""
    rule = copy.deepcopy(BASE)
    for key, value in changes.items():
        if value is None:
            rule.pop(key, None)
        else:
            rule[key] = value
    return rule


def write_rule(folder, rule: dict):
    """Write `rule` as folder/<pack>/<short name>.yaml; returns the path."""
    pack, short = rule["name"].split(".")
    path = folder / pack / f"{short}.yaml"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(yaml.safe_dump(rule, sort_keys=False), encoding="utf-8")
    return path


def test_a_valid_rule_loads_with_the_tables_and_parameters_it_uses(tmp_path):
    rule = load_rule_file(write_rule(tmp_path, rule_dict()), "testpack")
    assert rule.code == "TS001" and rule.pack == "testpack"
    assert rule.tables == {"step_breakdown"} and rule.sql_params == ("min_share",)
    assert rule.defaults() == {"min_share": 0.1}


@pytest.mark.parametrize(
    "changes, field, words",
    [
        ({"severity": "critical"}, "severity", "Invalid enum value 'critical'"),
        ({"title": None}, "file", "missing required field `title`"),
        ({"colour": "red"}, "file", "unknown field `colour`"),
        ({"code": "T1"}, "code", "not a rule code"),
        ({"name": "testpack"}, "name", "not a dotted rule name"),
        ({"pack": "other"}, "pack", "differs from the name's prefix"),
        ({"sql": "SELECT * FROM step_breakdown; DROP TABLE steps"}, "sql", "exactly one SELECT"),
        ({"sql": "COPY steps TO '/tmp/x.csv'"}, "sql", "exactly one SELECT"),
        ({"sql": "SELEC rank FROM steps"}, "sql", "does not parse"),
        ({"sql": "SELECT * FROM secret_table"}, "sql", "unknown table or view secret_table"),
        ({"sql": "SELECT * FROM _comm_events"}, "sql", "unknown table or view _comm_events"),  # private helper
        ({"sql": "SELECT rank FROM steps WHERE dur > $nope"}, "sql", "undeclared parameter(s) $nope"),
        ({"message": "{rank.__class__}"}, "message", "is not a plain name"),
        ({"message": "{unclosed"}, "message", "bad template"),
        ({"requires": ["gpus"]}, "requires[0]", "unknown signal 'gpus'"),
        ({"requires": [{"sql": "SELECT 1; SELECT 2", "reason": "r"}]}, "requires[0].sql", "exactly one SELECT"),
        ({"params": {"min_share": {"default": [1], "doc": "d", "source": "s"}}}, "params", "Expected"),
        ({"tests": []}, "tests", "no test case expects a finding"),
    ],
)
def test_a_malformed_rule_is_one_error_naming_file_field_and_fix(tmp_path, changes, field, words):
    path = write_rule(tmp_path, rule_dict())  # the file where the valid rule would be ...
    path.write_text(yaml.safe_dump(rule_dict(**changes)), encoding="utf-8")  # ... holding the bad one
    with pytest.raises(RuleError) as err:
        load_rule_file(path, "testpack")
    message = str(err.value)
    assert message.startswith(f"{path}: {field}") and words in message and "\n" not in message
    assert message.endswith(")"), "the error ends with the fix in parentheses"


def test_file_name_must_match_the_rule_name(tmp_path):
    path = write_rule(tmp_path, rule_dict())
    moved = path.with_name("other.yaml")
    path.rename(moved)
    with pytest.raises(RuleError, match="name the file long_idle.yaml"):
        load_rule_file(moved, "testpack")


def test_invalid_yaml_names_the_line(tmp_path):
    path = tmp_path / "testpack" / "long_idle.yaml"
    path.parent.mkdir()
    path.write_text("code: TS001\nname: [unclosed\n", encoding="utf-8")
    with pytest.raises(RuleError, match=r"line \d+: not valid YAML"):
        load_rule_file(path, "testpack")


def test_test_case_fields_are_checked(tmp_path):
    bad = rule_dict()
    bad["tests"][0]["set"] = {"unknown": 1}
    with pytest.raises(RuleError, match=r"tests\[0\] \(idle\)\.set: unknown parameter\(s\) unknown"):
        load_rule_file(write_rule(tmp_path, bad), "testpack")
    bad = rule_dict()
    bad["tests"][0]["run"]["inline"]["events"]["columns"] = ["kind", "when", "dur"]
    with pytest.raises(RuleError, match="unknown column"):
        load_rule_file(write_rule(tmp_path, bad), "testpack")


def test_yaml_numbers_with_exponents_are_floats(tmp_path):
    rule = rule_dict(params={"min_share": {"default": "placeholder", "doc": "d", "source": "s"}})
    path = write_rule(tmp_path, rule)
    path.write_text(path.read_text().replace("placeholder", "1e-1"), encoding="utf-8")
    assert load_rule_file(path, "testpack").defaults() == {"min_share": 0.1}


def test_a_pack_folder_or_a_folder_of_packs(tmp_path):
    write_rule(tmp_path, rule_dict())
    (tmp_path / "testpack" / "_notes.yaml").write_text("not: a rule\n")
    assert [r.name for r in load_folder(tmp_path)] == ["testpack.long_idle"]
    assert [r.name for r in load_folder(tmp_path / "testpack")] == ["testpack.long_idle"]


def test_codes_and_names_are_unique_across_packs(tmp_path):
    write_rule(tmp_path, rule_dict())
    write_rule(tmp_path, rule_dict(code="IN001", name="testpack.other"))
    with pytest.raises(RuleError, match="IN001 is already used by"):
        load_rules([tmp_path])


def test_missing_rules_folder_is_a_clear_error(tmp_path):
    with pytest.raises(Exception, match="rules folder not found"):
        load_rules([tmp_path / "nope"])


def test_builtin_packs_cover_the_issue_rules():
    names = {r.name for r in load_rules()}
    assert {
        "input.starvation",
        "input.transfer_exposed",
        "overlap.exposed_communication",
        "overlap.low_overlap_ratio",
        "collectives.low_bus_bandwidth",
        "collectives.small_messages",
        "scale.straggler",
        "scale.pipeline_bubble",
        "scale.slow_link",
        "memory.hbm_pressure",
        "memory.growth",
        "memory.optimizer_state_unsharded",
        "memory.activation_dominated",
        "compute.low_mfu",
        "compute.fp32_matmul",
        "compute.small_ops",
        "compile.recompilation",
        "compile.slow_first_step",
    } <= names
    assert builtin_dir().name == "rules"


def test_every_builtin_parameter_cites_a_source():
    for rule in load_rules():
        for name, param in rule.spec.params.items():
            assert param.source.strip() and param.doc.strip(), f"{rule.name}.{name}"
