"""Typed shapes of Chrome-trace / Kineto JSON for msgspec: decoding into these Structs is ~6x
faster than `json.load` and keeps `args` as raw JSON bytes (no Python dicts per event).

Events are a union tagged by `ph`, one class per phase, each declaring exactly the fields the
Chrome Trace Event Format gives that phase (`s` for instants, `id` for counters, `id`/`bp` for
flows). Unknown fields make msgspec refuse the fast shape; such entries (and phases without a
class) are then decoded one by one and nothing they hold is dropped (`stream._loose_event`).
Two variants: times as JSON numbers (fast path) or as raw number text (exact path, times.py).
"""

from __future__ import annotations

from typing import Union

import msgspec

RAW_EMPTY = msgspec.Raw()
# Fields without a column that some phases carry; kept in `args` under "extra" (flows keep
# theirs in the flows table). Flow ids are numbers or strings in the Chrome format.
# `trnprof_args`: a counter's own args in a trace written by `trnprof export` (a `C` event's
# `args` are its numeric series, so the text travels beside them; viewers ignore the field).
EXTRA_FIELDS = {
    "s": Union[str, None],
    "id": Union[int, str, None],
    "bp": Union[str, None],
    "trnprof_args": Union[str, None],
}
PHASES = ("X", "i", "I", "C", "M", "s", "t", "f")
_PHASE_EXTRAS = {
    "i": ("s",),
    "I": ("s",),
    "C": ("id", "trnprof_args"),
    "s": ("id", "bp"),
    "t": ("id", "bp"),
    "f": ("id", "bp"),
}


def _classes(time_type):
    """One Struct per phase, times decoded as `time_type`."""
    default = RAW_EMPTY if time_type is msgspec.Raw else None
    base = msgspec.defstruct(
        "EventBase",
        [
            ("name", str, ""),
            ("cat", Union[str, None], None),
            ("pid", Union[int, str, None], None),
            ("tid", Union[int, str, None], None),
            ("ts", time_type, default),
            ("dur", time_type, default),
            ("args", msgspec.Raw, RAW_EMPTY),
        ],
        gc=False,
        forbid_unknown_fields=True,
        omit_defaults=True,
        tag_field="ph",
    )
    classes = {}
    for phase in PHASES:
        extras = [(f, EXTRA_FIELDS[f], None) for f in _PHASE_EXTRAS.get(phase, ())]
        missing = [f for f in EXTRA_FIELDS if f not in _PHASE_EXTRAS.get(phase, ())]
        cls = msgspec.defstruct(
            f"Event_{phase}_{'exact' if default is not None else 'fast'}",
            extras,
            bases=(base,),
            tag=phase,
            gc=False,
            forbid_unknown_fields=True,
            omit_defaults=True,
            namespace={"ph": phase, **{f: None for f in missing}},
        )
        classes[phase] = cls
    return classes


FAST = _classes(Union[int, float, None])
EXACT = _classes(msgspec.Raw)
Event = Union[tuple(FAST.values())]  # noqa: UP007 (msgspec needs a typing.Union)
ExactEvent = Union[tuple(EXACT.values())]  # noqa: UP007


class OtherEvent(msgspec.Struct, gc=False, omit_defaults=True):
    """An entry with a phase trnprof does not map (B/E, async, object events ...): staged so
    that it reaches the quarantine as `unsupported_phase`, with all its fields."""

    ph: str = ""
    name: str = ""
    cat: str | None = None
    pid: int | str | None = None
    tid: int | str | None = None
    ts: int | float | None = None
    dur: int | float | None = None
    args: msgspec.Raw = RAW_EMPTY
    s: str | None = None
    id: int | str | None = None
    bp: str | None = None
    trnprof_args = None  # not a field (an unknown field here): read as absent, like the phase shapes do


class ExactOtherEvent(OtherEvent, gc=False, omit_defaults=True):
    ts: msgspec.Raw = RAW_EMPTY
    dur: msgspec.Raw = RAW_EMPTY


# Arguments read from `args` for the mapping (everything stays in the `args` column too).
class MappedArgs(msgspec.Struct, gc=False):
    correlation: int | None = None
    bytes: int | float | None = None
    collective_name: str | None = msgspec.field(default=None, name="Collective name")
    in_nelems: int | None = msgspec.field(default=None, name="In msg nelems")
    out_nelems: int | None = msgspec.field(default=None, name="Out msg nelems")
    dtype: str | None = None
    group_size: int | None = msgspec.field(default=None, name="Group size")
    pg_name: str | int | None = msgspec.field(default=None, name="Process Group Name")
    pg_id: str | int | None = msgspec.field(default=None, name="Process Group ID")
    pg_ranks: str | list | None = msgspec.field(default=None, name="Process Group Ranks")
    seq_upper: int | None = msgspec.field(default=None, name="Seq")
    seq: int | None = None
    input_dims: list | None = msgspec.field(default=None, name="Input Dims")
    input_type: list | None = msgspec.field(default=None, name="Input type")
    total_allocated: int | float | None = msgspec.field(default=None, name="Total Allocated")
    total_reserved: int | float | None = msgspec.field(default=None, name="Total Reserved")
    alloc_bytes: int | float | None = msgspec.field(default=None, name="Bytes")
    device_type: int | None = msgspec.field(default=None, name="Device Type")
