"""Where trnprof keeps what it can always make again (rule packs compiled, runs of traces given to
`analyze`, the report's JavaScript bundle): `$TRNPROF_CACHE_DIR`, else `$XDG_CACHE_HOME/trnprof`,
else `~/.cache/trnprof`. Deleting the folder is always safe."""

from __future__ import annotations

import os
from pathlib import Path


def cache_dir() -> Path:
    explicit = os.environ.get("TRNPROF_CACHE_DIR")
    if explicit:
        return Path(explicit)
    return Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "trnprof"
