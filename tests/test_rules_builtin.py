"""The built-in rule packs: every rule's own test cases pass, and docs/rules matches the rules."""

from __future__ import annotations

import pytest

from trnprof.rules_engine import docs as rule_docs
from trnprof.rules_engine.loader import load_rules
from trnprof.rules_engine.testing import test_rules as run_rule_cases

from .conftest import REPO

RULES = load_rules()
CASES = [(rule, case) for rule in RULES for case in rule.spec.tests]


@pytest.fixture(scope="module")
def results():
    return {(r.rule.name, r.case.name): r for r in run_rule_cases(RULES)}


@pytest.mark.parametrize("rule, case", CASES, ids=[f"{r.name}: {c.name}" for r, c in CASES])
def test_builtin_rule_case(results, rule, case):
    result = results[(rule.name, case.name)]
    assert result.ok, "\n".join(result.problems)


def test_every_rule_has_a_positive_and_a_negative_case():
    for rule in RULES:
        expects = [case.expect for case in rule.spec.tests]
        assert any(isinstance(e, list) and e for e in expects), rule.name
        assert any(e == [] for e in expects), f"{rule.name} has no case where it must stay silent"


def test_rule_reference_is_up_to_date():
    drift = rule_docs.drifted(REPO / "docs" / "rules", RULES)
    assert not drift, f"docs/rules drifted from the rule files ({', '.join(drift)}): run `trnprof rules docs`"
