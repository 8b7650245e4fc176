"""Fuzzing (Hypothesis) over the four input formats and the manifest: a value anywhere in a
document replaced by a hostile one, a key removed or added, an Explorer column retyped. Every
input ends in a run whose source records add up exactly, or in one TrnprofError line with
nothing left behind; never another exception. The inputs are the repository's own samples
(tests/data/neuron) and a small Kineto trace built here."""

from __future__ import annotations

import copy
import json
import tempfile
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.conftest import DATA, assert_accounted
from trnprof.api import open_run
from trnprof.collectors.ingest import ingest
from trnprof.collectors.synthetic import synthetic_run
from trnprof.errors import TrnprofError

NEURON = DATA / "neuron"
MONITOR = [json.loads(line) for line in (NEURON / "neuron_monitor.jsonl").read_text().splitlines()]
PROFILE = json.loads((NEURON / "system_profile.json").read_text())
KINETO = {
    "distributedInfo": {"rank": 0, "world_size": 1, "backend": "nccl"},
    "baseTimeNanoseconds": 1_700_000_000_000_000_000,
    "traceEvents": [
        {"ph": "M", "name": "process_name", "pid": 1, "tid": 0, "args": {"name": "python"}},
        {"ph": "X", "cat": "user_annotation", "name": "ProfilerStep#1", "ts": 10.0, "dur": 100.0, "pid": 1, "tid": 1},
        {
            "ph": "X",
            "cat": "cpu_op",
            "name": "aten::mm",
            "ts": 12.0,
            "dur": 30.0,
            "pid": 1,
            "tid": 1,
            "args": {"External id": 3},
        },
        {
            "ph": "X",
            "cat": "kernel",
            "name": "gemm",
            "ts": 20.0,
            "dur": 40.0,
            "pid": 0,
            "tid": 7,
            "args": {"device": 0, "stream": 7, "correlation": 5},
        },
        {
            "ph": "i",
            "cat": "cpu_instant_event",
            "name": "[memory]",
            "ts": 15.0,
            "pid": 1,
            "tid": 1,
            "s": "t",
            "args": {"Total Allocated": 1024, "Device Id": 0, "Bytes": 1024},
        },
        {"ph": "C", "name": "queue", "ts": 50.0, "pid": 1, "tid": 1, "args": {"depth": 3}},
    ],
}
HOSTILE = st.sampled_from(
    [
        None,
        "",
        "lots",
        "nan",
        "-1",
        -1,
        0,
        2**31,
        2**63,
        2**64,
        10**400,
        1e300,
        -1e300,
        0.5,
        [],
        {},
        [1, 2],
        {"a": 1},
        True,
        "line\u2028break",
        "9" * 40,
    ]
)
KEYS = st.sampled_from(["error", "period", "rank", "timestamp", "name", "zzz", "0", "99999999999"])


def mutate(document, data) -> None:
    """One edit at a random place: replace a value, remove a key or add one."""
    node = document
    while True:
        children = list(node.items()) if isinstance(node, dict) else list(enumerate(node))
        if not children:
            break
        key, child = children[data.draw(st.integers(0, len(children) - 1))]
        if isinstance(child, (dict, list)) and child and data.draw(st.booleans()):
            node = child
            continue
        action = data.draw(st.sampled_from(["replace", "remove", "add"]))
        if action == "replace":
            node[key] = copy.deepcopy(data.draw(HOSTILE))  # sampled_from shares its [] and {}
        elif action == "remove" and isinstance(node, dict):
            del node[key]
        elif isinstance(node, dict):
            node[data.draw(KEYS)] = copy.deepcopy(data.draw(HOSTILE))
        return
    return


def outcome(path: Path, folder: Path) -> dict | None:
    """Ingest `path`: the input's accounting record, or None after a clean one-line refusal."""
    try:
        ingest([path], folder / "run")
    except TrnprofError as exc:
        assert str(exc) and "\n" not in str(exc)
        assert sorted(p.name for p in folder.iterdir()) == sorted([path.name]), "left something behind"
        return None
    with open_run(folder / "run") as run:
        record = assert_accounted(run)
        quarantined = pq.read_metadata(folder / "run" / "ingest" / "quarantine.parquet").num_rows
        assert quarantined == record["to"]["quarantine"]
        events = int(run.sql("SELECT COUNT(*) FROM events").iloc[0, 0])
        assert events == record["to"].get("events", events)
        run.info()
    return record


FUZZ = settings(max_examples=35, deadline=None, suppress_health_check=[HealthCheck.too_slow])


@FUZZ
@given(data=st.data(), edits=st.integers(1, 4))
def test_fuzzed_neuron_monitor(data, edits):
    reports = copy.deepcopy(MONITOR)
    for _ in range(edits):
        mutate(reports, data)
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "monitor.jsonl"
        path.write_text("\n".join(json.dumps(r) for r in reports) + "\n")
        record = outcome(path, Path(folder))
        if record is not None:
            assert record["reports"] == len(reports)


def _fuzz_json(document: dict, data, edits: int, filename: str) -> None:
    document = copy.deepcopy(document)
    for _ in range(edits):
        mutate(document, data)
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / filename
        path.write_text(json.dumps(document))
        outcome(path, Path(folder))


@FUZZ
@given(data=st.data(), edits=st.integers(1, 4))
def test_fuzzed_system_profile(data, edits):
    _fuzz_json(PROFILE, data, edits, "system_profile.json")


@FUZZ
@given(data=st.data(), edits=st.integers(1, 4))
def test_fuzzed_kineto(data, edits):
    _fuzz_json(KINETO, data, edits, "trace.json")


EXPLORER_VALUES = st.sampled_from(
    [
        pa.array(["x"]),
        pa.array([None], pa.int64()),
        pa.array([2**62 + 1]),
        pa.array([-(2**62) - 1]),
        pa.array([1.5e300]),
        pa.array([True]),
        pa.array([2**40]),
        pa.array([[1, 2]]),
    ]
)


def _ingest_altered_explorer(target: Path, name: str, value: pa.Array | None) -> None:
    """Ingest the shipped Explorer profile with column `name` of `target` dropped (value None) or
    replaced by `value`: one clear error and no run, or a run whose accounting adds up."""
    with tempfile.TemporaryDirectory() as folder:
        profile = Path(folder) / "profile"
        profile.mkdir()
        for file in sorted((NEURON / "explorer").glob("*.parquet")):
            table = pq.read_table(file)
            if file == target:
                table = (
                    table.drop_columns([name])
                    if value is None
                    else table.select([c for c in table.column_names if c != name])
                    .slice(0, 1)
                    .append_column(name, value)
                )
            pq.write_table(table, profile / file.name)
        try:
            ingest([profile], Path(folder) / "run")
        except TrnprofError as exc:
            assert "\n" not in str(exc) and not (Path(folder) / "run").exists()
            return
        with open_run(Path(folder) / "run") as run:
            assert_accounted(run)


@FUZZ
@given(table_index=st.integers(0, 100), column_index=st.integers(0, 100), value=EXPLORER_VALUES, drop=st.booleans())
def test_fuzzed_explorer(table_index, column_index, value, drop):
    files = sorted((NEURON / "explorer").glob("*.parquet"))
    target = files[table_index % len(files)]
    names = pq.read_schema(target).names
    _ingest_altered_explorer(target, names[column_index % len(names)], None if drop else value)


@pytest.mark.parametrize("target", sorted((NEURON / "explorer").glob("*.parquet")), ids=lambda p: p.stem)
def test_every_explorer_text_column_given_a_number(target):
    """Names, operations and sources are text in the Explorer schema; a hostile file's numbers
    there are read as text or refused, never a crash (a found case: an int64 event name)."""
    schema = pq.read_schema(target)
    for name in [f.name for f in schema if pa.types.is_string(f.type) or pa.types.is_large_string(f.type)]:
        _ingest_altered_explorer(target, name, pa.array([2**62 + 1]))


@pytest.fixture(scope="module")
def manifest_run(tmp_path_factory) -> Path:
    return synthetic_run(tmp_path_factory.mktemp("fuzz") / "run", ranks=2, steps=2, ops_per_step=4)


@FUZZ
@given(data=st.data(), edits=st.integers(1, 3))
def test_fuzzed_manifest(manifest_run, data, edits):
    run = manifest_run
    original = (run / "trnprof.json").read_text()
    manifest = json.loads(original)
    for _ in range(edits):
        mutate(manifest, data)
    try:
        (run / "trnprof.json").write_text(json.dumps(manifest))
        try:
            with open_run(run) as opened:
                opened.info()
        except TrnprofError as exc:
            assert str(exc) and "\n" not in str(exc)
    finally:
        (run / "trnprof.json").write_text(original)
