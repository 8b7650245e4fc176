"""The one reading of msgspec's validation errors: which field, what is wrong."""

from __future__ import annotations

import re

import msgspec

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
