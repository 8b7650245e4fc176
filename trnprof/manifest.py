"""The run manifest `trnprof.json`: build, validate and read it.

The manifest is checked against a typed schema (`Manifest`, msgspec) when a run is opened: a
field of the wrong type is one error naming it, never a traceback later. Keys the schema does
not list (a collector's `predictions`, `ingest`, ...) are kept as they are."""

from __future__ import annotations

import datetime as _dt
import json
from pathlib import Path
from typing import Annotated, Any, Optional

import msgspec

from ._version import __version__
from .errors import NotARunError, TrnprofError
from .integrity import check_on_open
from .schema import FORMAT_NAME, MANIFEST_FILE, SCHEMA_VERSION

NonNeg = Annotated[int, msgspec.Meta(ge=0)]


class SourceInfo(msgspec.Struct):
    collector: str
    version: str = ""
    inputs: list[Any] = []


class Stats(msgspec.Struct):
    events_by_kind: dict[str, NonNeg]
    counters_by_name: dict[str, NonNeg]
    start_ns: Optional[int]
    end_ns: Optional[int]


class Part(msgspec.Struct, array_like=True):
    """One Parquet file of the run: its rows and bytes (written as `[rows, bytes]`)."""

    rows: NonNeg
    bytes: NonNeg


class Manifest(msgspec.Struct):
    format: str
    schema_version: int
    source: SourceInfo
    created: str = ""
    time_unit: str = "ns"
    world_size: Optional[NonNeg] = None
    job: dict[str, Any] = {}
    counts: dict[str, NonNeg] = {}
    stats: Optional[Stats] = None
    extra_tables: dict[str, NonNeg] = {}
    parts: Optional[dict[str, Part]] = None  # relative path -> Part; absent in runs before parts were kept


def new_manifest(
    collector: str, *, collector_version: str = __version__, inputs=(), job=None, world_size: int | None = None, **extra
) -> dict:
    """A manifest for a run about to be written. `extra` keys (predictions, flags, ...) are kept."""
    manifest = {
        "format": FORMAT_NAME,
        "schema_version": SCHEMA_VERSION,
        "created": _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds"),
        "time_unit": "ns",
        "source": {"collector": collector, "version": collector_version, "inputs": list(inputs)},
        "world_size": world_size,
        "job": dict(job or {}),
    }
    manifest.update(extra)
    return manifest


def read_manifest(run_dir: Path, *, check_files: bool = True, validate: bool = True) -> dict:
    """The manifest of a run folder, or one clear error saying why the folder is not a run.
    `validate`: check it against the typed schema; `check_files`: also refuse a run whose Parquet
    files differ from the manifest's record (`trnprof.integrity.check_on_open`: a listing and a
    stat per file). A writer replacing a run turns both off: a damaged run may be replaced."""
    run_dir = Path(run_dir)
    if not run_dir.exists():
        if any(run_dir.parent.glob(f".{run_dir.name}.old-*")):
            raise NotARunError(
                f"run not found: {run_dir}, but an interrupted --force commit left its previous "
                f"version beside it: run `trnprof check {run_dir} --repair` to restore it"
            )
        raise NotARunError(
            f"run not found: {run_dir} (give the folder that `trnprof simulate` or `trnprof ingest` wrote)"
        )
    if not run_dir.is_dir():
        raise NotARunError(f"not a run folder: {run_dir} is a file (a run is a folder with {MANIFEST_FILE})")
    path = run_dir / MANIFEST_FILE
    if not path.is_file():
        raise NotARunError(
            f"not a trnprof run: {run_dir} has no {MANIFEST_FILE} (is it a half-written or foreign folder?)"
        )
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise NotARunError(f"unreadable manifest {path}: {exc}") from None
    manifest = parse_manifest(text, str(path), validate=validate)
    if check_files and validate:
        check_on_open(run_dir, manifest)
    return manifest


def parse_manifest(text: str, path: str, *, validate: bool = True) -> dict:
    """A manifest from its JSON text (read from `path`, named in errors): one clear error when it
    is not a trnprof run's manifest of this schema version."""
    try:
        manifest = json.loads(text)
    except (json.JSONDecodeError, RecursionError) as exc:  # RecursionError: nesting deeper than Python's stack
        raise NotARunError(f"unreadable manifest {path}: {exc}") from None
    if not isinstance(manifest, dict) or manifest.get("format") != FORMAT_NAME:
        raise NotARunError(f"not a trnprof run: {path} does not declare format {FORMAT_NAME!r}")
    version = manifest.get("schema_version")
    if version != SCHEMA_VERSION:
        raise TrnprofError(
            f"unsupported run schema_version {version!r} in {path}: this trnprof reads version "
            f"{SCHEMA_VERSION}; re-create the run with this version or use a matching trnprof"
        )
    try:
        if validate:
            msgspec.convert(manifest, Manifest)
    except msgspec.ValidationError as exc:
        message, _, where = str(exc).partition(" - at `$.")
        field = where.rstrip("`") or "top level"
        raise NotARunError(f"damaged manifest {path}: {field}: {message}") from None
    return manifest


def typed(manifest: dict) -> Manifest:
    """The typed view of a manifest `read_manifest` returned (already validated)."""
    return msgspec.convert(manifest, Manifest)
