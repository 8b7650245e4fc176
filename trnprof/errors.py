"""Errors a user can cause. The CLI prints them as one line and exits 2; never a traceback."""


class TrnprofError(Exception):
    """A problem with the user's input: what went wrong, which value, what to do."""


class NotARunError(TrnprofError):
    """A folder that is not a complete trnprof run."""


def first_line(exc: BaseException) -> str:
    """The first line of an exception's message (DuckDB's span several), or its type's name."""
    text = str(exc).strip()
    return text.splitlines()[0] if text else type(exc).__name__
