"""Where `analyze TRACE` keeps a trace's run: the user's cache folder, `runs/<key>`, the key a
digest of the trnprof version and every input file's name and sha256, so the same bytes under
any path find the same run. Imports nothing heavy: the ingest started ahead
(trnprof/api/ahead.py) looks here before the ingest's libraries load."""

from __future__ import annotations

import hashlib
from pathlib import Path

from ._version import __version__
from .cachedir import cache_dir


def file_fingerprint(path: str | Path) -> dict:
    """Size and sha256 of an input file, for the manifest's provenance record."""
    path = Path(path)
    digest = hashlib.sha256()
    with path.open("rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    return {"path": str(path), "bytes": path.stat().st_size, "sha256": digest.hexdigest()}


def identity(fingerprints: list[dict]) -> list[tuple[str, str]]:
    """What makes two sets of inputs the same: each file's name and sha256, in order."""
    return sorted((Path(f["path"]).name, f["sha256"]) for f in fingerprints)


def run_folder(inputs: list[tuple[str, str]]) -> Path:
    """The cache's folder for the run of the inputs whose `identity` this is."""
    text = "\0".join([__version__] + [f"{name}\0{digest}" for name, digest in inputs])
    return cache_dir() / "runs" / hashlib.sha256(text.encode()).hexdigest()[:32]
