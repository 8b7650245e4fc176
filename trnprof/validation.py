"""The one reading of msgspec's validation errors (which field, what is wrong), and the one
check of a number a user or a file gives (`Range`: finite, inside its documented range)."""

from __future__ import annotations

import math
import re
from dataclasses import dataclass

import msgspec

from trnprof.errors import TrnprofError

_AT = re.compile(r"^(.*?)(?: - at `\$(.*)`)?$", re.S)


def field_path(where: str) -> list[str | int]:
    """msgspec's `.a.b[2].c` as ['a', 'b', 2, 'c']."""
    return [int(index) if index else key for key, index in re.findall(r"\.(\w+)|\[(\d+)\]", where)]


def dotted(path: list[str | int]) -> str:
    """['a', 'b', 2, 'c'] as 'a.b[2].c'."""
    text = ""
    for part in path:
        text += f"[{part}]" if isinstance(part, int) else (f".{part}" if text else str(part))
    return text


def explain(exc: msgspec.ValidationError) -> tuple[list[str | int], str]:
    """(the path of the offending field, msgspec's problem without its `- at ...` suffix)."""
    match = _AT.match(str(exc))
    return field_path(match.group(2) or ""), match.group(1)


# ---- numbers a user or a file gives: finite and inside a documented range (docs/cli.md, "Numbers")


@dataclass(frozen=True)
class Range:
    """The documented range of one kind of number: low <= value <= high (low excluded when
    `low_open`), an integer when `integer`. `unit` names it in the error line."""

    low: float
    high: float
    unit: str = ""
    integer: bool = False
    low_open: bool = False

    def describe(self) -> str:
        kind = "an integer" if self.integer else "a number"
        low = f"> {self.low:g}" if self.low_open else f">= {self.low:g}"
        unit = f" ({self.unit})" if self.unit else ""
        return f"{kind} {low} and <= {self.high:g}{unit}"

    def check(self, value, what: str) -> float | int:
        """`value` (a number, or its text) as a number in range; one TrnprofError line naming
        `what` and the range otherwise. nan, inf and -inf are never in range."""
        number = _number(value)
        if number is None or not self.contains(number) or (self.integer and number != int(number)):
            raise TrnprofError(f"{what} {_shown(value)}: not {self.describe()}")
        return int(number) if self.integer else number

    def contains(self, number: float) -> bool:
        above = number > self.low if self.low_open else number >= self.low
        return math.isfinite(number) and above and number <= self.high


def _number(value) -> float | None:
    if isinstance(value, bool):
        return None
    if isinstance(value, (int, float)):
        return float(value) if not isinstance(value, int) or abs(value) < 2**63 else math.inf
    try:
        return float(str(value).strip())
    except (ValueError, OverflowError):
        return None


def _shown(value) -> str:
    text = value if isinstance(value, str) else repr(value)
    return text if len(text) <= 40 else text[:37] + "..."


TIMEOUT_S = Range(0.001, 86_400, "seconds")  # a rule query's time limit: 1 ms to a day
THREADS = Range(1, 1024, "threads", integer=True)  # DuckDB's worker threads
MEMORY_BYTES = Range(16 * 2**20, 2**50, "bytes")  # a rule query's memory limit: 16 MiB to 1 PiB
SCALE_FACTOR = Range(0, 1000)  # --scale SELECTOR=FACTOR, and the product per node
