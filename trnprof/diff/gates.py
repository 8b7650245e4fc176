"""Regression gates: `--fail-if` expressions judged against a diff document.

    METRIC OP VALUE
    METRIC  step_time | throughput | mfu | compute | exposed_comm | input_wait | host_sync | host
            | transfer_exposed | compile | idle | new_findings
    OP      > | >= | < | <=
    VALUE   a relative change: +5%, -3%, 5% (sign optional)
            an absolute change per step (time metrics): +10ms, 500us, 0.2s, 1000ns
            for new_findings: a severity (low | medium | high: a new finding at or above it) or a
            count of new findings

A metric gate trips when its change passes the threshold and the change is significant (or
always, with strict). new_findings gates do not depend on significance.
"""

from __future__ import annotations

import operator
import re
from dataclasses import dataclass

from ..errors import TrnprofError
from ..rules_engine.spec import SEVERITIES, severity_rank
from .load import BUCKETS

RATES = ("throughput", "mfu")
TIMES = ("step_time",) + BUCKETS
METRICS = TIMES + RATES + ("new_findings",)
OPS = {">": operator.gt, ">=": operator.ge, "<": operator.lt, "<=": operator.le}
UNITS = {"ns": 1e-9, "us": 1e-6, "ms": 1e-3, "s": 1.0}
_GATE = re.compile(r"^\s*([a-z_]+)\s*(>=|<=|>|<)\s*(\S+?)\s*$")
_VALUE = re.compile(r"^([+-]?(?:\d+\.?\d*|\.\d+))(%|ns|us|ms|s)?$")


@dataclass(frozen=True)
class Gate:
    text: str
    metric: str
    op: str
    kind: str          # "relative" (fraction), "absolute" (seconds per step), "severity", "count"
    threshold: float   # fraction, seconds, severity rank or count


def _error(text: str, why: str) -> TrnprofError:
    return TrnprofError(f"--fail-if {text!r}: {why} (e.g. \"step_time>+5%\", \"exposed_comm>+10ms\", "
                        "\"new_findings>=medium\")")


def parse_gate(text: str) -> Gate:
    """One expression, or a TrnprofError saying what is wrong with it."""
    match = _GATE.match(text)
    if not match:
        raise _error(text, "write METRIC OP VALUE")
    metric, op, value = match.groups()
    if metric not in METRICS:
        raise _error(text, f"unknown metric {metric!r}; use one of {', '.join(METRICS)}")
    if metric == "new_findings":
        if value in SEVERITIES:
            return Gate(text, metric, op, "severity", float(severity_rank(value)))
        if value.isdigit():
            return Gate(text, metric, op, "count", float(value))
        raise _error(text, f"new_findings takes a severity ({', '.join(SEVERITIES)}) or a count")
    number = _VALUE.match(value)
    if not number:
        raise _error(text, f"cannot read the value {value!r}")
    amount, unit = float(number.group(1)), number.group(2)
    if unit == "%":
        return Gate(text, metric, op, "relative", amount / 100.0)
    if unit is None:
        raise _error(text, "give a unit: % for a relative change, or ns/us/ms/s for time per step")
    if metric not in TIMES:
        raise _error(text, f"{metric} is not a time: give a relative change in %")
    return Gate(text, metric, op, "absolute", amount * UNITS[unit])


def _metric(document: dict, metric: str) -> dict | None:
    if metric in BUCKETS:
        return next(row for row in document["breakdown"] if row["category"] == metric)
    return document.get(metric)


def _findings_gate(gate: Gate, document: dict) -> dict:
    details = document["findings"]["new_details"]
    if gate.kind == "severity":
        worst = max((severity_rank(d["severity"]) for d in details), default=-1)
        tripped = worst >= 0 and OPS[gate.op](worst, gate.threshold)
        value = SEVERITIES[worst] if worst >= 0 else "none"
    else:
        value = len(details)
        tripped = OPS[gate.op](value, gate.threshold)
    return {"gate": gate.text, "kind": gate.kind, "value": value, "tripped": bool(tripped), "significant": None}


def evaluate(gate: Gate, document: dict, *, strict: bool = False) -> dict:
    """Whether `gate` trips on `document`; a TrnprofError when the runs lack the metric."""
    if gate.metric == "new_findings":
        return _findings_gate(gate, document)
    entry = _metric(document, gate.metric)
    key = "change" if gate.kind == "relative" else "delta_s"
    if gate.kind == "absolute" and gate.metric == "step_time" and entry is not None:
        entry = {**entry, "delta_s": None if entry["base_s"] is None or entry["new_s"] is None
                 else entry["new_s"] - entry["base_s"]}
    value = None if entry is None else entry.get(key)
    if value is None:
        raise TrnprofError(f"--fail-if {gate.text!r}: the runs do not give {gate.metric}"
                           + (" (the job metadata lacks samples per step or FLOPs)" if gate.metric in RATES else
                              " (no steady-state steps)"))
    passed = OPS[gate.op](value, gate.threshold)
    return {"gate": gate.text, "kind": gate.kind, "value": value, "significant": entry["significant"],
            "tripped": bool(passed and (entry["significant"] or strict)),
            "past_threshold": bool(passed)}


def evaluate_gates(texts, document: dict, *, strict: bool = False) -> list[dict]:
    """Every gate of `texts` judged (all parsed first, so one bad expression fails early)."""
    gates = [parse_gate(text) for text in texts]
    return [evaluate(gate, document, strict=strict) for gate in gates]
