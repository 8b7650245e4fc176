"""Whether long computations draw a progress bar on stderr: on under the CLI, off for the API.
A module of its own so that turning it on loads nothing (the CLI does it before any command)."""

_ENABLED = {"views": False}


def show_progress(enabled: bool = True) -> None:
    """Draw a progress bar on stderr while views are computed over many batches (the CLI)."""
    _ENABLED["views"] = enabled


def progress_shown() -> bool:
    return _ENABLED["views"]
