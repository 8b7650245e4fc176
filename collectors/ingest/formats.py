"""The ingest format registry: each format declared once, with its name, its sniff and its reader.

A `Format`'s `sniff(probe)` says whether an input is of that format from what the probe holds
(the first 64 KiB of a file, gunzipped; a folder's path), reading no more than that; its
`reader(path, rank=None)` turns one input into a `Source`. The built-in formats are listed in
`builtin.py`, in the order their sniffs are tried. Another package adds a format under the
entry-point group `trnprof.ingest_formats` (`NAME = "package.module:FORMAT"`, FORMAT a `Format`
called NAME) or with `register()`. Those are tried after every built-in sniff, and installed
ones are loaded only then (or when named): a Kineto trace never scans the installed packages.
A third-party format cannot take a built-in name; its sniff or reader failing is one error line.
"""

from __future__ import annotations

from functools import lru_cache
from pathlib import Path

from trnprof.errors import TrnprofError

from .builtin import FORMATS as BUILTIN
from .spec import SNIFF_BYTES, Format, Probe

__all__ = [
    "ENTRY_POINT_GROUP",
    "SNIFF_BYTES",
    "Format",
    "Probe",
    "builtin",
    "claims",
    "lookup",
    "names",
    "read",
    "register",
    "third_party",
]

ENTRY_POINT_GROUP = "trnprof.ingest_formats"
_BUILTIN = {fmt.name: fmt for fmt in BUILTIN}
_REGISTERED: dict[str, Format] = {}  # third-party formats added with register()


def register(fmt: Format) -> None:
    """Add a third-party format (replacing a registered one of that name, never a built-in)."""
    if not isinstance(fmt, Format):
        raise TrnprofError(f"register() takes an ingest Format, not {type(fmt).__name__}")
    if fmt.name in _BUILTIN:
        raise TrnprofError(f"ingest format {fmt.name} is built in: choose another name")
    _REGISTERED[fmt.name] = fmt


def builtin() -> tuple[Format, ...]:
    """The built-in formats, in the order their sniffs are tried."""
    return BUILTIN


def is_builtin(fmt: Format) -> bool:
    return _BUILTIN.get(fmt.name) is fmt


def names() -> list[str]:
    """Every format's name: the built-in ones in sniff order, then the registered and installed
    ones (their entry points are listed, not loaded)."""
    found = list(_BUILTIN)
    for name in [*_REGISTERED, *_installed_names()]:
        if name not in found:
            found.append(name)
    return found


def lookup(name: str) -> Format:
    """The format called `name`; one error line when there is none."""
    fmt = _BUILTIN.get(name) or _REGISTERED.get(name)
    if fmt is None and name in _installed_names():
        fmt = _load_installed(name)
    if fmt is None:
        raise TrnprofError(f"unknown format {name!r}; choose auto or one of {', '.join(names())}")
    return fmt


def third_party() -> list[Format]:
    """The registered formats (in their order), then the installed ones (loaded now, by name)."""
    found = dict(_REGISTERED)
    for name in _installed_names():
        if name not in found and name not in _BUILTIN:
            found[name] = _load_installed(name)
    return list(found.values())


def claims(fmt: Format, probe: Probe) -> bool:
    """Whether `fmt` takes the input: a folder only by a folder format; a sniff that fails is one
    error line naming its format."""
    if probe.is_dir and not fmt.folder:
        return False
    try:
        return bool(fmt.sniff(probe))
    except TrnprofError:
        raise
    except Exception as exc:  # a third-party sniff meeting a file it did not expect
        raise TrnprofError(
            f"{probe.path}: the {fmt.name} format's sniff failed ({type(exc).__name__}: {exc})"
        ) from None


@lru_cache(maxsize=1)
def _entry_points() -> dict:
    from importlib.metadata import entry_points

    return {point.name: point for point in sorted(entry_points(group=ENTRY_POINT_GROUP), key=lambda p: p.name)}


def _installed_names() -> list[str]:
    return list(_entry_points())


@lru_cache(maxsize=None)
def _load_installed(name: str) -> Format:
    point = _entry_points()[name]
    try:
        fmt = point.load()
    except Exception as exc:  # an installed package's import failing
        raise TrnprofError(
            f"installed ingest format {name} ({point.value}) cannot be loaded ({type(exc).__name__}: {exc})"
        ) from None
    if not isinstance(fmt, Format) or fmt.name != name:
        raise TrnprofError(
            f"installed ingest format {name} ({point.value}) is not a trnprof ingest Format called {name}"
        )
    return fmt


def read(fmt: Format, path: Path, rank: int | None):
    """`fmt`'s reader on one input: a `Source`. A third-party reader that fails, or returns
    anything else, is one error line naming its format."""
    reader = fmt.load_reader()
    if is_builtin(fmt):
        return reader(path, rank=rank)
    from trnprof.collectors.common.source import Source

    try:
        source = reader(path, rank=rank)
    except TrnprofError:
        raise
    except Exception as exc:
        raise TrnprofError(f"{path}: the {fmt.name} reader failed ({type(exc).__name__}: {exc})") from None
    if not isinstance(source, Source):
        raise TrnprofError(f"{path}: the {fmt.name} reader returned {type(source).__name__}, not a Source")
    return source
