"""Where computed stdlib views are stored: the `derived/` cache inside the run folder.

A stored view is a folder of Parquet files (one per batch of ranks) that later sessions read
instead of recomputing the view. Entries live in `RUN/derived/v<FORMAT>-<stdlib>-<run>/<view>/`,
where <stdlib> fingerprints the stdlib SQL and the trnprof version and <run> the run's content
(its manifest and the name, size and modification time of each of its data files): a changed
run or stdlib never reads stale results. A view's folder is written under a temporary name and
renamed into place when complete, so a crash never leaves a partial entry that looks whole.
When the run folder cannot be written (read-only media, a shipped sample) or TRNPROF_CACHE=off,
views are stored in the session's private temporary folder instead and vanish with it.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import tempfile
from functools import lru_cache
from importlib import resources
from pathlib import Path

from ._version import __version__
from .schema import MANIFEST_FILE, PARTITIONED_TABLES, TABLE_COLUMNS

FORMAT = 1
FOLDER = "derived"
CACHE_ENV = "TRNPROF_CACHE"  # "off" disables the cache in the run folder


@lru_cache(maxsize=1)
def stdlib_fingerprint() -> str:
    """Hash of every stdlib module's SQL and the trnprof version."""
    digest = hashlib.sha256(f"{FORMAT}:{__version__}".encode())
    package = resources.files("trnprof") / "stdlib"
    for entry in sorted(package.iterdir(), key=lambda p: p.name):
        if entry.name.endswith(".sql"):
            digest.update(entry.name.encode() + b"\0" + entry.read_bytes())
    return digest.hexdigest()[:16]


def data_files(run_dir: Path) -> list[Path]:
    """The run's table files, in a stable order."""
    files = []
    for table in TABLE_COLUMNS:
        if table in PARTITIONED_TABLES:
            files += sorted((run_dir / table).glob("rank=*/*.parquet"))
        elif (run_dir / f"{table}.parquet").is_file():
            files.append(run_dir / f"{table}.parquet")
    return files


def run_fingerprint(run_dir: Path, files: list[Path]) -> str:
    """Hash of the manifest and of each data file's name, size and modification time."""
    digest = hashlib.sha256((run_dir / MANIFEST_FILE).read_bytes())
    for path in files:
        stat = path.stat()
        digest.update(f"{path.relative_to(run_dir)}:{stat.st_size}:{stat.st_mtime_ns}\n".encode())
    return digest.hexdigest()[:16]


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except OSError:
        return True  # exists, owned by someone else
    return True


def _remove_orphans(root: Path) -> None:
    """Remove the staging folders of processes that died before committing them."""
    for staging in root.glob(".*.tmp"):
        parts = staging.name.split(".")
        if len(parts) >= 4 and parts[-3].isdigit() and not _alive(int(parts[-3])):
            shutil.rmtree(staging, ignore_errors=True)


class Store:
    """The stored views of one attached run."""

    def __init__(self, run_dir: Path, files: list[Path], scratch: Path):
        key = f"v{FORMAT}-{stdlib_fingerprint()}-{run_fingerprint(run_dir, files)}"
        self.root = self._writable(run_dir / FOLDER, key) or scratch / f"derived-{key}"
        self.root.mkdir(parents=True, exist_ok=True)
        self.persistent = self.root.parent.parent == run_dir
        _remove_orphans(self.root)

    @staticmethod
    def _writable(folder: Path, key: str) -> Path | None:
        """`folder/key` when the cache is on and the folder can be written, after removing
        entries of other keys (an older stdlib or an earlier content of the run)."""
        if os.environ.get(CACHE_ENV, "").lower() in ("off", "0", "false", "no"):
            return None
        root = folder / key
        try:
            root.mkdir(parents=True, exist_ok=True)
            probe = tempfile.NamedTemporaryFile(dir=root, prefix=".probe-")
            probe.close()
        except OSError:
            return None
        for stale in folder.glob("v*-*"):
            if stale.name != key and stale.is_dir():
                shutil.rmtree(stale, ignore_errors=True)
        return root

    def files(self, view: str) -> str | None:
        """Glob of the stored Parquet files of `view`, or None when it is not stored."""
        folder = self.root / view
        return str(folder / "*.parquet") if folder.is_dir() else None

    def staging(self, view: str) -> Path:
        """A fresh folder to write `view`'s files into before `commit`."""
        return Path(tempfile.mkdtemp(prefix=f".{view}.{os.getpid()}.", suffix=".tmp", dir=self.root))

    def commit(self, view: str, staging: Path) -> str:
        """Move a complete staging folder into place; returns the stored files' glob. When
        another process stored the view meanwhile, its entry is kept and ours dropped."""
        try:
            staging.rename(self.root / view)
        except OSError:
            shutil.rmtree(staging, ignore_errors=True)
            if not (self.root / view).is_dir():
                raise
        return self.files(view)

    def discard(self, staging: Path) -> None:
        shutil.rmtree(staging, ignore_errors=True)
