"""Human text formats shared by the terminal, Markdown, SARIF and the report: one of each."""

from __future__ import annotations

import re

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


def share_text(fraction: float) -> str:
    """A share as a percentage with one decimal; a positive share never prints as 0.0 %."""
    if 0 < fraction < 0.0005:
        return f"{fraction * 100:.2g}%"
    return f"{fraction:.1%}"


def cost(impact, projected: dict | None = None) -> str:
    """A finding's impact in the units it has: its one number per step (what its fix is worth,
    `impact.basis` saying how it was priced; a bound is marked as one; the band when the price
    has one), time lost once per job, memory at stake; or that it costs nothing of its own."""
    parts = []
    if impact.seconds_per_step or getattr(impact, "basis", None):
        share = f"{share_text(impact.fraction_of_step)} of step"
        gain_band = (projected or {}).get("gain_band")
        if gain_band:
            share += f", {share_text(gain_band['low'])}..{share_text(gain_band['high'])}"
        basis = getattr(impact, "basis", None)
        if basis == "bound":
            parts.append(f"up to {duration(impact.seconds_per_step)}/step, {share} (bound)")
        elif basis:
            parts.append(f"fix worth {duration(impact.seconds_per_step)}/step, {share}, by {basis}")
        else:
            parts.append(f"{duration(impact.seconds_per_step)}/step, {share}")
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


# Control characters a name may carry into a terminal: C0 but tab and newline, DEL, C1 (ESC
# starts clear-screen and OSC 8 hyperlink sequences; a lone CR overwrites the line) and the
# bidirectional overrides that reorder what is shown.
_CONTROL = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u200e\u200f\u202a-\u202e\u2066-\u2069]")
# Markdown (CommonMark / GitHub) syntax, backslash-escaped so a name renders as the text it is,
# never as a link, image, emphasis, code span, strikethrough or table column; a line-start
# marker (heading, list, quote) and a bare URL's "://" or "www." too. HTML becomes entities.
_MARKDOWN = re.compile(r"([\\`*_\[\]|~])")
_LINE_START = re.compile(r"^(\d*)([.)](?=\s|$)|(?<!\d)[#+=-])")
_AUTOLINK = re.compile(r"(?i)(?<=[a-z])(:)(?=//)|(?<=www)(\.)")
_HTML = {"&": "&amp;", "<": "&lt;", ">": "&gt;"}


def terminal(text: str) -> str:
    """`text` safe to print: control characters (other than tab and newline) shown as escapes."""
    return _CONTROL.sub(lambda m: m.group().encode("unicode_escape").decode("ascii"), str(text))


def markdown_text(value) -> str:
    """A value as inline Markdown text: one line (CR, LF and other whitespace runs become one
    space, other control characters escapes), HTML and Markdown syntax escaped."""
    text = terminal(" ".join(str(value).split()))
    text = _MARKDOWN.sub(r"\\\1", text)
    text = _AUTOLINK.sub(lambda m: "\\" + m.group(), text)
    text = "".join(_HTML.get(char, char) for char in text)
    return _LINE_START.sub(r"\1\\\2", text)


def _cell(value, escape) -> str:
    if isinstance(value, float):
        value = f"{value:.4g}"
    return markdown_text(value) if escape else " ".join(str(value).split()).replace("|", "\\|")


def markdown_table(rows, head, *, markdown: bool = False) -> list[str]:
    """Lines of a Markdown table: `rows` are sequences in the order of `head`. Cells are data,
    escaped (`markdown_text`); `markdown=True` keeps their Markdown (docs written by trnprof
    from its own code, never values from a run)."""
    escape = not markdown
    lines = ["| " + " | ".join(_cell(h, escape) for h in head) + " |", "|" + "---|" * len(head)]
    lines += ["| " + " | ".join(_cell(c, escape) for c in row) + " |" for row in rows]
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
    """How the finding's one number was priced, for text and Markdown: the change and the method
    (never a second saving), or the bound's assumption; None when not projected. A finding with
    no step time of its own (memory) whose fix the model prices shows the fix's step-time effect
    here, its only time figure."""
    projected = getattr(finding, "projected", None)
    if not projected:
        return None
    method, reason = projected.get("method"), projected.get("reason")
    if projected.get("gain_fraction") is None:
        why = f" ({reason})" if reason else ""
        return f"price: none per step{why}: {projected.get('assumes') or 'the fix was not priced'}"
    if method == "bound":
        why = f" ({reason})" if reason else ""
        return f"price: a bound{why}, assuming {projected.get('assumes') or 'the measured time goes'}"
    change = change_text(projected["change"]) if projected.get("change") else ""
    if method == "replay":
        steps = f" over {projected['steps']} steady steps" if projected.get("steps") else ""
        line = f"price: replay of the run's dependency graph{steps} with {', '.join(projected['change']['scale'])}"
    else:
        band = projected.get("band") or {}
        spread = f", {band['low_s'] * 1e3:.4g}..{band['high_s'] * 1e3:.4g} ms" if band else ""
        effective = projected.get("effective_step_s")
        wall = f", {effective * 1e3:.4g} ms effective" if effective is not None else ""
        line = f"price: the {method} with {change}: {projected['step_time_s'] * 1e3:.4g} ms typical step{spread}{wall}"
        if not getattr(finding.impact, "seconds_per_step", 0) and not getattr(finding.impact, "basis", None):
            line += f" ({-projected['gain_fraction']:+.1%} wall time per step)"
    if projected.get("note"):
        line += f"; {projected['note']}"
    return line
