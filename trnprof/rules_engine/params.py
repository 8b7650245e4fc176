"""Rule parameters: `--set rule.param=value` parsed and cast to the type of the default."""

from __future__ import annotations

import math

from trnprof.errors import TrnprofError

from .loader import Rule

_TRUE, _FALSE = {"true", "yes", "on", "1"}, {"false", "no", "off", "0"}


def cast(value, default, what: str):
    """`value` (text from the command line, or a YAML scalar) as the type of `default`."""
    if isinstance(default, bool):
        if isinstance(value, bool):
            return value
        text = str(value).strip().lower()
        if text in _TRUE | _FALSE:
            return text in _TRUE
        raise TrnprofError(f"{what}: {value!r} is not a boolean (use true or false)")
    if isinstance(default, (int, float)):
        if isinstance(value, bool):
            raise TrnprofError(f"{what}: {value!r} is not a number")
        try:
            number = float(value)
        except (TypeError, ValueError):
            raise TrnprofError(f"{what}: {value!r} is not a number") from None
        if not math.isfinite(number):  # a NaN or infinite threshold would silently disable the rule
            raise TrnprofError(f"{what}: {value!r} is not a finite number (give a number such as {default!r})")
        if isinstance(default, int) and number.is_integer():
            return int(number)
        return number
    return str(value)


def parse_assignments(items) -> dict[str, str]:
    """`rule.param=value` strings (or a mapping of them) as {"rule.param": value}."""
    if isinstance(items, dict):
        return dict(items)
    parsed = {}
    for item in items:
        key, sep, value = item.partition("=")
        if not sep or key.count(".") < 2:
            raise TrnprofError(f"--set {item!r}: expected RULE.PARAM=VALUE, e.g. input.starvation.high_share=0.3")
        parsed[key.strip()] = value.strip()
    return parsed


def resolve(rules: list[Rule], assignments: dict) -> dict[str, dict]:
    """Each rule's parameters: defaults overridden by `assignments` ({"rule.param": value})."""
    by_name = {rule.name: rule for rule in rules}
    params = {rule.name: rule.defaults() for rule in rules}
    for key, value in assignments.items():
        rule_name, _, param = key.rpartition(".")
        rule = by_name.get(rule_name)
        if rule is None:
            raise TrnprofError(f"--set {key}: no rule named {rule_name!r} (see `trnprof rules list`)")
        if param not in rule.spec.params:
            known = ", ".join(rule.spec.params) or "none"
            raise TrnprofError(f"--set {key}: rule {rule_name} has no parameter {param!r} (its parameters: {known})")
        params[rule_name][param] = cast(value, rule.spec.params[param].default, f"--set {key}")
    return params
