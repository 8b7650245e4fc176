"""Spark's errors as one line naming the root cause, without the JVM stack (which goes to the
driver's log file, `connect.log_path()`, never to the terminal)."""

from __future__ import annotations

import re

_NOISE = re.compile(r"\s*(SQLSTATE: \w+|Verify the spelling.*)$")
_WRAPPERS = 16  # causes followed at most (a cycle in a cause chain ends the walk too)


def _java(exc: BaseException):
    """The Java Throwable behind a py4j or pyspark error, if any."""
    return getattr(exc, "java_exception", None) or getattr(exc, "_origin", None)


def _root_cause(throwable):
    """The innermost cause: Spark wraps the failure of a task or subquery ("Job aborted due to
    stage failure", "Exception thrown in awaitResult") around the error that says what happened."""
    for _ in range(_WRAPPERS):
        try:
            cause = throwable.getCause()
        except Exception:  # noqa: BLE001 - a gateway that is gone: keep what we have
            return throwable
        if cause is None or cause.equals(throwable):
            return throwable
        throwable = cause
    return throwable


def spark_message(exc: BaseException) -> str:
    """The first line of a Spark (or py4j) error's root cause, trimmed of Spark's advice
    boilerplate. py4j's own first line names only the call ("o39.text")."""
    java = _java(exc)
    text = getattr(exc, "getMessage", None)
    if java is not None:
        try:
            message = _root_cause(java).toString()
        except Exception:  # noqa: BLE001 - the JVM is gone: the Python side's text
            message = str(exc)
    else:
        message = text() if callable(text) else str(exc)
    line = next((part.strip() for part in str(message).splitlines() if part.strip()), type(exc).__name__)
    return _NOISE.sub("", line)[:500]
