"""What an ingest format is (`Format`) and what its sniff sees (`Probe`); the registry of formats
is `formats.py`."""

from __future__ import annotations

import importlib
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

from trnprof.errors import TrnprofError

SNIFF_BYTES = 1 << 16  # what a sniff sees of a file: its first 64 KiB (gunzipped)


@dataclass(frozen=True)
class Probe:
    """What a sniff may look at: the input's path and, for a file, its first SNIFF_BYTES
    (gunzipped when the file is gzip); a folder's head is empty."""

    path: Path
    head: bytes = b""
    is_dir: bool = False

    @property
    def text(self) -> bytes:
        """The head without its leading whitespace."""
        return self.head.lstrip()


@dataclass(frozen=True)
class Format:
    """One ingest format. reader: a function or "package.module:function", imported when an input
    needs it. folder: a whole folder is one input of this format (its sniff sees folders too).
    streamed: the reader is Kineto's `read_trace` (events in batches), not a `Source` reader."""

    name: str
    sniff: Callable[[Probe], bool]
    reader: Callable | str
    doc: str = ""
    folder: bool = False
    streamed: bool = False

    def load_reader(self) -> Callable:
        if not isinstance(self.reader, str):
            return self.reader
        module, _, function = self.reader.partition(":")
        try:
            return getattr(importlib.import_module(module), function)
        except (ImportError, AttributeError) as exc:
            raise TrnprofError(f"ingest format {self.name}: cannot load its reader {self.reader} ({exc})") from None
