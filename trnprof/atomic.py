"""Every file and folder trnprof writes outside a run: whole or not at all, with the user's umask.

A file is written to a hidden temporary sibling (`.NAME.XXXX.tmp`) and renamed over the target
only when complete; a failure removes the temporary file and is one error naming the target.
The overwrite contract of every `-o` (docs/cli.md): an existing output is replaced only with
`--force` (`check_replaceable`), and a write without it never replaces a file that appeared while
it worked (`replacing(..., overwrite=False)` links the finished file into place, which fails
when the name is taken).
`tempfile` makes its files 0600 and folders 0700 (private); here they get the mode `open()` and
`mkdir()` would give (0666 / 0777 less the umask), so a group-writable share stays usable by
every member of the group.
"""

from __future__ import annotations

import contextlib
import errno
import os
import tempfile
from pathlib import Path

from .errors import TrnprofError


def umask() -> int:
    """The process's umask, read without changing it where Linux allows."""
    try:
        with open("/proc/self/status", encoding="ascii") as status:
            for line in status:
                if line.startswith("Umask:"):
                    return int(line.split()[1], 8)
    except (OSError, ValueError):
        pass
    mask = os.umask(0o022)
    os.umask(mask)
    return mask


def follow_umask(path: str | Path, *, folder: bool = False) -> None:
    """Give a file (or folder) made private by `tempfile` the mode plain creation would give."""
    os.chmod(path, (0o777 if folder else 0o666) & ~umask())


def temp_folder(parent: Path, prefix: str, suffix: str = ".tmp") -> Path:
    """A fresh folder in `parent` with the umask's mode (OSError when it cannot be made)."""
    path = Path(tempfile.mkdtemp(prefix=prefix, suffix=suffix, dir=parent))
    follow_umask(path, folder=True)
    return path


def exists_error(path: str | Path) -> TrnprofError:
    """The one line of every command refusing to replace its output without --force."""
    return TrnprofError(f"output exists: {path} (choose another path or pass --force to replace it)")


def check_replaceable(path: str | Path, force: bool) -> None:
    """Fail when `path` may not be written as a file: a folder never, anything else there only
    with `force`."""
    path = Path(path)
    if path.is_dir() and not path.is_symlink():
        raise TrnprofError(f"cannot write {path}: it is a folder")
    if (path.exists() or path.is_symlink()) and not force:
        raise exists_error(path)


def _failed(path: Path, exc: OSError) -> TrnprofError:
    reason = "it is a folder" if path.is_dir() else (exc.strerror or type(exc).__name__)
    return TrnprofError(f"cannot write {path}: {reason}")


@contextlib.contextmanager
def replacing(path: str | Path, *, overwrite: bool = True):
    """Yield a temporary path beside `path` to write in full; it replaces `path` on success and
    is removed on any failure (an OSError becomes one error line naming `path`). overwrite=False:
    fail instead when `path` exists by then (`output exists`)."""
    path = Path(path)
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        fd, name = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
        os.close(fd)
    except OSError as exc:
        raise _failed(path, exc) from None
    tmp = Path(name)
    try:
        follow_umask(tmp)
        yield tmp
        _place(tmp, path, overwrite)
    except OSError as exc:
        raise _failed(path, exc) from None
    finally:
        tmp.unlink(missing_ok=True)


def _place(tmp: Path, path: Path, overwrite: bool) -> None:
    if overwrite:
        os.replace(tmp, path)
        return
    try:
        os.link(tmp, path)  # atomic, and fails when the name is taken
    except FileExistsError:
        raise exists_error(path) from None
    except OSError as exc:
        if exc.errno not in (errno.EPERM, errno.EOPNOTSUPP, errno.EXDEV, errno.EMLINK):
            raise
        if path.exists() or path.is_symlink():  # no hard links on this file system: check, then rename
            raise exists_error(path) from None
        os.replace(tmp, path)


def write_bytes(path: str | Path, data: bytes, *, overwrite: bool = True) -> Path:
    with replacing(path, overwrite=overwrite) as tmp:
        tmp.write_bytes(data)
    return Path(path)


def write_text(path: str | Path, text: str, *, overwrite: bool = True) -> Path:
    return write_bytes(path, text.encode("utf-8"), overwrite=overwrite)
