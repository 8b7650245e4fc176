"""Reading small Neuron tool outputs: whole text (plain or gzip), one clear error when unreadable."""

from __future__ import annotations

import gzip
import zlib
from pathlib import Path

from trnprof.errors import TrnprofError


def open_text(path: Path) -> str:
    try:
        with path.open("rb") as handle:
            data = handle.read()
        if data[:2] == b"\x1f\x8b":
            data = gzip.decompress(data)
        return data.decode("utf-8")
    except (EOFError, OSError, zlib.error) as exc:
        raise TrnprofError(f"{path}: truncated or unreadable ({exc})") from None
    except UnicodeDecodeError as exc:
        raise TrnprofError(f"{path}: not UTF-8 text ({exc})") from None
