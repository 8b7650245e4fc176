"""Streaming decode: chunks never split an event, whatever the text holds, and broken files give
one clear error."""

from __future__ import annotations

import gzip
import json

import pytest

from trnprof.collectors.kineto import stream
from trnprof.collectors.kineto.stream import read_chunks
from trnprof.errors import TrnprofError


def _events(path, monkeypatch=None, block=None):
    if block is not None:
        monkeypatch.setattr(stream, "BLOCK", block)
        monkeypatch.setattr(stream, "_WINDOW", block)
    chunks = list(read_chunks(path))
    return chunks, [e for c in chunks for e in c.events]


def _tricky_trace(n: int) -> dict:
    """Names and args full of what a naive splitter would cut on."""
    events = []
    for i in range(n):
        events.append(
            {
                "ph": "X",
                "cat": "cpu_op",
                "name": f'op}},{{"ph":"X"}} #{i}',
                "pid": 1,
                "tid": 2,
                "ts": 1000 + i,
                "dur": 1,
                "args": {"nested": {"a": [{"b": "},{"}], "c": {}}, "i": i},
            }
        )
    return {"schemaVersion": 1, "traceEvents": events, "baseTimeNanoseconds": 7}


def test_small_blocks_cut_only_between_events(tmp_path, monkeypatch):
    path = tmp_path / "t.json"
    path.write_text(json.dumps(_tricky_trace(400), indent=1))
    chunks, events = _events(path, monkeypatch, block=512)
    assert len(chunks) > 5
    assert [e.name for e in events] == [f'op}},{{"ph":"X"}} #{i}' for i in range(400)]
    assert [json.loads(bytes(e.args))["i"] for e in events] == list(range(400))
    assert chunks[-1].header == {"schemaVersion": b"1", "baseTimeNanoseconds": b"7"}
    assert chunks[0].early_header == {"schemaVersion": b"1"}
    assert [c.first_index for c in chunks] == [sum(len(x.events) for x in chunks[:i]) for i in range(len(chunks))]


def test_gzip_and_plain_read_the_same(tmp_path):
    plain, packed = tmp_path / "t.json", tmp_path / "t.json.gz"
    text = json.dumps(_tricky_trace(50))
    plain.write_text(text)
    packed.write_bytes(gzip.compress(text.encode()))
    assert [e.name for e in _events(plain)[1]] == [e.name for e in _events(packed)[1]]


def test_bare_array_form_with_and_without_closing_bracket(tmp_path):
    events = _tricky_trace(3)["traceEvents"]
    closed, open_ = tmp_path / "a.json", tmp_path / "b.json"
    closed.write_text(json.dumps(events))
    open_.write_text(json.dumps(events)[:-1] + ",\n")
    for path in (closed, open_):
        chunks, decoded = _events(path)
        assert len(decoded) == 3 and chunks[-1].header == {}


@pytest.mark.parametrize(
    "content, message",
    [
        (b"", "empty file"),
        (b"   \n", "empty file"),
        (b'{"traceEvents": [{"ph": "X"', "invalid JSON"),
        (b'{"schemaVersion": 1, "other": []}', "no traceEvents array"),
        (b'{"traceEvents": {"ph": "X"}}', "traceEvents is not an array"),
        (b"hello", "not a JSON trace"),
        (b'{"traceEvents": [{"ph": "X", "name": "\xff\xfe"}]}', "UTF-8"),
    ],
)
def test_broken_files_give_one_clear_error(tmp_path, content, message):
    path = tmp_path / "bad.json"
    path.write_bytes(content)
    with pytest.raises(TrnprofError, match=message):
        list(read_chunks(path))


def test_truncated_gzip_is_one_error(tmp_path):
    data = gzip.compress(json.dumps(_tricky_trace(2000)).encode())
    path = tmp_path / "cut.json.gz"
    path.write_bytes(data[: len(data) // 2])
    with pytest.raises(TrnprofError, match="truncated or corrupt gzip"):
        list(read_chunks(path))


def test_invalid_json_deep_in_a_large_file_names_its_offset(tmp_path, monkeypatch):
    text = json.dumps(_tricky_trace(300))
    broken = text[:8000] + "]" + text[8001:]
    path = tmp_path / "t.json"
    path.write_text(broken)
    with pytest.raises(TrnprofError, match=r"invalid JSON near byte [\d,]+"):
        _events(path, monkeypatch, block=1024)


def test_entries_that_are_not_events_are_reported_alone(tmp_path):
    trace = _tricky_trace(3)
    trace["traceEvents"][1:1] = [5, {"ph": "X", "ts": "soon"}, {"ph": "X", "ts": 1, "dur": 1, "tts": 3}]
    path = tmp_path / "t.json"
    path.write_text(json.dumps(trace))
    (chunk,) = list(read_chunks(path))
    assert [position for position, _, _ in chunk.bad] == [1, 2]
    assert chunk.extras == {3: {"tts": 3}}
    assert len([e for e in chunk.events if e is not None]) == 4
