"""Rule packs compiled once: the validated rules of a folder, kept in the user's cache folder
(`trnprof.cachedir`, `rules/`), so a command skips decoding YAML and parsing SQL (about 0.25 s
CPU for the built-in packs) while nothing they depend on changed.

An entry is found by the folder's path and used only when its key matches: the bytes and names
of the folder's rule files, the source of the code that validates them (this package's loader
and spec), the trnprof version and what rules may read (`context`). The cache is a convenience:
a missing, stale or corrupt entry is made again, and one that cannot be written is skipped,
never an error. Only rules that passed validation are stored, so a rule error is reported from
the file every time.
"""

from __future__ import annotations

import hashlib
from pathlib import Path

import msgspec

from trnprof import atomic
from trnprof._version import __version__
from trnprof.cachedir import cache_dir
from trnprof.errors import TrnprofError

from .spec import RuleFile

FORMAT = 1
_VALIDATORS = ("loader.py", "spec.py", "rulecache.py")


class Compiled(msgspec.Struct):
    """One validated rule: its file (relative to the folder), content and what it reads."""
    file: str
    spec: RuleFile
    tables: list[str]
    sql_params: list[str]


class _Entry(msgspec.Struct):
    key: str
    rules: list[Compiled]


def key(folder: Path, files: list[Path], context: str) -> str:
    """What an entry must have been made from to be used for `files` now."""
    digest = hashlib.sha256(f"{FORMAT}\0{__version__}\0{context}\0".encode())
    here = Path(__file__).parent
    for name in _VALIDATORS:
        digest.update((here / name).read_bytes())
    for path in files:
        data = path.read_bytes()
        digest.update(f"\0{path.relative_to(folder)}\0{len(data)}\0".encode())
        digest.update(data)
    return digest.hexdigest()


def entry_path(folder: Path) -> Path:
    name = hashlib.sha256(str(folder.resolve()).encode()).hexdigest()[:32]
    return cache_dir() / "rules" / f"{name}.msgpack"


def load(folder: Path, wanted: str) -> list[Compiled] | None:
    """The compiled rules of `folder` if its entry was made for key `wanted`, else None."""
    try:
        entry = msgspec.msgpack.decode(entry_path(folder).read_bytes(), type=_Entry)
    except (OSError, msgspec.DecodeError, msgspec.ValidationError):
        return None
    return entry.rules if entry.key == wanted else None


def store(folder: Path, made: str, rules: list[Compiled]) -> None:
    """Keep `rules` (compiled for key `made`) for the next command; skipped when unwritable."""
    try:
        atomic.write_bytes(entry_path(folder), msgspec.msgpack.encode(_Entry(made, rules)))
    except (TrnprofError, OSError):
        pass
