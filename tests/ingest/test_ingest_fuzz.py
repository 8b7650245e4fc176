"""Mutated real traces: every outcome is a run whose counts add up, or one TrnprofError; never
another exception, never a half-written run."""

from __future__ import annotations

import gzip
import json
import tempfile
from pathlib import Path

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.conftest import KINETO, assert_accounted
from trnprof.api import open_run
from trnprof.collectors.ingest import ingest
from trnprof.errors import TrnprofError

SMALL = [
    "cpu_only/rank-34.Jul_15_10_52_41.1074.pt.trace.json.gz",
    "triton_example/triton_example.json.gz",
    "amd_trace/mi250_minitoy_train_ROCm6_2_kineto.json.gz",
]


def _documents():
    paths = [KINETO / p for p in SMALL]
    assert all(p.is_file() for p in paths), f"test traces missing under {KINETO}"
    return [json.load(gzip.open(p)) for p in paths]


DOCUMENTS = _documents()

MUTATIONS = {
    "ts_text": lambda e, r: e.update(ts=str(e.get("ts"))),
    "ts_negative": lambda e, r: e.update(ts=-1e9 * r),
    "ts_huge": lambda e, r: e.update(ts=1e300),
    "ts_drop": lambda e, r: e.pop("ts", None),
    "dur_negative": lambda e, r: e.update(dur=-r),
    "dur_drop": lambda e, r: e.pop("dur", None),
    "name_long": lambda e, r: e.update(name="x" * (70_000 + r)),
    "name_number": lambda e, r: e.update(name=r),
    "name_unicode": lambda e, r: e.update(name="\u00e9\u4e2d\U0001f600" * (r % 5 + 1)),
    "unknown_field": lambda e, r: e.update(tts=r, sf={"a": r}),
    "phase": lambda e, r: e.update(ph="BEbenOND"[r % 8]),
    "args_text": lambda e, r: e.update(args="not an object"),
    "pid_text": lambda e, r: e.update(pid=f"proc,{r}"),
}


def _check_ingest(document, folder: Path):
    path = folder / "t.json"
    path.write_text(json.dumps(document))
    try:
        ingest([path], folder / "run")
    except TrnprofError as exc:
        assert str(exc) and "\n" not in str(exc)
        assert not (folder / "run").exists()
        return None
    with open_run(folder / "run") as run:
        record = assert_accounted(run)
        assert record["source_entries"] == len(document["traceEvents"])
        assert int(run.sql("SELECT COUNT(*) AS n FROM events")["n"][0]) == record["to"]["events"]
        quarantined = int(
            run.sql(f"SELECT COUNT(*) AS n FROM read_parquet('{folder}/run/ingest/quarantine.parquet')")["n"][0]
        )
        assert quarantined == record["to"]["quarantine"] == sum(record["quarantine_reasons"].values())
        return record


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    which=st.integers(0, len(SMALL) - 1),
    edits=st.lists(
        st.tuples(st.integers(0, 10**6), st.sampled_from(sorted(MUTATIONS)), st.integers(1, 999)),
        min_size=1,
        max_size=6,
    ),
)
def test_mutated_events_are_quarantined_or_refused(which, edits):
    document = json.loads(json.dumps(DOCUMENTS[which]))
    events = document["traceEvents"]
    for position, mutation, value in edits:
        event = events[position % len(events)]
        if isinstance(event, dict):
            MUTATIONS[mutation](event, value)
    with tempfile.TemporaryDirectory() as folder:
        _check_ingest(document, Path(folder))


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(which=st.integers(0, len(SMALL) - 1), cut=st.floats(0.0, 1.0), gz=st.booleans())
def test_truncated_files_are_refused_cleanly(which, cut, gz):
    text = json.dumps(DOCUMENTS[which]).encode()
    data = gzip.compress(text) if gz else text
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / ("t.json.gz" if gz else "t.json")
        path.write_bytes(data[: int(len(data) * cut)])
        try:
            ingest([path], Path(folder) / "run")
        except TrnprofError as exc:
            assert "\n" not in str(exc)
            assert sorted(p.name for p in Path(folder).iterdir()) == [path.name]
        else:
            assert cut > 0.99  # only a file cut at (nearly) its very end can still be whole
