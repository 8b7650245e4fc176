"""Run factories: rule test cases get runs from collectors through the registry, so the rule
engine imports no collector and another package's collector can back rule tests too."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from tests.conftest import write_inline_run
from trnprof.api import run_rule_cases
from trnprof.collectors import registry
from trnprof.rules_engine.loader import load_rules

RULE = """\
code: XF001
name: ext.busy
pack: ext
title: Busy steps
severity: medium
requires: [steps]
params:
  min_share:
    default: 0.5
    doc: Compute share from which a step is busy.
    source: trnprof test value
sql: |
  SELECT rank, step, compute AS lost_ns FROM steady_breakdown WHERE CAST(compute AS DOUBLE) / dur >= $min_share
message: busy {ranks}
recommendation: nothing
doc: {what: busy steps, why: test, fix: none}
tests:
  - name: made by a third-party factory
    run:
      factory: {name: tests.busy, args: {ranks: 3}}
    expect:
      - {ranks: [0, 1, 2], steps: [0]}
"""


def _busy_factory(args: dict, path: Path) -> Path:
    events = [
        dict(rank=r, ts=0, dur=1000, kind=kind, name=kind, lane="nc/tensor", step=0)
        for r in range(args["ranks"])
        for kind in ("step", "compute")
    ]
    return write_inline_run(path, events)


def test_the_simulator_is_the_builtin_factory():
    assert registry.run_factory("simulate") is not None
    assert registry.run_factory("no.such.factory") is None


def test_a_registered_factory_backs_a_rule_test(tmp_path, monkeypatch):
    monkeypatch.setitem(registry._FACTORIES, "tests.busy", _busy_factory)
    (tmp_path / "ext").mkdir()
    (tmp_path / "ext" / "busy.yaml").write_text(RULE)
    results = run_rule_cases(load_rules([tmp_path], builtin=False))
    assert [r.problems for r in results] == [[]]


def test_an_unknown_factory_fails_the_case_with_one_line(tmp_path):
    (tmp_path / "ext").mkdir()
    (tmp_path / "ext" / "busy.yaml").write_text(RULE.replace("tests.busy", "tests.missing"))
    [result] = run_rule_cases(load_rules([tmp_path], builtin=False))
    assert result.problems == [
        "could not run the case: this case needs the run factory 'tests.missing', which "
        "no installed collector provides (entry-point group trnprof.run_factories)"
    ]


def test_the_rule_engine_imports_no_collector():
    code = (
        "import sys, trnprof.rules_engine.testing, trnprof.rules_engine.engine; "
        "print(sorted(m for m in sys.modules if m.startswith('trnprof.collectors.')))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]"
