"""µs -> int64 ns without drift: both routes agree with exact decimal arithmetic."""

from __future__ import annotations

import decimal
import json

from hypothesis import given, settings
from hypothesis import strategies as st

from trnprof.collectors.kineto.columns import stage_chunk
from trnprof.collectors.kineto.stream import read_chunks
from trnprof.collectors.kineto.times import MISSING, NOT_A_NUMBER, OUT_OF_RANGE, numbers_to_ns, texts_to_ns


def _exact(text: str) -> int:
    return int((decimal.Decimal(text) * 1000).to_integral_value(rounding=decimal.ROUND_HALF_EVEN))


def test_floats_that_drift_in_binary():
    values = [1234567.891, 0.001, 4203669603069.091, 1212075528731.11, 2.675, 1.005]
    ns, problem = numbers_to_ns(values)
    assert ns.tolist() == [_exact(repr(v)) for v in values]
    assert not problem.any()
    assert int(1.005 * 1000) == 1004 and ns[-1] == 1005  # the trap of naive scaling


def test_large_floats_need_the_text_route():
    assert numbers_to_ns([1712195495520854.8]) is None
    ns, _ = texts_to_ns([b"1712195495520854.8", b"1.5e3", b"12", b"-0.0005", b"0.0015"])
    assert ns.tolist() == [1712195495520854800, 1500000, 12000, 0, 2]


def test_problems_are_reported_not_wrapped():
    ns, problem = numbers_to_ns([None, 10**17, 5])
    assert problem.tolist() == [MISSING, OUT_OF_RANGE, 0] and ns[2] == 5000
    _, problem = texts_to_ns([b"", b'"soon"', b"1e30", b"1"])
    assert problem.tolist() == [MISSING, NOT_A_NUMBER, OUT_OF_RANGE, 0]


@settings(max_examples=200, deadline=None)
@given(st.integers(min_value=0, max_value=2**62), st.integers(min_value=0, max_value=999))
def test_any_ns_written_as_us_text_comes_back(whole_us, frac):
    text = f"{whole_us // 1000}.{frac:03d}"
    exact = _exact(text)
    ns, problem = texts_to_ns([text.encode()])
    assert ns.tolist() == [exact] and not problem.any()
    value = float(text)
    converted = numbers_to_ns([value])
    if abs(value) < 2**43:  # the float route is exact below 2**43 µs and declines above
        assert converted[0].tolist() == [exact]
    else:
        assert converted is None


def test_a_chunk_switches_to_exact_mode(tmp_path):
    events = [
        {"ph": "X", "name": "a", "ts": 1.5, "dur": 1},
        {"ph": "X", "name": "b", "ts": 1712195495520854.8, "dur": 0.001},
    ]
    path = tmp_path / "t.json"
    path.write_text(json.dumps({"traceEvents": events}))
    mode = {"exact": False}
    staged = [stage_chunk(chunk, mode) for chunk in read_chunks(path, mode=mode)]
    assert mode["exact"]
    rows = staged[-1].rows
    assert rows["ts"].to_pylist() == [1500, 1712195495520854800] and rows["dur"].to_pylist() == [1000, 1]
