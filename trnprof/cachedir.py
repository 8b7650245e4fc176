"""Where trnprof keeps what it can always make again (rule packs compiled, runs of traces given to
`analyze`, the report's JavaScript bundle): `$TRNPROF_CACHE_DIR`, else `$XDG_CACHE_HOME/trnprof`,
else `~/.cache/trnprof`. Deleting the folder is always safe.

Whoever can write the folder (a shared cache, a CI cache restored from another branch) must not
change what trnprof does (docs/design-notes.md, "Caches"):
- every entry is read with `read_entry`: a regular file (no link, FIFO or device) of at most a
  bound the caller names, opened without blocking; anything else is skipped with one warning;
- an entry that trnprof would use as it is (the report's JavaScript bundle) carries an HMAC made
  with this installation's `secret()`; the rule cache holds only facts checked on load (see
  `rules_engine/rulecache.py`).
"""

from __future__ import annotations

import errno
import hashlib
import hmac
import os
import stat
import sys
from pathlib import Path

SECRET_FILE = "secret.key"  # 32 random bytes, mode 0600, owned by the user
_SECRET_BYTES = 32
_warned: set[str] = set()


def cache_dir() -> Path:
    explicit = os.environ.get("TRNPROF_CACHE_DIR")
    if explicit:
        return Path(explicit)
    return Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "trnprof"


def warn_once(message: str) -> None:
    """One warning line on stderr, once per process for each message."""
    if message not in _warned:
        _warned.add(message)
        print(f"warning: {message}", file=sys.stderr)


class NotRegular(OSError):
    """A path that is not a regular file of bounded size (a link, FIFO, device, socket, or too large)."""


def _open_regular(path: Path) -> tuple[int, os.stat_result] | None:
    """A descriptor of `path` and its status: opened without following a link and without
    blocking (a FIFO opens at once); None when missing."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC)
    except FileNotFoundError:
        return None
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            raise NotRegular(f"{path} is a symbolic link") from None
        raise
    return fd, os.fstat(fd)


def read_regular(path: Path, limit: int) -> bytes | None:
    """The bytes of `path` when it is a regular file of at most `limit` bytes, None when it does
    not exist; `NotRegular` (saying why) for anything else, OSError when it cannot be read. Never
    blocks on a FIFO and never reads more than `limit` + 1 bytes."""
    opened = _open_regular(path)
    if opened is None:
        return None
    fd, status = opened
    try:
        if not stat.S_ISREG(status.st_mode):
            raise NotRegular(f"{path} is not a regular file")
        with os.fdopen(os.dup(fd), "rb") as handle:
            data = handle.read(limit + 1) if status.st_size <= limit else b""
        if status.st_size > limit or len(data) > limit:
            raise NotRegular(f"{path} is larger than {limit:,} bytes")
        return data
    finally:
        os.close(fd)


def read_entry(path: Path, limit: int) -> bytes | None:
    """The bytes of cache entry `path` (`read_regular`); None (with one warning) when it is not a
    regular file of at most `limit` bytes or cannot be read, None quietly when it does not exist."""
    try:
        return read_regular(path, limit)
    except NotRegular as exc:
        warn_once(f"cache entry {exc}: not used")
    except OSError as exc:
        warn_once(f"cache entry {path} cannot be read ({exc.strerror or exc}): not used")
    return None


def _trusted(status: os.stat_result) -> bool:
    """A secret only this user can read and write: a regular file it owns, mode 0600 or less."""
    return (
        stat.S_ISREG(status.st_mode)
        and status.st_uid == os.geteuid()
        and not status.st_mode & 0o077
        and status.st_size == _SECRET_BYTES
    )


def _untrusted(path: Path) -> None:
    warn_once(
        f"{path} is not a {_SECRET_BYTES}-byte file of this user with mode 0600: "
        "cache entries that need it are not used (delete it to make a new one)"
    )


def secret() -> bytes | None:
    """This installation's cache secret (`SECRET_FILE` in the cache folder), made on first use;
    None when it cannot be made or is not private to this user (the caches that need it are then
    skipped)."""
    path = cache_dir() / SECRET_FILE
    for _ in range(2):
        try:
            opened = _open_regular(path)
        except OSError:  # a link, or unreadable
            return _untrusted(path)
        if opened is not None:
            fd, status = opened
            try:
                return os.read(fd, _SECRET_BYTES + 1) if _trusted(status) else _untrusted(path)
            finally:
                os.close(fd)
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600)
        except FileExistsError:  # another process made it meanwhile: read that one
            continue
        except OSError:
            return None
        try:
            value = os.urandom(_SECRET_BYTES)
            os.write(fd, value)
            return value
        except OSError:
            path.unlink(missing_ok=True)
            return None
        finally:
            os.close(fd)
    return None


def _tag(key: bytes, name: str, content: bytes) -> bytes:
    return hmac.new(key, name.encode() + b"\0" + content, hashlib.sha256).digest()


def sign(name: str, content: bytes) -> bytes | None:
    """`content` prefixed with its HMAC under this installation's secret and `name` (the entry's
    file name, so an entry cannot stand in for another); None without a secret."""
    key = secret()
    return None if key is None else _tag(key, name, content) + content


def verified(name: str, signed: bytes) -> bytes | None:
    """The content of a `sign`ed entry when its HMAC holds, else None (with one warning)."""
    key = secret()
    if key is None:
        return None
    tag, content = signed[: hashlib.sha256().digest_size], signed[hashlib.sha256().digest_size :]
    if hmac.compare_digest(tag, _tag(key, name, content)):
        return content
    warn_once(
        f"cache entry {name} was not written by this installation (its signature does not match): not used, made again"
    )
    return None
