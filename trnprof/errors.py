"""Errors a user can cause. The CLI prints them as one line and exits 2; never a traceback."""


class TrnprofError(Exception):
    """A problem with the user's input: what went wrong, which value, what to do."""


class NotARunError(TrnprofError):
    """A folder that is not a complete trnprof run."""
