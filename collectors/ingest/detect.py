"""Which format an input is, from its content (not its name), and the inputs a folder holds.

The formats and their sniffs are declared in the registry (`formats.py`, built-ins in
`builtin.py`): the built-in sniffs are tried in their order, then the third-party ones; a JSON
object none claims is read as Kineto, whose reader says precisely what is missing.
"""

from __future__ import annotations

import gzip
import zlib
from pathlib import Path

from trnprof.errors import TrnprofError

from . import formats
from .formats import SNIFF_BYTES, Probe

TRACE_SUFFIXES = (".json", ".json.gz", ".jsonl", ".jsonl.gz", ".gz")
FALLBACK = "kineto"  # the format of a JSON object no sniff claims


def _head(path: Path) -> bytes:
    try:
        with path.open("rb") as handle:
            head = handle.read(SNIFF_BYTES)
    except OSError as exc:
        raise TrnprofError(f"{path}: cannot read it ({exc})") from None
    if head[:2] == b"\x1f\x8b":
        try:
            with gzip.open(path, "rb") as handle:
                head = handle.read(SNIFF_BYTES)
        except (OSError, EOFError, zlib.error) as exc:
            raise TrnprofError(f"{path}: truncated or corrupt gzip data ({exc})") from None
    return head


def folder_format(path: Path, fmt: str = "auto") -> str | None:
    """The format of a folder that is one input (a Neuron Explorer profile), else None: with `fmt`
    given, that format when it reads folders and claims this one."""
    if not path.is_dir():
        return None
    probe = Probe(path, is_dir=True)
    if fmt != "auto":
        return fmt if formats.claims(formats.lookup(fmt), probe) else None
    for candidates in (formats.builtin, formats.third_party):
        for found in candidates():
            if formats.claims(found, probe):
                return found.name
    return None


def is_explorer_folder(path: Path) -> bool:
    return folder_format(path, "neuron-explorer") is not None


def detect(path: Path) -> str:
    """The format of one input file or folder."""
    if path.is_dir():
        found = folder_format(path)
        if found is None:
            raise TrnprofError(f"{path}: a folder without traces")
        return found
    probe = Probe(path, _head(path))
    text = probe.text
    if not text:
        raise TrnprofError(f"{path}: empty file")
    for candidates in (formats.builtin, formats.third_party):
        for found in candidates():
            if formats.claims(found, probe):
                return found.name
    if text[:1] == b"{":
        return FALLBACK
    raise TrnprofError(
        f"{path}: not a trace trnprof knows (starts with {text[:16]!r}); formats: {', '.join(formats.names())}"
    )


def expand(paths: list[str | Path], fmt: str = "auto") -> list[tuple[Path, str]]:
    """(input, format) pairs: files as given, folders expanded to the traces they hold."""
    inputs = []
    for given in paths:
        path = Path(given)
        if not path.exists():
            raise TrnprofError(f"input not found: {path}")
        whole = folder_format(path, fmt)
        if path.is_dir() and whole is None:
            found = sorted(p for p in path.rglob("*") if p.is_file() and p.name.endswith(TRACE_SUFFIXES))
            if not found:
                raise TrnprofError(f"{path}: no trace files in this folder (looked for {', '.join(TRACE_SUFFIXES)})")
            inputs += [(p, fmt if fmt != "auto" else detect(p)) for p in found]
        else:
            inputs.append((path, whole or (fmt if fmt != "auto" else detect(path))))
    seen = set()
    for path, _ in inputs:
        key = path.resolve()
        if key in seen:
            raise TrnprofError(f"input given twice: {path}")
        seen.add(key)
    return inputs
