"""The built-in rule packs: every rule's own test cases pass, and docs/rules matches the rules."""

from __future__ import annotations

import msgspec
import pytest

from tests.conftest import REPO
from trnprof.api import open_run, run_rule_cases
from trnprof.rules_engine import docs as rule_docs
from trnprof.rules_engine.engine import collect_tables
from trnprof.rules_engine.loader import load_rules
from trnprof.rules_engine.sandbox import Sandbox
from trnprof.rules_engine.spec import Inline
from trnprof.rules_engine.testing import write_inline

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


def rule_rows(path, name):
    """The rows a built-in rule's SQL returns on the run at `path`, with default parameters."""
    rule = next(r for r in RULES if r.name == name)
    params = rule.defaults()
    with open_run(path) as run:
        sandbox = Sandbox(collect_tables(run, set(rule.tables)))
    try:
        return sandbox.query(rule.spec.sql, {p: params[p] for p in rule.sql_params})
    finally:
        sandbox.close()


def test_slow_link_rows_pair_each_op_with_its_own_groups(tmp_path):
    """Node 1 is in every slow group of two ops (all-reduce 3x, all-gather 2x slower): each op's
    rows carry that op's groups and slowdown, once."""
    rows = []
    for op, seq, start, slow_ns in (("all_reduce", 0, 0, 3_000_000), ("all_gather", 1, 5_000_000, 2_000_000)):
        for rank, group in ((0, "a"), (1, "a"), (2, "b"), (3, "b"), (4, "c"), (5, "c")):
            rows.append(
                [rank, "collective", op, start, 1_000_000 if group == "b" else slow_ns, op, group, seq, 64 << 20]
            )
    spec = {
        "ranks": {"columns": ["rank", "node"], "rows": [[0, 0], [1, 1], [2, 2], [3, 0], [4, 2], [5, 1]]},
        "tile": {"ranks": 6, "steps": 2, "period_ns": 20_000_000},
        "events": {
            "columns": ["rank", "kind", "name", "ts", "dur", "coll_op", "coll_group", "coll_seq", "bytes"],
            "rows": [[None, "step", "train_step", 0, 20_000_000, None, None, None, None]] + rows,
        },
    }
    found = rule_rows(write_inline(msgspec.convert(spec, Inline), tmp_path / "run"), "scale.slow_link")
    assert not found.duplicated(["rank", "step", "coll_op", "coll_group"]).any(), found
    assert len(found) == 2 * 2 * 2  # ops x node-1 ranks (one in each slow group) x steps
    slowdown = found.groupby("coll_op")["slowdown"].agg(["min", "max"])
    assert slowdown.loc["all_reduce"].tolist() == pytest.approx([3.0, 3.0])
    assert slowdown.loc["all_gather"].tolist() == pytest.approx([2.0, 2.0])
