"""The SQL checks of rule packs, done once: what the loader's parse of each rule query found (one
SELECT, no file or URL, only readable tables: `loader._check_sql`, about 2 ms a query, most of
what loading the built-in packs costs), kept in the user's cache folder (`trnprof.cachedir`,
`rules/`, one entry per pack folder).

Whoever can write the cache folder must not change what a rule does, so the cache holds no rule:
every rule is decoded from its file on every load (its SQL, parameters, severity, probes), and
the cache holds only, for each SQL text (by its SHA-256), the tables it reads. Such a list is used
only when its entry was made by this checking code for these readable tables (`key`) and every
name in it is a readable table; a list that lacks a table the query reads (only a tampered entry
can) makes the rule fail loudly ("table ... does not exist"), never pass in silence. The entry is
read as a bounded regular file (`cachedir.read_entry`). A missing, stale or corrupt entry is made
again, one that cannot be written is skipped, never an error.
"""

from __future__ import annotations

import hashlib
from pathlib import Path

import msgspec

from trnprof import atomic, cachedir
from trnprof._version import __version__
from trnprof.errors import TrnprofError

FORMAT = 2  # 2: only the tables each SQL text reads (1 held whole rules, trusted on their key)
MAX_ENTRY_BYTES = 4 * 2**20  # the built-in packs' entry is 3 KB
_CHECKERS = ("loader.py", "sandbox.py", "rulecache.py")


class _Entry(msgspec.Struct):
    key: str
    tables: dict[str, list[str]]  # SHA-256 of a SQL text -> the tables it reads


def key(context: str) -> str:
    """What an entry must have been made by to be used now: this checking code, the trnprof
    version and what rules may read (`context`)."""
    digest = hashlib.sha256(f"{FORMAT}\0{__version__}\0{context}\0".encode())
    here = Path(__file__).parent
    for name in _CHECKERS:
        digest.update((here / name).read_bytes())
    return digest.hexdigest()


def entry_path(folder: Path) -> Path:
    name = hashlib.sha256(str(folder.resolve()).encode()).hexdigest()[:32]
    return cachedir.cache_dir() / "rules" / f"{name}.msgpack"


def _sql_digest(sql: str) -> str:
    return hashlib.sha256(sql.encode("utf-8", "surrogatepass")).hexdigest()


class Checks:
    """The SQL checks of one pack folder: those its entry holds and those made now."""

    def __init__(self, folder: Path, context: str, readable: set[str]):
        self.folder, self.readable = folder, readable
        self.key = key(context)
        self._known = self._load()
        self._used: dict[str, list[str]] = {}

    def _load(self) -> dict[str, list[str]]:
        data = cachedir.read_entry(entry_path(self.folder), MAX_ENTRY_BYTES)
        try:
            entry = msgspec.msgpack.decode(data, type=_Entry) if data is not None else None
        except (msgspec.DecodeError, msgspec.ValidationError):
            return {}
        return entry.tables if entry is not None and entry.key == self.key else {}

    def tables(self, sql: str, check) -> frozenset[str]:
        """The tables `sql` reads: from the entry when it holds them, else `check(sql)` (which
        raises for a query that fails the checks; a failure is never kept)."""
        digest = _sql_digest(sql)
        known = self._known.get(digest)
        if known is None or not set(known) <= self.readable:
            known = sorted(check(sql))
        self._used[digest] = known
        return frozenset(known)

    def save(self) -> None:
        """Keep the checks of this load for the next one; skipped when nothing changed or the
        cache cannot be written."""
        if self._used == self._known:
            return
        try:
            atomic.write_bytes(entry_path(self.folder), msgspec.msgpack.encode(_Entry(self.key, self._used)))
        except (TrnprofError, OSError):
            pass
