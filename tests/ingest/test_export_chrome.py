"""`trnprof export --format chrome`: a Perfetto-loadable Chrome trace, and a lossless round trip."""

from __future__ import annotations

import gzip
import json
from collections import Counter

import pandas as pd
import pytest

from trnprof.api import open_run
from trnprof.collectors.ingest import ingest
from trnprof.collectors.synthetic import synthetic_run
from trnprof.export.chrome import export_chrome, us_texts


@pytest.fixture(scope="module")
def synthetic(tmp_path_factory):
    return synthetic_run(tmp_path_factory.mktemp("syn") / "run", ranks=3, steps=2, ops_per_step=6, seed=5)


def _tables(path):
    with open_run(path) as run:
        return {
            name: run.sql(f"SELECT * FROM {name} ORDER BY {order}")
            for name, order in (
                ("events", "rank, ts, lane, name, kind, dur"),
                ("counters", "rank, ts, name"),
                ("ranks", "rank"),
            )
        }


def test_chrome_trace_layout(synthetic, tmp_path):
    out = tmp_path / "trace.json.gz"
    counts = export_chrome(synthetic, out)
    document = json.load(gzip.open(out))
    events = document["traceEvents"]
    assert document["otherData"]["producer"] == "trnprof" and document["displayTimeUnit"] == "ns"
    processes = {e["pid"]: e["args"]["name"] for e in events if e["ph"] == "M" and e["name"] == "process_name"}
    assert processes == {0: "rank 0", 1: "rank 1", 2: "rank 2"}
    threads = {(e["pid"], e["tid"]): e["args"]["name"] for e in events if e["ph"] == "M" and e["name"] == "thread_name"}
    with open_run(synthetic) as run:
        lanes = run.sql("SELECT DISTINCT rank, lane FROM events")
        n_events = len(run.sql("SELECT * FROM events"))
        n_counters = len(run.sql("SELECT * FROM counters"))
    assert sorted(threads.values()) == sorted(lanes["lane"])
    complete = [e for e in events if e["ph"] == "X"]
    assert len(complete) == counts["events"] == n_events
    assert all(
        isinstance(e["ts"], float) and isinstance(e["dur"], float) and (e["pid"], e["tid"]) in threads for e in complete
    )
    assert Counter(e["ph"] for e in events)["C"] == counts["counters"] == n_counters
    counter = next(e for e in events if e["ph"] == "C")
    assert set(counter["args"]) == {"value"} and counter["cat"] == "bytes" and "trnprof_args" not in counter
    collective = next(e for e in complete if e["cat"] == "collective")
    assert collective["args"]["coll_op"] == "all_reduce" and "lane" in collective["args"]


def test_round_trip_keeps_every_event_and_counter(synthetic, tmp_path):
    export_chrome(synthetic, tmp_path / "trace.json")
    ingest([tmp_path / "trace.json"], tmp_path / "back")
    before, after = _tables(synthetic), _tables(tmp_path / "back")
    for name in before:
        pd.testing.assert_frame_equal(before[name], after[name], check_dtype=False)
    assert open_run(tmp_path / "back").manifest["job"] == open_run(synthetic).manifest["job"]


def test_round_trip_of_an_ingested_trace_with_args(tmp_path):
    events = [
        {
            "ph": "X",
            "cat": "cpu_op",
            "name": 'quote " and \\ slash \u00e9',
            "pid": 1,
            "tid": 1,
            "ts": "TS",
            "dur": 0.001,
            "args": {"text": "tab\there", "n": [1, {"a": None}]},
        },
        {"ph": "X", "cat": "kernel", "name": "k", "pid": 0, "tid": 7, "ts": 1712195495520855, "dur": 2},
        {
            "ph": "i",
            "s": "t",
            "cat": "cpu_instant_event",
            "name": "[memory]",
            "pid": 1,
            "tid": 1,
            "ts": 1712195495520856,
            "args": {
                "Total Reserved": 512,
                "Total Allocated": 256,
                "Bytes": 256,
                "Addr": 140243,
                "Device Type": 1,
                "Device Id": 0,
                "note": 'q"\u00e9',
            },
        },
        {"ph": "C", "name": "queue", "pid": 1, "tid": 1, "ts": 1712195495520857, "args": {"value": 3}},
    ]
    text = json.dumps({"traceEvents": events}).replace('"TS"', "1712195495520854.801")  # digits a float cannot hold
    (tmp_path / "t.json").write_text(text)
    ingest([tmp_path / "t.json"], tmp_path / "run")
    export_chrome(tmp_path / "run", tmp_path / "out.json")
    ingest([tmp_path / "out.json"], tmp_path / "back")
    before, after = _tables(tmp_path / "run"), _tables(tmp_path / "back")
    for name in ("events", "counters"):
        pd.testing.assert_frame_equal(before[name], after[name], check_dtype=False)
    assert before["events"]["ts"].tolist() == [1712195495520854801, 1712195495520855000]
    args = after["counters"].set_index("name")["args"]
    assert json.loads(args["hbm.allocated"])["args"] == events[2]["args"] and pd.isna(args["hbm.allocator_cache"])
    assert json.loads(args["queue"])["args"] == {"value": 3}


def test_times_keep_nanoseconds():
    import numpy as np

    assert us_texts(np.array([0, 1, 999, 1000, 1712195495520854801, -1500])).to_pylist() == [
        "0.000",
        "0.001",
        "0.999",
        "1.000",
        "1712195495520854.801",
        "-1.500",
    ]


def test_cli_export(cli, synthetic, tmp_path):
    result = cli("export", synthetic, "--format", "chrome", "-o", tmp_path / "t.json.gz")
    assert result.exit_code == 0 and result.output.startswith(f"{tmp_path / 't.json.gz'}: ")
    again = cli("export", synthetic, "-o", tmp_path / "t.json.gz")
    assert again.exit_code == 2 and "output exists" in again.output
    wrong = cli("export", tmp_path / "nothing", "-o", tmp_path / "u.json")
    assert wrong.exit_code == 2 and wrong.output.startswith("error: run not found")
    assert cli("export", synthetic, "-o", tmp_path / "t.txt").exit_code == 2


def test_non_finite_counter_samples_are_left_out_and_counted(tmp_path):
    """The run store refuses NaN samples; a run written by other means may still hold them."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    from trnprof.manifest import new_manifest
    from trnprof.runstore import write_run

    with write_run(tmp_path / "run", new_manifest("tests")) as run:
        run.write_events(
            {"rank": [0], "ts": [0], "dur": [5], "kind": ["compute"], "name": ["k"], "lane": ["nc/tensor"]}
        )
        run.write_counters(
            pa.table({"rank": pa.array([0, 0], pa.int32()), "ts": [0, 1], "name": ["q", "q"], "value": [1.5, 2.5]})
        )
        run.write_ranks({"rank": [0]})
    part = next((tmp_path / "run" / "counters" / "rank=0").glob("*.parquet"))
    table = pq.read_table(part)
    pq.write_table(
        table.set_column(table.schema.get_field_index("value"), "value", pa.array([1.5, float("nan")])), part
    )
    manifest = json.loads((tmp_path / "run" / "trnprof.json").read_text())  # written by other means: a
    manifest["parts"][part.relative_to(tmp_path / "run").as_posix()] = [2, part.stat().st_size]  # whole run
    (tmp_path / "run" / "trnprof.json").write_text(json.dumps(manifest))
    counts = export_chrome(tmp_path / "run", tmp_path / "t.json")
    assert (counts["counters"], counts["skipped_counters"]) == (1, 1)
    samples = [e for e in json.load(open(tmp_path / "t.json"))["traceEvents"] if e["ph"] == "C"]
    assert samples == [{"ph": "C", "name": "q", "pid": 0, "tid": 0, "ts": 0.0, "args": {"value": 1.5}}]
