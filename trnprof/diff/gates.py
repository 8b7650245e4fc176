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
always, with strict). step_time, throughput and mfu are judged on both views of the step time, the
typical (median) step and the effective step (wall time per step, recurring outliers included):
the gate trips when either view does. A relative gate on a quantity that is 0 in the base trips on
any significant increase. new_findings gates do not depend on significance.
"""

from __future__ import annotations

import math
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
    kind: str  # "relative" (fraction), "absolute" (seconds per step), "severity", "count"
    threshold: float  # fraction, seconds, severity rank or count


def _error(text: str, why: str) -> TrnprofError:
    return TrnprofError(
        f'--fail-if {text!r}: {why} (e.g. "step_time>+5%", "exposed_comm>+10ms", "new_findings>=medium")'
    )


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
    if not math.isfinite(amount):
        raise _error(text, f"the value {value[:20]}... is not a finite number")
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


def _views(gate: Gate, entry: dict) -> list[tuple[str, dict]]:
    """The entries a gate judges: the typical view, and the effective one where the metric has it."""
    views = [("typical", entry)]
    if gate.metric in ("step_time",) + RATES and entry.get("effective"):
        views.append(("effective", entry["effective"]))
    return views


def _value(gate: Gate, entry: dict) -> float | None:
    """The change a gate compares: relative (a base of 0 with a rise is +inf), or seconds per step."""
    if gate.kind == "absolute":
        if "delta_s" in entry:
            return entry["delta_s"]
        return None if entry.get("base_s") is None or entry.get("new_s") is None else entry["new_s"] - entry["base_s"]
    if entry.get("change") is not None:
        return entry["change"]
    base, new = entry.get("base_s", entry.get("base")), entry.get("new_s", entry.get("new"))
    if base == 0 and new is not None:
        return float("inf") if new > 0 else 0.0
    return None


def _judge(gate: Gate, entry: dict, strict: bool) -> dict | None:
    value = _value(gate, entry)
    if value is None:
        return None
    if value == float("inf") and not OPS[gate.op](value, gate.threshold):
        raise TrnprofError(
            f"--fail-if {gate.text!r}: {gate.metric} is 0 in the base run, so a relative change "
            f'is not defined; give an absolute threshold (e.g. "{gate.metric}<+10ms")'
        )
    passed = OPS[gate.op](value, gate.threshold)
    from_zero = value == float("inf")  # JSON has no infinity: the value is null, `from_zero` true
    return {
        "gate": gate.text,
        "kind": gate.kind,
        "value": None if from_zero else value,
        "from_zero": from_zero,
        "significant": entry["significant"],
        "tripped": bool(passed and (entry["significant"] or strict)),
        "past_threshold": bool(passed),
    }


def evaluate(gate: Gate, document: dict, *, strict: bool = False) -> dict:
    """Whether `gate` trips on `document` (on either view of the step time, for step_time,
    throughput and mfu: `view` says which one the result is); a TrnprofError when the runs lack
    the metric."""
    if gate.metric == "new_findings":
        return _findings_gate(gate, document)
    entry = _metric(document, gate.metric)
    results = []
    for view, judged in _views(gate, entry) if entry is not None else []:
        result = _judge(gate, judged, strict)
        if result is not None:
            results.append({**result, "view": view})
    if not results:
        raise TrnprofError(
            f"--fail-if {gate.text!r}: the runs do not give {gate.metric}"
            + (
                " (the job metadata lacks samples per step or FLOPs)"
                if gate.metric in RATES
                else " (no steady-state steps)"
            )
        )
    return max(results, key=lambda r: (r["tripped"], r["past_threshold"], r["view"] == "typical"))


def evaluate_gates(texts, document: dict, *, strict: bool = False) -> list[dict]:
    """Every gate of `texts` judged (all parsed first, so one bad expression fails early)."""
    gates = [parse_gate(text) for text in texts]
    return [evaluate(gate, document, strict=strict) for gate in gates]
