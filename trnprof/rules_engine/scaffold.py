"""`trnprof rules new NAME`: write a rule file to fill in, complete enough to load and test."""

from __future__ import annotations

from pathlib import Path

from trnprof.errors import TrnprofError

from .loader import CODE, NAME, Rule

TEMPLATE = """\
# {name}: fill in the TODOs, then run `trnprof rules test {path}`.
code: {code}
name: {name}
pack: {pack}
title: TODO one-line headline of the problem
severity: medium            # the severity when the query returns no severity column
requires: [steps]           # flags of the signals view the rule needs (see docs/rules/index.md)
params:
  min_share:
    default: 0.05
    doc: TODO what the threshold means.
    source: TODO where the default comes from (a tool, a paper, a measurement).
# One SELECT over the stdlib views; each row is an offending (rank, step). Columns with a meaning:
# rank, step, lost_ns (time the row costs in its step), severity, pattern. Parameters are $name.
sql: |
  SELECT rank, step, idle AS lost_ns, CAST(idle AS DOUBLE) / dur AS idle_share
  FROM steady_breakdown   -- step_breakdown without the warm-up steps (view step_phases)
  WHERE CAST(idle AS DOUBLE) / dur >= $min_share
message: >-
  TODO what is wrong: {{ranks}} and {{steps}} name where, {{fraction_of_step:.0%}} what it costs.
recommendation: >-
  TODO what to change first.
doc:
  what: TODO what the rule detects.
  why: TODO why it matters.
  fix: TODO how to fix it.
tests:
  - name: TODO a run that shows the problem
    run:
      inline:
        tile: {{ranks: 2, steps: 2, period_ns: 1000000}}
        events:
          columns: [kind, name, ts, dur]
          rows:
            - [step, train_step, 0, 1000000]
            - [compute, matmul, 0, 500000]
    expect:
      - {{ranks: [0, 1], steps: [0, 1]}}
  - name: TODO a run without the problem
    run:
      inline:
        tile: {{ranks: 1, steps: 2, period_ns: 1000000}}
        events:
          columns: [kind, name, ts, dur]
          rows:
            - [step, train_step, 0, 1000000]
            - [compute, matmul, 0, 1000000]
    expect: []
"""


def next_code(pack: str, rules: list[Rule]) -> str:
    """The pack's code prefix (its rules' own, else its first two letters) and the next number."""
    prefixes = {r.code[:-3] for r in rules if r.pack == pack}
    prefix = sorted(prefixes)[0] if prefixes else "".join(c for c in pack.upper() if c.isalpha())[:2].ljust(2, "X")
    used = {int(r.code[-3:]) for r in rules if r.code.startswith(prefix)}
    return f"{prefix}{min(set(range(1, 1000)) - used):03d}"


def new_rule(name: str, folder: Path, rules: list[Rule], code: str | None = None) -> Path:
    """Write `folder/<pack>/<rule>.yaml` for rule `name`; refuses to overwrite."""
    if not NAME.match(name):
        raise TrnprofError(f"rule name {name!r}: use pack.rule_name in lower case, e.g. mypack.long_steps")
    pack, short = name.split(".")
    code = code or next_code(pack, rules)
    if not CODE.match(code):
        raise TrnprofError(f"--code {code!r}: two or three capitals and three digits, e.g. MY001")
    taken = {r.code: r for r in rules} | {r.name: r for r in rules}
    for key in (code, name):
        if key in taken:
            raise TrnprofError(f"{key} is already used by {taken[key].path}; choose another")
    path = folder / pack / f"{short}.yaml"
    if path.exists():
        raise TrnprofError(f"{path} exists; choose another name or remove it")
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(TEMPLATE.format(code=code, name=name, pack=pack, path=path), encoding="utf-8")
    return path
