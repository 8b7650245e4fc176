"""Streaming decode of one Chrome-trace JSON file (plain or gzip) in chunks of events.

A trace is `{"...": ..., "traceEvents": [ {...}, {...}, ... ], "...": ...}` (or the bare array
form `[ {...}, ... ]`). The file is read in blocks; the events array is cut between two events
(`}` `,` `{` outside any string) and each piece is decoded by msgspec as a typed list. A cut is
only accepted when the piece before it decodes as a complete list of objects, so a `},{` inside
a string or a nested object can never split an event. The top-level keys around the array are
decoded at the end together with the last events. Memory stays at a few blocks whatever the
file size; nothing is held as generic Python dicts.
"""

from __future__ import annotations

import gzip
import re
import zlib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Iterator

import msgspec

from trnprof.errors import TrnprofError

from .events import EXACT, FAST, Event, ExactEvent, ExactOtherEvent, OtherEvent

BLOCK = 8 << 20  # bytes of decompressed JSON read at once; a chunk decodes 4..12 MB (bounds memory)
PIECE_BLOCK = 4 << 20  # the same for pieces staged in worker processes: more of them, evenly shared
_WINDOW = 1 << 20  # where the last event boundary of a block is searched first
_ARRAY_START = re.compile(rb'"traceEvents"\s*:\s*\[')
_KEY = b'"traceEvents": ['  # the prefix of the final document ends with it
_BOUNDARY = re.compile(rb"\}\s*,\s*\{")
_BYTE_POS = re.compile(r"\(byte (\d+)\)")

_EVENTS = msgspec.json.Decoder(list[Event])
_EXACT_EVENTS = msgspec.json.Decoder(list[ExactEvent])
_RAW_LIST = msgspec.json.Decoder(list[msgspec.Raw])
_TOP = msgspec.json.Decoder(dict[str, msgspec.Raw])
_ANY = msgspec.json.Decoder()


@dataclass
class Chunk:
    """Decoded events `first_index`.. of the traceEvents array. `bad` lists the positions (in
    this chunk) and error messages of entries that are not valid events; their slot in `events`
    holds None. `header` (top-level keys, raw JSON) comes with the last chunk only."""

    events: list
    first_index: int
    bad: list[tuple[int, str, bytes]] = field(default_factory=list)
    extras: dict[int, dict] = field(default_factory=dict)
    sources: dict[int, bytes] = field(default_factory=dict)  # entries decoded loosely: their JSON
    header: dict[str, bytes] | None = None
    early_header: dict[str, bytes] | None = None
    exact: bool = False
    data: bytes = b""  # the chunk's JSON array, for decoding it again in exact mode
    offset: int = 0  # where `data` sits in the decompressed file (positions in errors count from it)


def decode_exact(chunk: Chunk) -> Chunk:
    """The same chunk with times as raw text (see times.py)."""
    return _again(chunk, _decode_events(chunk.data, True, chunk.first_index))


def decode_piece(piece: Chunk, exact: bool, path: Path) -> Chunk:
    """A piece of `read_pieces` decoded into events, times as numbers or, with `exact`, as raw
    text. Its cut was checked as JSON, not the UTF-8 of its strings: text that is not UTF-8 is
    the one error `read_chunks` gives for it."""
    try:
        return _again(piece, _decode_events(piece.data, exact, piece.first_index))
    except msgspec.DecodeError as exc:
        raise _malformed(path, exc, piece.offset) from None


def _again(chunk: Chunk, decoded: Chunk) -> Chunk:
    decoded.header, decoded.early_header, decoded.offset = chunk.header, chunk.early_header, chunk.offset
    return decoded


def _open(path: Path):
    with path.open("rb") as probe:
        magic = probe.read(2)
    if magic == b"\x1f\x8b":
        return gzip.open(path, "rb")
    return path.open("rb")


class _Reader:
    """Blocks of decompressed bytes with one clear error for a broken gzip stream; reports
    progress in bytes of the file on disk."""

    def __init__(self, path: Path, progress: Callable[[int], None] | None, block: int):
        self.path = path
        self.block = block
        self.handle = _open(path)
        self.raw = getattr(self.handle, "fileobj", self.handle)  # the file on disk
        self.progress = progress
        self.position = 0
        self.eof = False
        self.offset = 0  # decompressed bytes handed out so far

    def read(self) -> bytes:
        if self.eof:
            return b""
        try:
            block = self.handle.read(self.block)
        except (EOFError, OSError, zlib.error) as exc:
            raise TrnprofError(
                f"{self.path}: truncated or corrupt gzip data ({exc}); re-copy the file or decompress it to check"
            ) from None
        self.eof = not block
        self.offset += len(block)
        if self.progress is not None:
            position = self.raw.tell()
            self.progress(position - self.position)
            self.position = position
        return block

    def close(self):
        self.handle.close()


def _malformed(path: Path, exc: Exception, base: int) -> TrnprofError:
    """One line for invalid JSON, with the byte offset in the decompressed file."""
    text = str(exc)
    match = _BYTE_POS.search(text)
    where = f" near byte {base + int(match.group(1)):,}" if match else ""
    if "UTF-8" in text or "utf-8" in text:
        return TrnprofError(f"{path}: not UTF-8 text{where} (JSON traces must be UTF-8): {text}")
    return TrnprofError(f"{path}: invalid JSON{where}: {text}")


def _decode_events(data: bytes, exact: bool, first_index: int) -> Chunk:
    """`data` is a JSON array of events. Typed decode; entries that do not fit an event shape
    are decoded one by one so that each bad entry is reported alone."""
    decoder = _EXACT_EVENTS if exact else _EVENTS
    try:
        return Chunk(decoder.decode(data), first_index, exact=exact, data=data)
    except msgspec.ValidationError:
        pass  # valid JSON, but some entry is not a plain event: go entry by entry
    event_type = ExactEvent if exact else Event
    chunk = Chunk([], first_index, exact=exact, data=data)
    for position, raw in enumerate(_RAW_LIST.decode(data)):
        try:
            chunk.events.append(msgspec.json.decode(raw, type=event_type))
            continue
        except msgspec.ValidationError as exc:
            error = str(exc)
        event, extras = _loose_event(raw, exact)
        chunk.events.append(event)
        if event is None:
            chunk.bad.append((position, error, bytes(raw)))
        else:
            chunk.extras[position] = extras
            chunk.sources[position] = bytes(raw)
    return chunk


def _loose_event(raw, exact: bool):
    """An entry outside the fast shapes: fields the Chrome format does not define for its phase,
    or a phase without a mapping. Its known fields typed, the others returned apart (they end up
    in `args`). (None, None) when it is not an event object at all."""
    value = _ANY.decode(raw)
    if not isinstance(value, dict) or not isinstance(value.get("ph"), str):
        return None, None
    classes = EXACT if exact else FAST
    event_type = classes.get(value["ph"]) or (ExactOtherEvent if exact else OtherEvent)
    fields = set(event_type.__struct_fields__) | {"ph"}
    known = {k: v for k, v in value.items() if k in fields}
    extras = {k: v for k, v in value.items() if k not in fields}
    if not extras and value["ph"] in classes:
        return None, None  # a known phase with a field of the wrong type
    try:
        return msgspec.json.decode(msgspec.json.encode(known), type=event_type), extras
    except msgspec.ValidationError:
        return None, None


def read_chunks(
    path: str | Path, progress: Callable[[int], None] | None = None, mode: dict | None = None
) -> Iterator[Chunk]:
    """Yield the trace's events chunk by chunk; the last chunk carries the top-level header.
    `mode["exact"]` (the caller may set it) decodes later chunks with times as raw text."""
    mode = mode if mode is not None else {"exact": False}
    return _read(Path(path), progress, lambda data, index: _decode_events(data, mode["exact"], index), BLOCK)


def read_pieces(path: str | Path, progress: Callable[[int], None] | None = None) -> Iterator[Chunk]:
    """The trace cut as `read_chunks` cuts it, each piece checked as a JSON array of entries but
    not decoded into events: its `events` holds each entry's raw JSON, its `data` the array
    (`decode_piece` decodes it, in another process if need be)."""
    return _read(Path(path), progress, _piece, min(BLOCK, PIECE_BLOCK))


def _piece(data: bytes, index: int) -> Chunk:
    return Chunk(_RAW_LIST.decode(data), index, data=data)


def _read(path: Path, progress, decode: Callable[[bytes, int], Chunk], block: int) -> Iterator[Chunk]:
    reader = _Reader(path, progress, block)
    try:
        yield from _chunks(path, reader, decode)
    except RecursionError:
        raise TrnprofError(f"{path}: JSON nested too deeply to be a trace") from None
    finally:
        reader.close()


def _chunks(path: Path, reader: _Reader, decode: Callable[[bytes, int], Chunk]) -> Iterator[Chunk]:
    buf = bytearray()
    prefix = None  # top-level text before the events array, with the array's key
    while prefix is None:
        block = reader.read()
        buf += block
        stripped = bytes(buf[:64]).lstrip()
        if stripped[:1] == b"[":
            prefix = b""
            del buf[: bytes(buf).index(b"[") + 1]
            break
        if stripped and stripped[:1] != b"{":
            raise TrnprofError(
                f"{path}: not a JSON trace (starts with {stripped[:20]!r}); "
                "expected a Chrome/Kineto trace object with traceEvents"
            )
        match = _ARRAY_START.search(buf)
        if match:
            prefix = bytes(buf[: match.start()]) + _KEY
            del buf[: match.end()]
        elif not block:
            _missing_events(path, bytes(buf))
    consumed = reader.offset - len(buf)  # file offset of buf[0]
    early = _early_header(prefix)
    index = 0
    failed_at = 0  # after a failed cut, only try cuts beyond this point
    while True:
        block = reader.read()
        buf += block
        if not block:
            break
        if len(buf) < reader.block // 2:
            continue
        cut = _last_boundary(buf, failed_at)
        if cut is None:
            continue
        with memoryview(buf) as view:
            data = b"".join((b"[", view[: cut + 1], b"]"))
        try:
            chunk = decode(data, index)
        except msgspec.DecodeError:
            failed_at = cut + 1  # a cut inside a string or a nested object: wait for a later one
            continue
        failed_at = 0
        chunk.offset = consumed
        del data
        next_start = _BOUNDARY.match(buf, cut).end() - 1
        consumed += next_start
        del buf[:next_start]
        index += len(chunk.events)
        chunk.early_header, early = early, None
        yield chunk
    last = _last_chunk(path, prefix, bytes(buf), decode, index, consumed)
    last.early_header = early
    yield last


def _early_header(prefix: bytes) -> dict[str, bytes]:
    """The top-level keys written before traceEvents, known before any event is decoded."""
    if not prefix:
        return {}
    try:
        top = _TOP.decode(prefix[: -len(_KEY)] + b'"traceEvents":null}')
    except (msgspec.DecodeError, msgspec.ValidationError):
        return {}
    return {key: bytes(value) for key, value in top.items() if key != "traceEvents"}


def _last_boundary(buf: bytearray, after: int) -> int | None:
    """Position of the `}` of the last event boundary in buf (beyond `after`), or None."""
    start = max(after, len(buf) - _WINDOW)
    while True:
        last = None
        for last in _BOUNDARY.finditer(buf, start):
            pass
        if last is not None:
            return last.start()
        if start <= after:
            return None
        start = after


def _last_chunk(path: Path, prefix: bytes, rest: bytes, decode, index: int, consumed: int) -> Chunk:
    """Decode the whole remaining document: the last events and the top-level keys."""
    base = consumed - len(prefix)
    if prefix == b"":  # bare array form; its closing bracket is optional in the Chrome format
        text = rest.rstrip()
        document = b"[" + (text if text.endswith(b"]") else text.rstrip(b",").rstrip() + b"]")
        try:
            _RAW_LIST.decode(document)
        except msgspec.DecodeError as exc:
            raise _malformed(path, exc, base) from None
        events_raw, header = document, {}
    else:
        document = prefix + rest
        try:
            top = _TOP.decode(document)
        except msgspec.DecodeError as exc:
            raise _malformed(path, exc, base) from None
        except msgspec.ValidationError:
            raise TrnprofError(f"{path}: the trace is not a JSON object with traceEvents") from None
        events_raw = bytes(top.pop("traceEvents"))
        if not events_raw.lstrip().startswith(b"["):
            raise TrnprofError(f"{path}: traceEvents is not an array")
        header = {key: bytes(value) for key, value in top.items()}
    try:
        chunk = decode(events_raw, index)
    except msgspec.DecodeError as exc:
        raise _malformed(path, exc, consumed) from None
    chunk.header, chunk.offset = header, consumed
    return chunk


def _missing_events(path: Path, text: bytes) -> None:
    """The file ended without a traceEvents array: say exactly what is wrong."""
    if not text.strip():
        raise TrnprofError(f"{path}: empty file")
    try:
        value = _ANY.decode(text)
    except msgspec.DecodeError as exc:
        raise _malformed(path, exc, 0) from None
    if isinstance(value, dict) and "traceEvents" in value:
        raise TrnprofError(f"{path}: traceEvents is not an array")
    keys = ", ".join(sorted(value)[:8]) if isinstance(value, dict) else type(value).__name__
    raise TrnprofError(
        f"{path}: no traceEvents array (top level has: {keys}); "
        "is this a PyTorch profiler / Chrome trace? choose another --format otherwise"
    )
