"""Spark's errors as one line: the error class and its message, without the JVM stack."""

from __future__ import annotations

import re

_NOISE = re.compile(r"\s*(SQLSTATE: \w+|Verify the spelling.*)$")


def spark_message(exc: BaseException) -> str:
    """The first line of a Spark (or py4j) error, trimmed of Spark's advice boilerplate."""
    java = getattr(exc, "java_exception", None)  # py4j's own first line names only the call ("o39.text")
    text = getattr(exc, "getMessage", None)
    message = java.toString() if java is not None else text() if callable(text) else str(exc)
    line = next((part.strip() for part in str(message).splitlines() if part.strip()), type(exc).__name__)
    return _NOISE.sub("", line)[:500]
