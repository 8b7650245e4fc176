"""Microsecond trace times to int64 nanoseconds, exactly.

Chrome/Kineto times are JSON numbers in µs, often with three decimals (ns resolution). Two
routes, both exact:
- numbers already decoded (`int`, or `float` below 2**43 µs ≈ 102 days, where a double still
  resolves 1/1024 µs): ints are multiplied by 1000; floats are split into integer and fraction
  parts (both exact in binary) and only the fraction is scaled and rounded;
- larger floats (e.g. epoch µs with decimals, 1.7e15) cannot be held by a double to the ns, so
  their JSON text is parsed as a decimal (Arrow's decimal cast, Python's `decimal` as fallback).
`numbers_to_ns` returns None when a chunk needs the second route. Sub-ns digits are rounded half
to even. Results outside int64 ns are reported, not wrapped.
"""

from __future__ import annotations

import decimal

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

INT64_MAX_US = (2**63 - 1) // 1000
EXACT_FLOAT_US = 2.0**43
_THOUSAND = pa.scalar(decimal.Decimal(1000), pa.decimal128(4, 0))

# problem codes per value
OK, MISSING, NOT_A_NUMBER, OUT_OF_RANGE = 0, 1, 2, 3
PROBLEMS = {MISSING: "missing", NOT_A_NUMBER: "not_a_number", OUT_OF_RANGE: "out_of_range"}


def numbers_to_ns(values: list) -> tuple[np.ndarray, np.ndarray] | None:
    """(ns, problem code) for decoded µs numbers (int / float / None); None when some float is
    too large to convert exactly (use `texts_to_ns` on the raw text instead)."""
    try:
        array = pa.array(values)
    except (pa.ArrowInvalid, pa.ArrowTypeError, OverflowError):
        return _python(values)
    problem = np.zeros(len(values), dtype=np.int8)
    if array.null_count:
        problem[array.is_null().to_numpy(zero_copy_only=False)] = MISSING
    if pa.types.is_integer(array.type):
        us = array.fill_null(0).to_numpy()
        bad = np.abs(us) > INT64_MAX_US
        ns = np.where(bad, 0, us) * 1000
    elif pa.types.is_floating(array.type):
        f = array.fill_null(0.0).to_numpy()
        if (np.abs(f) >= EXACT_FLOAT_US).any():
            return None
        whole = np.floor(f)
        ns = whole.astype(np.int64) * 1000 + np.rint((f - whole) * 1000.0).astype(np.int64)
        bad = np.zeros(len(values), dtype=bool)
    elif pa.types.is_null(array.type):
        return np.zeros(len(values), dtype=np.int64), problem
    else:
        return _python(values)
    problem[bad & (problem == OK)] = OUT_OF_RANGE
    return ns, problem


def _python(values: list):
    texts = [
        None if v is None else (repr(v).encode() if isinstance(v, (int, float)) and not isinstance(v, bool) else b"x")
        for v in values
    ]
    return _python_texts(texts)


def texts_to_ns(raws: list) -> tuple[np.ndarray, np.ndarray]:
    """(ns, problem code) for raw JSON number texts (msgspec.Raw or bytes; empty = absent)."""
    array = _binary(raws)
    empty = pc.equal(pc.binary_length(array), 0)
    strings = pc.if_else(empty, pa.scalar("0", pa.string()), array.cast(pa.string()))
    try:
        scaled = pc.cast(
            pc.round(pc.cast(strings, pa.decimal128(38, 9)), ndigits=3, round_mode="half_to_even"), pa.decimal128(30, 3)
        )
        ns = pc.cast(pc.multiply(scaled, _THOUSAND), pa.int64()).to_numpy()
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError):
        return _python_texts([bytes(t) if t else None for t in raws])
    problem = np.where(empty.to_numpy(zero_copy_only=False), MISSING, OK).astype(np.int8)
    return ns, problem


def _binary(raws: list) -> pa.Array:
    """The raw texts as one binary array: joined once and split by Arrow (a NUL byte never
    occurs in valid JSON, so it cannot occur in a raw value), not one `bytes` per value."""
    if not raws:
        return pa.array([], pa.binary())
    pieces = pc.split_pattern(pa.array([b"\0".join(raws)], pa.binary()), b"\0")[0].values
    return pieces if len(pieces) == len(raws) else pa.array([bytes(r) for r in raws], pa.binary())


def _python_texts(texts: list) -> tuple[np.ndarray, np.ndarray]:
    """The slow, general route: one `decimal.Decimal` per value."""
    ns = np.zeros(len(texts), dtype=np.int64)
    problem = np.zeros(len(texts), dtype=np.int8)
    for i, text in enumerate(texts):
        if text is None:
            problem[i] = MISSING
            continue
        try:
            value = decimal.Decimal(text.decode() if isinstance(text, bytes) else text)
        except (decimal.InvalidOperation, UnicodeDecodeError):
            problem[i] = NOT_A_NUMBER
            continue
        if not value.is_finite():
            problem[i] = NOT_A_NUMBER
            continue
        scaled = (value * 1000).to_integral_value(rounding=decimal.ROUND_HALF_EVEN)
        if abs(scaled) > 2**63 - 1:
            problem[i] = OUT_OF_RANGE
            continue
        ns[i] = int(scaled)
    return ns, problem
