"""One decoded chunk of trace events -> Arrow tables of staged rows (no Python dict per event).

Staged columns: `idx` (position in traceEvents), `ph`, `cat`, `name`, `pid`/`tid` (their JSON
text: `4037`, `"Spans"`), `ts`/`dur` (int64 ns on the file's own time base), `ts_problem`/
`dur_problem` (0, or why the value is unusable: times.PROBLEMS) and `args`: a JSON object
holding every field without a column (`cat`, `pid`, `tid`, the source `args` verbatim, other
fields under `extra`). Beside it: the args the mapping reads, parsed for the few rows that need
them; flow ids; the source JSON of rows that look unusable; entries that
are not events at all. The per-file mapping happens later (`route`, `partial`, `finish`).
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from itertools import chain
from operator import attrgetter

import msgspec
import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from trnprof.collectors.common.limits import MAX_ARGS_BYTES, truncated_args
from trnprof.errors import TrnprofError

from .classify import COMM_KERNEL, matches
from .events import EXTRA_FIELDS, MappedArgs
from .stream import Chunk, decode_exact
from .times import numbers_to_ns, texts_to_ns

STAGED_SCHEMA = pa.schema(
    [
        ("idx", pa.int64()),
        ("ph", pa.string()),
        ("cat", pa.string()),
        ("name", pa.string()),
        ("pid", pa.string()),
        ("tid", pa.string()),
        ("ts", pa.int64()),
        ("dur", pa.int64()),
        ("ts_problem", pa.int8()),
        ("dur_problem", pa.int8()),
        ("args", pa.string()),
    ]
)
FLOW_PHASES = ("s", "t", "f")
INSTANT_PHASES = ("i", "I")
KNOWN_PHASES = ("X", "C", "M") + INSTANT_PHASES + FLOW_PHASES
# Rows whose `args` the mapping reads (collective fields, bytes, memory totals): communication
# kernels, copies and sets, and host records of collectives and memory.
ARGS_CATEGORIES = ("gpu_memcpy", "gpu_memset")
ARGS_NAME_PREFIXES = ("nccl:", "gloo:", "c10d::", "record_param_comms", "[memory]")
ARGS_FIELDS = list(MappedArgs.__struct_fields__)
# Longest name in the real test traces (tests/data/kineto): 5,123 bytes (a templated CUDA kernel); a name 12x
# longer is not a name but a corrupt or hostile entry, kept in quarantine instead.
MAX_NAME_BYTES = 1 << 16

_EMPTY_OBJECT = b"{}"
_EXTRA_VALUES = attrgetter(*EXTRA_FIELDS)  # every event shape answers each (None when absent)
_NO_EXTRA = (None,) * len(EXTRA_FIELDS)
_MAPPED_ARGS = msgspec.json.Decoder(list[MappedArgs])
_ONE_MAPPED_ARGS = msgspec.json.Decoder(MappedArgs)


@dataclass
class Staged:
    rows: pa.Table
    args: pa.Table  # idx + MappedArgs fields
    flows: pa.Table  # idx, id (JSON text), bp
    originals: dict[int, bytes] = field(default_factory=dict)  # idx -> source JSON
    bad: list[tuple[int, str, bytes]] = field(default_factory=list)  # (idx, error, source JSON)
    truncated_args: int = 0  # args over limits.MAX_ARGS_BYTES, replaced by their size


def json_texts(values: list) -> pa.Array:
    """The JSON text of each scalar (int / str / None -> `null`), as a string array. One encode
    call and one Arrow split; a per-value loop only when a string holds a comma."""
    if not values:
        return pa.array([], pa.string())
    encoded = msgspec.json.encode(values)
    pieces = pc.split_pattern(pa.array([encoded[1:-1]], pa.binary()), b",")[0].values
    if len(pieces) == len(values):
        return pieces.cast(pa.string())
    return pa.array([msgspec.json.encode(v).decode() for v in values], pa.string())


def _times(values: list, exact: bool):
    converted = texts_to_ns(values) if exact else numbers_to_ns(values)
    if converted is None:
        return None
    ns, problem = converted
    return pa.array(ns, pa.int64()), pa.array(problem, pa.int8())


def _with_extra(events: list, ph: np.ndarray) -> set[int]:
    """Positions of entries besides flows that carry one of EXTRA_FIELDS (instants, counters and
    unmapped phases may; complete events cannot: their shape has no such field)."""
    candidates = np.flatnonzero(~np.isin(ph, ("X",) + FLOW_PHASES)).tolist()
    return {i for i in candidates if _EXTRA_VALUES(events[i]) != _NO_EXTRA}


def _codes(array: pa.Array) -> tuple[np.ndarray, list]:
    """(code per row, distinct values) of a string array; null is a value of its own."""
    encoded = pc.dictionary_encode(array, null_encoding="encode")
    return encoded.indices.to_numpy(zero_copy_only=False).astype(np.int64), encoded.dictionary.to_pylist()


def _extra_tails(events: list, rows: set[int], extras: dict[int, dict]) -> dict[int, bytes]:
    """`,"extra":{...}}` closing the rows that carry fields without a column: EXTRA_FIELDS, then
    the unknown fields of loosely decoded entries. Encoded once per distinct set of values (an
    instant's scope `s` takes a few), so millions of `[memory]` instants cost no JSON round trip."""
    tails, cache = {}, {}
    for i in rows:
        values = _EXTRA_VALUES(events[i])
        tail = cache.get(values) if i not in extras else None
        if tail is None:
            extra = {f: v for f, v in zip(EXTRA_FIELDS, values) if v is not None}
            tail = b',"extra":' + msgspec.json.encode({**extra, **extras.get(i, {})}) + b"}"
            if i not in extras:
                cache[values] = tail
        tails[i] = tail
    return tails


def _compose_args(
    events: list,
    cats: pa.Array,
    pids: pa.Array,
    tids: pa.Array,
    rare: set[int],
    extras: dict[int, dict],
    skip: np.ndarray,
) -> tuple[pa.Array, int]:
    """`{"cat":..,"pid":..,"tid":..,"args":{...source args verbatim...}}` per row (null where
    `skip`), plus `"extra":{...}` for the `rare` rows and those with `extras`. The head is built
    once per distinct (cat, pid, tid); rows are laid out straight into one Arrow buffer."""
    n = len(events)
    cat_codes, cat_values = _codes(cats)
    pid_codes, pid_values = _codes(pids)
    tid_codes, tid_values = _codes(tids)
    combined = (cat_codes * len(pid_values) + pid_codes) * len(tid_values) + tid_codes
    combined[skip] = -1  # skipped rows: one empty "head", no args, no closing brace
    combos, inverse = np.unique(combined, return_inverse=True)
    heads = []
    for combo in combos.tolist():
        if combo < 0:
            heads.append(b"")
            continue
        rest, t = divmod(combo, len(tid_values))
        c, p = divmod(rest, len(pid_values))
        heads.append(
            (
                '{"cat":'
                + json.dumps(cat_values[c], ensure_ascii=False)
                + ',"pid":'
                + pid_values[p]
                + ',"tid":'
                + tid_values[t]
                + ',"args":'
            ).encode()
        )
    head_list = [heads[i] for i in inverse.tolist()]
    raw = [e.args or _EMPTY_OBJECT for e in events]
    raw_lengths = np.fromiter(map(len, raw), dtype=np.int64, count=n)  # measured once, kept up to date
    oversize = np.flatnonzero(raw_lengths > MAX_ARGS_BYTES).tolist()
    for i in oversize:
        raw[i] = truncated_args(len(raw[i]))
        raw_lengths[i] = len(raw[i])
    tail = [b"}"] * n
    tail_lengths = np.ones(n, dtype=np.int64)
    for i in np.flatnonzero(skip).tolist():
        raw[i] = tail[i] = b""
        raw_lengths[i] = tail_lengths[i] = 0
    for i, text in _extra_tails(events, rare | set(extras), extras).items():
        tail[i] = text
        tail_lengths[i] = len(text)
    data = b"".join(chain.from_iterable(zip(head_list, raw, tail)))
    lengths = raw_lengths + tail_lengths
    head_lengths = np.array([len(h) for h in heads], dtype=np.int64)[inverse]
    offsets = np.zeros(n + 1, dtype=np.int64)
    np.cumsum(head_lengths + lengths, out=offsets[1:])
    validity = pa.array(~skip).buffers()[1] if skip.any() else None
    composed = pa.Array.from_buffers(pa.large_string(), n, [validity, pa.py_buffer(offsets), pa.py_buffer(data)])
    try:
        composed.validate(full=True)
    except pa.ArrowInvalid:
        raise TrnprofError("an event's args are not valid UTF-8 text (JSON traces must be UTF-8)") from None
    return composed.cast(pa.string()), len(oversize)


def _positions(mask) -> np.ndarray:
    return np.flatnonzero(mask.fill_null(False).to_numpy(zero_copy_only=False))


def stage_chunk(chunk: Chunk, mode: dict | None = None) -> Staged:
    """Stage one chunk; switches `mode["exact"]` on (and re-decodes) when float times are too
    large for exact arithmetic."""
    staged = _stage(chunk)
    if staged is None:
        if mode is not None:
            mode["exact"] = True
        staged = _stage(decode_exact(chunk))
    return staged


def _stage(chunk: Chunk) -> Staged | None:
    events = chunk.events
    bad = [(chunk.first_index + pos, error, raw) for pos, error, raw in chunk.bad]
    extras = chunk.extras
    keep = None
    if chunk.bad:
        keep = [i for i, e in enumerate(events) if e is not None]
        new_position = {old: new for new, old in enumerate(keep)}
        events = [events[i] for i in keep]
        extras = {new_position[i]: v for i, v in extras.items()}
        idx = np.asarray(keep, dtype=np.int64) + chunk.first_index
    else:
        idx = np.arange(chunk.first_index, chunk.first_index + len(events), dtype=np.int64)
    if not events:
        return Staged(STAGED_SCHEMA.empty_table(), _mapped_args([], []), _flow_ids([], []), bad=bad)
    ts = _times([e.ts for e in events], chunk.exact)
    dur = _times([e.dur for e in events], chunk.exact) if ts is not None else None
    if ts is None or dur is None:
        return None
    ph_list = [e.ph for e in events]
    ph = pa.array(ph_list, pa.string())
    ph_np = np.asarray(ph_list, dtype=object)
    cat = pa.array([e.cat for e in events], pa.string())
    name = pa.array([e.name for e in events], pa.string())
    pid = json_texts([e.pid for e in events])
    tid = json_texts([e.tid for e in events])
    flow_mask = np.isin(ph_np, FLOW_PHASES)
    args, truncated = _args_column(events, cat, pid, tid, ph_np, extras, flow_mask)
    rows = pa.Table.from_arrays(
        [pa.array(idx), ph, cat, name, pid, tid, ts[0], dur[0], ts[1], dur[1], args], schema=STAGED_SCHEMA
    )
    sources = {keep_position: raw_json for keep_position, raw_json in _sources(chunk, keep).items()}
    originals = {
        int(idx[i]): sources.get(i) or msgspec.json.encode(events[i])
        for i in _positions(_suspicious(ph, name, ts[1], dur[1]))
    }
    flows = np.flatnonzero(flow_mask)
    return Staged(
        rows,
        _select_args(events, idx, cat, name),
        _flow_ids(idx[flows], [events[i] for i in flows]),
        originals,
        bad,
        truncated,
    )


def _args_column(events: list, cat, pid, tid, ph_np, extras: dict, flow_mask: np.ndarray) -> tuple[pa.Array, int]:
    """The composed `args` of every row but plain flow arrows (no args, no extra fields: their
    `id`/`bp` go to the flows table), which stay null; and how many args were truncated."""
    plain_flows = flow_mask.copy()
    carrying = [i for i in np.flatnonzero(flow_mask).tolist() if events[i].args] + [i for i in extras if flow_mask[i]]
    plain_flows[carrying] = False
    return _compose_args(events, cat, pid, tid, _with_extra(events, ph_np), extras, plain_flows)


def _sources(chunk: Chunk, keep: list | None) -> dict[int, bytes]:
    """Source JSON of loosely decoded entries, by their position among the kept events."""
    if keep is None:
        return chunk.sources
    new_position = {old: new for new, old in enumerate(keep)}
    return {new_position[i]: raw for i, raw in chunk.sources.items() if i in new_position}


def _suspicious(ph, name, ts_problem, dur_problem):
    """Rows that route.py will quarantine for their own content (their source JSON is kept)."""
    timed = pc.not_equal(ph, "M")
    return pc.or_(
        pc.or_(pc.and_(timed, pc.not_equal(ts_problem, 0)), pc.and_(pc.equal(ph, "X"), pc.not_equal(dur_problem, 0))),
        pc.or_(pc.invert(pc.is_in(ph, pa.array(KNOWN_PHASES))), pc.greater(pc.binary_length(name), MAX_NAME_BYTES)),
    )


def _flow_ids(idx, events: list) -> pa.Table:
    """Flow ids as JSON text (ids may be numbers or strings) and binding points, vectorised."""

    def texts(values):
        text = json_texts(values)
        return pc.if_else(pc.equal(text, "null"), pa.scalar(None, pa.string()), text)

    return pa.table(
        {
            "idx": pa.array(np.asarray(idx, dtype=np.int64)),
            "id": texts([e.id for e in events]),
            "bp": pa.array([e.bp for e in events], pa.string()),
        }
    )


def _select_args(events: list, idx: np.ndarray, cat: pa.Array, name: pa.Array) -> pa.Table:
    cat = cat.fill_null("")
    wanted = pc.or_(
        pc.is_in(cat, pa.array(ARGS_CATEGORIES)), pc.and_(pc.equal(cat, "kernel"), matches(name, COMM_KERNEL))
    )
    for prefix in ARGS_NAME_PREFIXES:
        wanted = pc.or_(wanted, pc.starts_with(name, prefix))
    positions = _positions(wanted)
    return _mapped_args(idx[positions], [events[i].args or _EMPTY_OBJECT for i in positions])


def _mapped_args(idx, raws: list[bytes]) -> pa.Table:
    try:
        parsed = _MAPPED_ARGS.decode(b"[" + b",".join(raws) + b"]")
    except (msgspec.ValidationError, msgspec.DecodeError):
        parsed = [_one_mapped(bytes(raw)) for raw in raws]
    columns = {"idx": pa.array(np.asarray(idx, dtype=np.int64))}
    fields = zip(*map(msgspec.structs.astuple, parsed)) if parsed else [()] * len(ARGS_FIELDS)
    for name, values in zip(ARGS_FIELDS, fields):
        columns[name] = _loose_array(list(values))
    return pa.table(columns)


def _one_mapped(raw: bytes) -> MappedArgs:
    try:
        return _ONE_MAPPED_ARGS.decode(raw)
    except (msgspec.ValidationError, msgspec.DecodeError):
        return MappedArgs()  # unexpected types: nothing read from args (they stay in `args`)


def _loose_array(values: list) -> pa.Array:
    """One args field as Arrow: numbers as int64/float64, strings as strings, anything else
    (lists, mixed types) as JSON text."""
    try:
        array = pa.array(values)
    except (pa.ArrowInvalid, pa.ArrowTypeError, OverflowError):
        array = None
    if array is not None and (
        pa.types.is_integer(array.type)
        or pa.types.is_floating(array.type)
        or pa.types.is_string(array.type)
        or pa.types.is_null(array.type)
    ):
        return array
    return pa.array([None if v is None else msgspec.json.encode(v).decode() for v in values], pa.string())
