"""Which tables each stdlib view reads, parsed once per installation instead of once per process.

`stdlib.dependencies` asks DuckDB's parser for the tables of every view (about 2 ms a view, 0.1 s
of CPU per command, a tenth of a small trace's `analyze`). The answer depends only on the views'
SQL, the names they may read and DuckDB's parser, so it is kept in the user's cache folder
(`trnprof.cachedir`, `stdlib/`), keyed by a hash of those and of the trnprof version. The batching
of views trusts these lists (a view wrongly listed as rank-local would be computed per batch of
ranks), so an entry carries this installation's HMAC (`cachedir.sign`): one planted by whoever
can write the cache folder is not used. A missing, stale, corrupt or unsigned entry is parsed
again and rewritten; one that cannot be written is skipped, never an error.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Iterable

import duckdb
import msgspec

from . import atomic, cachedir
from ._version import __version__
from .errors import TrnprofError

FORMAT = 1
MAX_ENTRY_BYTES = 1 << 20  # the built-in stdlib's entry is about 4 KB


def key(views: Iterable[tuple[str, str]], names: Iterable[str]) -> str:
    """What an entry answers: these (view name, SQL) pairs, the readable `names`, the parser."""
    digest = hashlib.sha256(f"{FORMAT}\0{__version__}\0{duckdb.__version__}\0".encode())
    for name, sql in views:
        digest.update(name.encode() + b"\0" + sql.encode("utf-8", "surrogatepass") + b"\0")
    digest.update("\0".join(sorted(names)).encode())
    return digest.hexdigest()


def cached(
    views: list[tuple[str, str]], names: set[str], parse: Callable[[], dict[str, frozenset[str]]]
) -> dict[str, frozenset[str]]:
    """`parse()`'s answer for `views`, from the cache when an entry of this installation holds it
    for exactly these views (in this order), else parsed now and kept."""
    digest = key(views, names)
    path = cachedir.cache_dir() / "stdlib" / f"deps-{digest[:32]}.msgpack"
    signed = cachedir.read_entry(path, MAX_ENTRY_BYTES)
    content = cachedir.verified(path.name, signed) if signed is not None else None
    if content is not None:
        try:
            stored_key, reads = msgspec.msgpack.decode(content, type=tuple[str, dict[str, list[str]]])
            if stored_key == digest and list(reads) == [name for name, _ in views]:
                return {view: frozenset(tables) for view, tables in reads.items()}
        except msgspec.DecodeError:
            pass
    found = parse()
    entry = cachedir.sign(path.name, msgspec.msgpack.encode((digest, {v: sorted(t) for v, t in found.items()})))
    if entry is not None:
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            atomic.write_bytes(path, entry)
        except (TrnprofError, OSError):
            pass  # a cache: the next command parses again
    return found
