"""The one read of a user's file: a whole file, as bytes or as UTF-8 text, where an unreadable
file (missing, a folder, no permission) or text that is not UTF-8 is one error line naming what
the file was meant to be and its path."""

from __future__ import annotations

from pathlib import Path

from .errors import TrnprofError


def read_bytes(path: str | Path, what: str) -> bytes:
    """The bytes of file `path`; one TrnprofError naming `what` and the path when it cannot be read."""
    path = Path(path)
    try:
        return path.read_bytes()
    except OSError as exc:
        raise TrnprofError(f"cannot read {what} {path}: {exc.strerror or type(exc).__name__}") from None


def read_text(path: str | Path, what: str) -> str:
    """A text file as UTF-8; unreadable or not UTF-8 is one error naming `what` and the path."""
    data = read_bytes(path, what)
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise TrnprofError(f"{what} {path}: byte {exc.start}: not UTF-8 text (save it as UTF-8)") from None
