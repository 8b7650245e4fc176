"""Human text formats shared by the terminal, Markdown, SARIF and the report: one of each."""

from __future__ import annotations


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


def size(n_bytes: float) -> str:
    """Bytes in binary units: '1.50 GiB', '12.0 MiB', '512 B'."""
    for unit, scale in (("GiB", 2**30), ("MiB", 2**20), ("KiB", 2**10)):
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


BRIEF = 60  # characters of a user's value quoted in an error message


def brief(value, limit: int = BRIEF) -> str:
    """A user's value for an error message, bounded whatever its size: a short repr, or its
    type and size (never a repr of a whole, perhaps huge, structure)."""
    if isinstance(value, (dict, list, tuple, set)):
        return f"a {type(value).__name__} of {len(value):,} item(s)"
    if isinstance(value, int) and not isinstance(value, bool) and value.bit_length() > 128:
        return f"an integer of {value.bit_length():,} bits"
    if isinstance(value, str) and len(value) > limit:
        return repr(value[:limit]) + f"... ({len(value):,} characters)"
    text = repr(value)
    return text if len(text) <= limit else text[:limit] + "..."
