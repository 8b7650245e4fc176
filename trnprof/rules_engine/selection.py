"""`--select` / `--ignore`: choose rules by code (or code prefix), dotted name, or pack."""

from __future__ import annotations

import re

from trnprof.errors import TrnprofError

from .loader import Rule


def split(values) -> list[str]:
    """Repeated and comma-separated options as one list: ("a,b", "c") -> [a, b, c]."""
    return [part.strip() for value in values or () for part in str(value).split(",") if part.strip()]


CODE_PREFIX = re.compile(r"^[A-Z]{2,3}[0-9]{0,3}$")


def matches(rule: Rule, selector: str) -> bool:
    if selector in (rule.name, rule.pack):
        return True
    return bool(CODE_PREFIX.match(selector)) and rule.code.startswith(selector)


def _matching(rules: list[Rule], selector: str, option: str) -> set[str]:
    hit = {rule.name for rule in rules if matches(rule, selector)}
    if not hit:
        raise TrnprofError(
            f"{option} {selector!r} matches no rule (give a code like IN001, a code prefix "
            "like IN, a name like input.starvation or a pack like input; see `trnprof rules list`)"
        )
    return hit


def choose(rules: list[Rule], select=(), ignore=()) -> list[Rule]:
    """The rules `select` names (all when empty) minus those `ignore` names."""
    select, ignore = split(select), split(ignore)
    chosen = set().union(*(_matching(rules, s, "--select") for s in select)) if select else {r.name for r in rules}
    for selector in ignore:
        chosen -= _matching(rules, selector, "--ignore")
    return [rule for rule in rules if rule.name in chosen]
