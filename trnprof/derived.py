"""Where computed stdlib views are stored: the `derived/` cache inside the run folder.

A stored view is a folder of Parquet files (one per batch of ranks) that later sessions read
instead of recomputing the view. Entries live in `RUN/derived/v<FORMAT>-<stdlib>-<run>/<view>/`,
where <stdlib> fingerprints the stdlib SQL and the trnprof version and <run> the run's content
(its manifest and the name, size, modification and change time and inode of each data file, so a
same-size replacement with the old modification time changes it too): a changed run or stdlib
never reads stale results.

Safety (docs/hardening.md):
- `derived/` and every entry must be real folders: a symbolic link (e.g. unpacked from a
  tarball) is never followed, written into or swept; trnprof then works without the cache.
- A view's folder is written under a temporary name with `_checksums.json` (size and SHA-256 of
  each part) and renamed into place when complete; an entry is verified before its first read,
  and a bad one is removed with one warning line and recomputed.
- Every session holds a shared lock (`flock`) on its key's `.lock` file; entries of other keys
  are swept only under an exclusive lock, so a process (of any trnprof version) never loses the
  folder it reads. Only folders named like keys inside the real `derived/` are ever removed.
- Nothing there is opened so that it could block or read without bound: a `.lock` is opened
  without blocking and used only when it is a regular file (a FIFO or device planted there means
  working without the cache, with one warning); `_checksums.json` is read as a regular file of
  at most MAX_CHECKSUMS_BYTES, and a part is hashed only when it is a regular file.
- When the run folder cannot be written (read-only media, a shipped sample, a full disk, a
  quota), or TRNPROF_CACHE=off, views are stored in the session's private temporary folder
  instead and vanish with it; a failed write says so in one warning line.
"""

from __future__ import annotations

import fcntl
import hashlib
import json
import os
import re
import shutil
import stat
import sys
from functools import lru_cache
from importlib import resources
from pathlib import Path

from . import atomic
from ._version import __version__
from .cachedir import NotRegular, read_regular
from .processes import alive
from .schema import MANIFEST_FILE, PARTITIONED_TABLES, TABLE_COLUMNS

FORMAT = 2  # 2: entries carry _checksums.json
FOLDER = "derived"
CACHE_ENV = "TRNPROF_CACHE"  # "off" disables the cache in the run folder
CHECKSUMS = "_checksums.json"
DEVICE_FOLDER = "neuron_explorer"  # the Neuron Explorer device profile's tables
LOCK = ".lock"
MAX_CHECKSUMS_BYTES = 16 * 2**20  # a part's line is ~100 bytes: room for 100,000 parts
KEY_NAME = re.compile(r"^v\d+-[0-9a-f]{16}-[0-9a-f]{16}$")  # the only folders ever swept
_LOCK_TRIES = 8


def warn(message: str) -> None:
    """One warning line on stderr."""
    print(f"warning: {message}", file=sys.stderr)


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
    """The run's table files and its device profile's, in a stable order."""
    files = []
    for table in TABLE_COLUMNS:
        if table in PARTITIONED_TABLES:
            files += sorted((run_dir / table).glob("rank=*/*.parquet"))
        elif (run_dir / f"{table}.parquet").is_file():
            files.append(run_dir / f"{table}.parquet")
    # the device profile (trnprof/device_tables.py): the device views read it and are stored too
    files += sorted((run_dir / DEVICE_FOLDER).glob("*.parquet"))
    return files


def run_fingerprint(run_dir: Path, files: list[Path]) -> str:
    """Hash of the manifest and of each data file's name, size, inode, modification and change
    time (the change time cannot be set back by a user: a rewrite in place always changes it)."""
    digest = hashlib.sha256((run_dir / MANIFEST_FILE).read_bytes())
    for path in files:
        stat = path.stat()
        digest.update(
            f"{path.relative_to(run_dir)}:{stat.st_size}:{stat.st_ino}:{stat.st_mtime_ns}:{stat.st_ctime_ns}\n".encode()
        )
    return digest.hexdigest()[:16]


def is_real_folder(path: Path) -> bool:
    """A folder that is not a symbolic link (nor reached through one at its last step)."""
    return path.is_dir() and not path.is_symlink()


def cache_disabled() -> bool:
    return os.environ.get(CACHE_ENV, "").lower() in ("off", "0", "false", "no")


def _remove_orphans(root: Path) -> None:
    """Remove the staging folders of processes that died before committing them."""
    for staging in root.glob(".*.tmp"):
        parts = staging.name.split(".")
        if len(parts) >= 4 and parts[-3].isdigit() and not alive(int(parts[-3])) and is_real_folder(staging):
            shutil.rmtree(staging, ignore_errors=True)


def _lock(root: Path, mode: int) -> int:
    """An open descriptor of `root/.lock` locked with `mode` (fcntl.LOCK_SH or LOCK_EX, maybe
    | LOCK_NB). Retried when the file was removed between open and lock (a sweep won the race),
    so the lock held is always the one on the file in place."""
    for _ in range(_LOCK_TRIES):
        fd = os.open(root / LOCK, os.O_RDONLY | os.O_CREAT | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC, 0o666)
        try:
            if not stat.S_ISREG(os.fstat(fd).st_mode):  # a FIFO would block a reader; not ours
                raise NotRegular(f"{root / LOCK} is not a regular file")
            fcntl.flock(fd, mode)
            if os.fstat(fd).st_ino == os.stat(root / LOCK, follow_symlinks=False).st_ino:
                return fd
        except FileNotFoundError:
            pass
        except BaseException:
            os.close(fd)
            raise
        os.close(fd)
        root.mkdir(exist_ok=True)
    raise OSError(f"cannot lock {root / LOCK}")


def sweep(folder: Path, keep: str | None = None) -> list[str]:
    """Remove the entries of other keys than `keep` that no process holds; returns their names.
    Only key-named real folders inside the real `folder` are touched."""
    if not is_real_folder(folder):
        return []
    removed = []
    for entry in sorted(folder.iterdir()):
        if entry.name == keep or not KEY_NAME.match(entry.name) or not is_real_folder(entry):
            continue
        try:
            fd = _lock(entry, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:  # held by a reader (BlockingIOError), or not ours to lock
            continue
        try:
            shutil.rmtree(entry, ignore_errors=True)
            removed.append(entry.name)
        finally:
            os.close(fd)
    return removed


def _digest(path: Path) -> str:
    with open(path, "rb") as handle:
        return hashlib.file_digest(handle, "sha256").hexdigest()


def entry_problem(folder: Path) -> str | None:
    """What is wrong with a stored view's folder (None when whole): its parts against its
    `_checksums.json`."""
    if not is_real_folder(folder):
        return "a symbolic link, not a folder trnprof wrote"
    try:
        text = read_regular(folder / CHECKSUMS, MAX_CHECKSUMS_BYTES)
        if text is None:
            raise FileNotFoundError(folder / CHECKSUMS)
        listed = json.loads(text.decode("utf-8"))["parts"]
        found = {p.name for p in folder.iterdir() if p.name.endswith(".parquet")}
        if not isinstance(listed, dict) or found != set(listed):
            return "its parts differ from its checksum list"
        for name, (size, digest) in listed.items():
            part = (folder / name).lstat()
            if not stat.S_ISREG(part.st_mode) or part.st_size != size or _digest(folder / name) != digest:
                return f"{name} does not match its checksum"
    except PermissionError:
        raise  # not damaged: another user's entry this one cannot read
    except NotRegular:
        return f"{CHECKSUMS} is not a regular file of at most {MAX_CHECKSUMS_BYTES:,} bytes"
    except (OSError, ValueError, KeyError, TypeError) as exc:
        return f"no valid checksum list ({type(exc).__name__})"
    return None


def entries(run_dir: Path):
    """(key, view, folder) of every stored view in the run's real `derived/` folder."""
    folder = run_dir / FOLDER
    if not is_real_folder(folder):
        return
    for key in sorted(folder.iterdir()):
        if KEY_NAME.match(key.name) and is_real_folder(key):
            for view in sorted(key.iterdir()):
                if not view.name.startswith(".") and (view.is_dir() or view.is_symlink()):
                    yield key.name, view.name, view


class Store:
    """The stored views of one attached run."""

    def __init__(self, run_dir: Path, files: list[Path], scratch: Path):
        self.run_dir = run_dir
        self.key = f"v{FORMAT}-{stdlib_fingerprint()}-{run_fingerprint(run_dir, files)}"
        self._scratch = scratch / f"derived-{self.key}"
        self._fd: int | None = None
        self._verified: set[str] = set()
        self.root = self._in_run() or self._scratch
        self.root.mkdir(parents=True, exist_ok=True)
        self.persistent = self.root != self._scratch
        if self.persistent:
            _remove_orphans(self.root)

    def _in_run(self) -> Path | None:
        """`RUN/derived/KEY`, held, when the cache is on and can be written there (after sweeping
        other keys' entries that no process holds)."""
        folder = self.run_dir / FOLDER
        if cache_disabled():
            return None
        if folder.is_symlink() or (folder.exists() and not folder.is_dir()):
            if folder.is_symlink():
                warn(f"{folder} is a symbolic link: trnprof does not follow it and works without the cache")
            return None
        root = folder / self.key
        try:
            folder.mkdir(exist_ok=True)
            root.mkdir(exist_ok=True)
            if not is_real_folder(root):
                return None
            self._fd = _lock(root, fcntl.LOCK_SH)
            atomic.temp_folder(root, ".probe-").rmdir()
        except OSError as exc:
            if isinstance(exc, NotRegular):
                warn(
                    f"{exc}: trnprof does not use it and works without the cache (`trnprof check --repair` removes it)"
                )
            self.release()
            return None
        sweep(folder, keep=self.key)
        return root

    def release(self) -> None:
        """Let other processes sweep this entry (when the session closes)."""
        if self._fd is not None:
            os.close(self._fd)
            self._fd = None

    def __del__(self):
        self.release()

    def fall_back(self, reason: str) -> None:
        """Store views in the session's scratch folder from now on (the run folder failed)."""
        warn(f"cannot write the cache in {self.run_dir / FOLDER} ({reason}): computing without it")
        self.release()
        self.root, self.persistent = self._scratch, False
        self.root.mkdir(parents=True, exist_ok=True)

    def files(self, view: str) -> str | None:
        """Glob of the stored Parquet files of `view`, or None when it is not stored. A stored
        entry is verified before its first read; a bad one is removed (it is recomputed)."""
        folder = self.root / view
        if not is_real_folder(folder):
            return None
        if view not in self._verified:
            try:
                problem = entry_problem(folder)
            except PermissionError as exc:
                self.fall_back(f"{view}: {exc.strerror}")
                return None
            if problem:
                warn(f"stored view {view} of {self.run_dir} is damaged ({problem}): removed, recomputing it")
                shutil.rmtree(folder, ignore_errors=True)
                return None
            self._verified.add(view)
        return str(folder / "*.parquet")

    def staging(self, view: str) -> Path:
        """A fresh folder to write `view`'s files into before `commit`."""
        return atomic.temp_folder(self.root, f".{view}.{os.getpid()}.")

    def commit(self, view: str, staging: Path) -> str:
        """Record the parts' checksums and move a complete staging folder into place; returns
        the stored files' glob. When another process stored the view meanwhile, its entry is
        kept and ours dropped."""
        try:
            parts = {p.name: [p.stat().st_size, _digest(p)] for p in sorted(staging.glob("*.parquet"))}
            (staging / CHECKSUMS).write_text(json.dumps({"parts": parts}), encoding="utf-8")
        except OSError:  # a full disk: nothing half-written stays behind
            self.discard(staging)
            raise
        try:
            staging.rename(self.root / view)
            self._verified.add(view)
        except OSError:
            shutil.rmtree(staging, ignore_errors=True)
            if not is_real_folder(self.root / view):
                raise
        return self.files(view)

    def discard(self, staging: Path) -> None:
        shutil.rmtree(staging, ignore_errors=True)


def _links(folder: Path):
    """Symbolic links in the real `derived/` folder and in its key folders (never made by trnprof)."""
    for entry in sorted(folder.iterdir()):
        if entry.is_symlink():
            yield entry
        elif KEY_NAME.match(entry.name) and entry.is_dir():
            yield from (view for view in sorted(entry.iterdir()) if view.is_symlink())


def _odd_locks(folder: Path):
    """`.lock` files of key folders that are not regular files (a FIFO, a device, a folder)."""
    for entry in sorted(folder.iterdir()):
        lock = entry / LOCK
        if (
            KEY_NAME.match(entry.name)
            and is_real_folder(entry)
            and (lock.exists() or lock.is_symlink())
            and not stat.S_ISREG(lock.lstat().st_mode)
        ):
            yield lock


def cache_problems(run_dir: Path) -> list[tuple[str, Path]]:
    """What is wrong with the run's cache (`trnprof check`), each with the path to remove: a
    symbolic link where trnprof keeps the cache, a lock that is not a regular file, or a stored
    view whose parts fail their checksums."""
    folder = run_dir / FOLDER
    if folder.is_symlink():
        return [(f"{FOLDER} is a symbolic link to {os.readlink(folder)} (trnprof does not use it)", folder)]
    if not folder.is_dir():
        return []
    found = [
        (f"{entry.relative_to(run_dir)} is a symbolic link to {os.readlink(entry)}", entry) for entry in _links(folder)
    ]
    found += [
        (f"{lock.relative_to(run_dir)} is not a regular file", lock)
        for lock in _odd_locks(folder)
        if not lock.is_symlink()
    ]  # a link is listed above
    for key, view, path in entries(run_dir):
        if not key.startswith(f"v{FORMAT}-"):
            continue  # an older format's entry: never read, swept on the next open
        try:
            problem = None if path.is_symlink() else entry_problem(path)
        except PermissionError as exc:
            problem = f"unreadable ({exc.strerror})"
        if problem:
            found.append((f"{FOLDER}/{key}/{view}: stored view damaged ({problem})", path))
    return found


def remove(path: Path) -> None:
    """Remove a bad cache entry: a link itself (never what it points to), or a folder."""
    if path.is_symlink() or not path.is_dir():
        path.unlink(missing_ok=True)
    else:
        shutil.rmtree(path, ignore_errors=True)
