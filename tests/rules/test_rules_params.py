"""Parameters (--set), rule selection (--select / --ignore) and the config file."""

from __future__ import annotations

import pytest

from trnprof.errors import TrnprofError
from trnprof.rules_engine.config import read_config
from trnprof.rules_engine.loader import load_rules
from trnprof.rules_engine.params import cast, parse_assignments, resolve
from trnprof.rules_engine.selection import choose


@pytest.fixture(scope="module")
def rules():
    return load_rules()


@pytest.mark.parametrize(
    "value, default, expected",
    [
        ("0.3", 0.2, 0.3),
        ("3", 2, 3),
        ("2.5", 2, 2.5),
        ("true", False, True),
        ("off", True, False),
        ("abc", "x", "abc"),
        (0.5, 0.2, 0.5),
    ],
)
def test_cast_follows_the_default_type(value, default, expected):
    assert cast(value, default, "p") == expected and type(cast(value, default, "p")) is type(expected)


@pytest.mark.parametrize(
    "value, default, words",
    [
        ("lots", 0.2, "not a number"),
        ("maybe", True, "not a boolean"),
        ("nan", 0.2, "'nan' is not a finite number"),
        ("inf", 0.2, "'inf' is not a finite number"),
        ("-Infinity", 3, "'-Infinity' is not a finite number"),
        (float("nan"), 0.2, "not a finite number"),
    ],
)
def test_cast_errors(value, default, words):
    with pytest.raises(TrnprofError, match=words):
        cast(value, default, "p")


def test_set_overrides_one_rule_parameter(rules):
    params = resolve(rules, parse_assignments(["input.starvation.high_share=0.3"]))
    assert params["input.starvation"]["high_share"] == 0.3
    assert params["input.starvation"]["moderate_share"] == 0.05
    assert params["input.transfer_exposed"]["high_share"] == 0.2


@pytest.mark.parametrize(
    "items, words",
    [
        (["input.starvation"], "expected RULE.PARAM=VALUE"),
        (["nope.rule.x=1"], "no rule named 'nope.rule'"),
        (["input.starvation.bogus=1"], "has no parameter 'bogus' (its parameters: moderate_share, high_share)"),
    ],
)
def test_set_errors_name_the_value_and_what_to_do(rules, items, words):
    with pytest.raises(TrnprofError) as err:
        resolve(rules, parse_assignments(items))
    assert words in str(err.value)


@pytest.mark.parametrize(
    "select, ignore, expected",
    [
        (["IN001"], [], {"input.starvation"}),
        (["IN"], [], {"input.starvation", "input.transfer_exposed"}),
        (["input"], ["input.transfer_exposed"], {"input.starvation"}),
        (
            ["overlap,IN002"],
            [],
            {"overlap.exposed_communication", "overlap.low_overlap_ratio", "input.transfer_exposed"},
        ),
    ],
)
def test_select_and_ignore_by_code_prefix_name_or_pack(rules, select, ignore, expected):
    assert {r.name for r in choose(rules, select, ignore)} == expected


def test_everything_by_default_and_unknown_selectors_fail(rules):
    assert len(choose(rules)) == len(rules)
    with pytest.raises(TrnprofError, match="--ignore 'nothing' matches no rule"):
        choose(rules, ignore=["nothing"])


def test_config_file_paths_are_relative_to_it(tmp_path):
    (tmp_path / "conf").mkdir()
    path = tmp_path / "conf" / "trnprof.yaml"
    path.write_text(
        "rules: [../mine]\nselect: [input]\nset: {input.starvation.high_share: 0.5}\nfail_on: medium\ntimeout: 2\n"
    )
    config = read_config(path)
    assert config.rules == [str((tmp_path / "mine").resolve())]
    assert config.select == ["input"] and config.set == {"input.starvation.high_share": 0.5}
    assert config.fail_on == "medium" and config.timeout == 2


def test_config_file_errors(tmp_path):
    path = tmp_path / "c.yaml"
    path.write_text("colour: red\n")
    with pytest.raises(TrnprofError, match="unknown field `colour`"):
        read_config(path)
    with pytest.raises(TrnprofError, match="cannot read"):
        read_config(tmp_path / "missing.yaml")
