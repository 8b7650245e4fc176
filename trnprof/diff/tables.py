"""The diff document as titled tables of display strings, shared by the text and Markdown
renderers (and the report's comparison section)."""

from __future__ import annotations

from ..breakdown import LABELS
from ..textfmt import size


def duration(seconds) -> str:
    if seconds is None:
        return "n/a"
    sign, seconds = ("-" if seconds < 0 else ""), abs(seconds)
    if seconds >= 1:
        return f"{sign}{seconds:.3f} s"
    if seconds >= 1e-3:
        return f"{sign}{seconds * 1e3:.2f} ms"
    return f"{sign}{seconds * 1e6:.1f} us" if seconds else "0"


def signed_duration(seconds) -> str:
    return "n/a" if seconds is None else ("+" if seconds > 0 else "") + duration(seconds)


def percent(change) -> str:
    return "n/a" if change is None else f"{change:+.1%}"


def verdict(entry: dict) -> str:
    return "significant" if entry.get("significant") else "within noise"


def _verdict_p(entry: dict, *keys: str) -> str:
    values = ", ".join(
        f"{label}={entry[key]:.2g}" for key, label in zip(keys, ("p", "bulk p")) if entry.get(key) is not None
    )
    return f"{verdict(entry)} ({values})" if values else verdict(entry)


def _rate_rows(name: str, entry: dict | None, show) -> list[dict]:
    rows = []
    for label, view in ((name, entry), (f"effective {name}", (entry or {}).get("effective"))):
        if view:
            rows.append(
                {
                    "metric": label,
                    "base": show(view["base"]),
                    "new": show(view["new"]),
                    "change": percent(view["change"]),
                    "verdict": verdict(view),
                }
            )
    return rows


def headline(document: dict) -> list[dict]:
    step = document["step_time"]
    rows = [
        {
            "metric": "step time (typical)",
            "base": duration(step["base_s"]),
            "new": duration(step["new_s"]),
            "change": percent(step["change"]),
            "verdict": _verdict_p(step, "p_value"),
        }
    ]
    effective = step.get("effective")
    if effective:
        rows.append(
            {
                "metric": "effective step",
                "base": duration(effective["base_s"]),
                "new": duration(effective["new_s"]),
                "change": percent(effective["change"]),
                "verdict": _verdict_p(effective, "p_value", "bulk_p_value"),
            }
        )
    throughput = document.get("throughput")
    if throughput:
        unit = throughput["unit"]
        rows += _rate_rows("throughput", throughput, lambda v: f"{v:,.1f} {unit}")
    rows += _rate_rows("MFU", document.get("mfu"), lambda v: f"{v:.2%}")
    return rows


def breakdown(document: dict) -> list[dict]:
    return [
        {
            "category": LABELS[row["category"]],
            "base": duration(row["base_s"]),
            "new": duration(row["new_s"]),
            "delta": signed_duration(row["delta_s"]),
            "change": percent(row["change"]),
            "verdict": verdict(row),
        }
        for row in document["breakdown"]
    ]


def ops(rows: list[dict]) -> list[dict]:
    return [
        {
            "op": row["name"],
            "kind": row["kind"],
            "lane": row["lane"],
            "base": duration(row["base_s"]),
            "new": duration(row["new_s"]),
            "delta": signed_duration(row["delta_s"]),
            "change": "new op" if row["change"] is None else percent(row["change"]),
            "verdict": verdict(row),
        }
        for row in rows
    ]


def collectives(document: dict) -> list[dict]:
    def bw(value):
        return "n/a" if value is None else f"{value / 1e9:.2f} GB/s"

    return [
        {
            "op": row["coll_op"],
            "size class": size(row["size_class"]),
            "per step": f"{row['base_per_step'] or 0:g} -> {row['new_per_step'] or 0:g}",
            "base busbw": bw(row["base_busbw"]),
            "new busbw": bw(row["new_busbw"]),
            "busbw change": percent(row["busbw_change"]),
        }
        for row in document["collectives"]
    ]


def memory(document: dict) -> list[dict]:
    return [
        {
            "category": row["category"],
            "base": size(row["base_bytes"]),
            "new": size(row["new_bytes"]),
            "change": percent(row["change"]),
        }
        for row in document["memory"]
    ]


def _cost(per_step: float, once: float = 0.0, nbytes: float = 0) -> str:
    """A rule's cost in its own units, as the findings table states it: per step, once, bytes."""
    parts = (
        ([f"{duration(per_step)}/step"] if per_step else [])
        + ([f"{duration(once)} once"] if once else [])
        + ([size(nbytes)] if nbytes else [])
    )
    return ", ".join(parts) or "no cost of its own"


def _rule_cost(d: dict) -> str:
    return _cost(d["seconds_per_step"], d.get("one_time_seconds", 0.0), d.get("bytes", 0))


def findings(document: dict) -> list[dict]:
    found = document["findings"]
    rows = [
        {"status": "new", "rule": f"{d['code']} {d['name']}", "severity": d["severity"], "impact": _rule_cost(d)}
        for d in found["new_details"]
    ]
    # resolved: the rule no longer finds it and the quantity it measures dropped
    rows += [
        {
            "status": "resolved",
            "rule": f"{d['code']} {d['name']}",
            "severity": d["severity"],
            "impact": f"was {_rule_cost(d)}",
        }
        for d in found["resolved_details"]
    ]
    rows += [
        {"status": "not reported", "rule": f"{d['code']} {d['name']}", "severity": d["severity"], "impact": d["reason"]}
        for d in found.get("unreported", [])
    ]
    rows += [
        {
            "status": "in both",
            "rule": f"{c['code']} {c['name']}",
            "severity": c["new_severity"]
            if c["base_severity"] == c["new_severity"]
            else f"{c['base_severity']} -> {c['new_severity']}",
            "impact": f"{_cost(c['base_s'], c.get('base_once_s', 0.0), c.get('base_bytes', 0))} -> "
            f"{_cost(c['new_s'], c.get('new_once_s', 0.0), c.get('new_bytes', 0))}",
        }
        for c in found["changed"]
    ]
    return rows


def sections(document: dict) -> list[tuple[str, list[dict]]]:
    """(title, rows) in display order; empty tables are kept (the renderers say 'none')."""
    moved = document.get("moved_by")
    return [
        (
            "Step time, throughput, MFU (typical: median over steady steps; effective: wall time per step)",
            headline(document),
        ),
        (
            "Step breakdown per rank and step (median over steady steps of the ranks' mean)"
            + (f"; the step time moved with {LABELS[moved]}" if moved else ""),
            breakdown(document),
        ),
        ("Top regressions by op (mean time per rank and step)", ops(document["top_regressions"])),
        ("Top improvements by op", ops(document["top_improvements"])),
        ("Collectives by op and size class", collectives(document)),
        ("Device memory at the peak, by category (largest rank)", memory(document)),
        ("Findings by rule", findings(document)),
    ]
