"""Human text formats shared by the terminal, Markdown, SARIF and the report: one of each."""

from __future__ import annotations

import msgspec

from .units import GIB, KIB, MIB


def duration(seconds: float | None) -> str:
    """A duration in the unit that reads best: '1.234 s', '12.30 ms', '45.0 µs'."""
    if seconds is None:
        return "n/a"
    if seconds == 0:
        return "0 s"
    if seconds >= 1:
        return f"{seconds:,.3f} s"
    if seconds >= 1e-3:
        return f"{seconds * 1e3:,.2f} ms"
    return f"{seconds * 1e6:,.1f} µs"


def size(n_bytes: float | None) -> str:
    """Bytes in binary units: '1.50 GiB', '12.00 MiB', '512 B'; 'unknown' for None."""
    if n_bytes is None:
        return "unknown"
    for unit, scale in (("GiB", GIB), ("MiB", MIB), ("KiB", KIB)):
        if abs(n_bytes) >= scale:
            return f"{n_bytes / scale:,.2f} {unit}"
    return f"{n_bytes:,.0f} B"


def cost(impact) -> str:
    """A finding's impact in the units it has: time per step with its share of the step, time
    lost once per job, memory at stake; or that it costs nothing of its own."""
    parts = []
    if impact.seconds_per_step:
        parts.append(f"{duration(impact.seconds_per_step)}/step, {impact.fraction_of_step:.1%} of step")
    if impact.one_time_seconds:
        parts.append(f"{duration(impact.one_time_seconds)} once")
    if impact.bytes:
        parts.append(f"{size(impact.bytes)} of memory")
    return "; ".join(parts) if parts else "no cost of its own"


def compact(values) -> str:
    """Sorted integers as ranges: [0, 1, 2, 5, 7, 8] -> '0-2, 5, 7-8'."""
    values = sorted(set(values))
    if not values:
        return "none"
    parts, start, prev = [], values[0], values[0]
    for value in values[1:] + [None]:
        if value is not None and value == prev + 1:
            prev = value
            continue
        parts.append(str(start) if start == prev else f"{start}-{prev}")
        if value is not None:
            start = prev = value
    return ", ".join(parts)


def _cell(value) -> str:
    if isinstance(value, float):
        value = f"{value:.4g}"
    return " ".join(str(value).split()).replace("|", "\\|")


def markdown_table(rows, head) -> list[str]:
    """Lines of a Markdown table: `rows` are sequences in the order of `head`."""
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    lines += ["| " + " | ".join(_cell(c) for c in row) + " |" for row in rows]
    return lines


def change_text(change: dict) -> str:
    """`input.workers=2, faults=[]`: a change as the --set keys that make it."""
    return ", ".join(_flat(change))


def _flat(change: dict, prefix: str = "") -> list[str]:
    out = []
    for key, value in change.items():
        if isinstance(value, dict):
            out += _flat(value, f"{prefix}{key}.")
        else:
            out.append(f"{prefix}{key}={msgspec.json.encode(value).decode()}")
    return out


def gain_line(finding) -> str | None:
    """`fix this -> -12.3 % step time (band ...)` for text and Markdown; None when not projected."""
    projected = getattr(finding, "projected", None)
    if not projected:
        return None
    if projected.get("gain_fraction") is None:
        return f"fix this -> not projected: {projected.get('reason')}"
    change = change_text(projected["change"])
    band = projected.get("band") or {}
    spread = ""
    if band:
        spread = f", {band['low_s'] * 1e3:.4g}..{band['high_s'] * 1e3:.4g} ms"
    return (f"fix this -> {-projected['gain_fraction']:+.1%} step time "
            f"({change}: {projected['step_time_s'] * 1e3:.4g} ms{spread})")
