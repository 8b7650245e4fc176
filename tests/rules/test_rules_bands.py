"""Severity bands declared in the rule file and applied by the engine: a row's severity is the
highest band whose parameter its column reaches, else `otherwise`; a bad declaration is one error."""

from __future__ import annotations

import pandas as pd
import pytest

from tests.rules.test_rules_loader import rule_dict, write_rule
from trnprof.rules_engine.findings import FindingError, banded, build
from trnprof.rules_engine.loader import RuleError, load_rule_file
from trnprof.rules_engine.spec import SeverityBands

PARAMS = {"moderate_share": 0.05, "high_share": 0.2}
BANDS = SeverityBands(by="run_share", high="high_share", medium="moderate_share", otherwise="low")


def test_each_value_gets_the_highest_band_it_reaches():
    values = pd.Series([0.0, 0.0499, 0.05, 0.19, 0.2, 0.9, None], dtype=float)
    expected = [
        "high" if v >= PARAMS["high_share"] else "medium" if v >= PARAMS["moderate_share"] else "low"
        for v in values.fillna(-1)
    ]
    assert list(banded(values, BANDS, PARAMS)) == expected  # a missing value falls to `otherwise`


def test_the_thresholds_are_the_parameters_in_force():
    values = pd.Series([0.1])
    assert list(banded(values, BANDS, {"moderate_share": 0.05, "high_share": 0.08})) == ["high"]
    assert list(banded(values, BANDS, {"moderate_share": 0.15, "high_share": 0.3})) == ["low"]


def _rule(tmp_path, **bands):
    params = {name: {"default": value, "doc": name, "source": "a test"} for name, value in PARAMS.items()}
    return rule_dict(
        params=params,
        severity_bands=bands,
        sql="SELECT rank, step, idle AS lost_ns, CAST(idle AS DOUBLE) / dur AS run_share "
        "FROM step_breakdown WHERE idle >= $moderate_share",
    )


def test_a_band_naming_an_unknown_parameter_is_one_error(tmp_path):
    path = write_rule(tmp_path, _rule(tmp_path, by="run_share", high="high_shares"))
    with pytest.raises(RuleError, match=r"severity_bands.high: unknown parameter 'high_shares'"):
        load_rule_file(path, "testpack")


def test_the_engine_grades_rows_by_the_declared_column(tmp_path):
    rule = load_rule_file(
        write_rule(tmp_path, _rule(tmp_path, by="run_share", high="high_share", medium="moderate_share")), "testpack"
    )
    frame = pd.DataFrame({"rank": [0, 1], "step": [0, 0], "lost_ns": [10, 30], "run_share": [0.1, 0.3]})
    [draft] = build(rule, PARAMS, frame, n_steps=1, mean_step_ns=100.0, warmup=set())
    assert draft.finding.severity == "high"  # the worst row: 0.3 >= high_share
    with pytest.raises(FindingError, match="severity column"):
        build(rule, PARAMS, frame.assign(severity="low"), n_steps=1, mean_step_ns=100.0, warmup=set())
