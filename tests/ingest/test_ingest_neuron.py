"""Neuron tool outputs. No real capture was available: the inputs in tests/data/neuron are built
from the documented field names by tests/data/neuron/make_samples.py."""

from __future__ import annotations

import json
import shutil

import pandas as pd
import pytest

from tests.conftest import DATA, assert_accounted
from trnprof.api import open_run
from trnprof.collectors.ingest import ingest
from trnprof.collectors.ingest.detect import detect
from trnprof.errors import TrnprofError

DATA = DATA / "neuron"


def _rows(run, sql):
    return [
        {k: None if pd.isna(v) else v for k, v in r.items()} for r in run.sql(sql).astype(object).to_dict("records")
    ]


def test_formats_are_detected_from_content(tmp_path):
    assert detect(DATA / "neuron_monitor.jsonl") == "neuron-monitor"
    assert detect(DATA / "system_profile.json") == "neuron-system-profile"
    assert detect(DATA / "explorer") == "neuron-explorer"
    assert detect(DATA / "explorer" / "CcOp.parquet") == "neuron-explorer"
    renamed = tmp_path / "whatever.txt"
    shutil.copy(DATA / "system_profile.json", renamed)
    assert detect(renamed) == "neuron-system-profile"


def test_neuron_monitor_counters_per_core(tmp_path):
    ingest([DATA / "neuron_monitor.jsonl"], tmp_path / "run")
    run = open_run(tmp_path / "run")
    hbm = _rows(
        run,
        "SELECT rank, ts, SUM(value) AS bytes FROM counters WHERE name LIKE 'hbm.%' "
        "GROUP BY rank, ts ORDER BY rank, ts",
    )
    per_core = 193986816 + 176285056 + 20971520
    assert [(r["rank"], r["ts"]) for r in hbm] == [(0, 1e9), (0, 2e9), (0, 3e9), (1, 1e9), (1, 2e9), (1, 3e9)]
    assert hbm[0]["bytes"] == per_core and hbm[3]["bytes"] == per_core + 1048576
    assert run.view("memory_peak")["capacity_bytes"].tolist() == [16 * 2**30] * 2
    utilization = _rows(run, "SELECT rank, ts, value FROM counters WHERE name = 'nc.utilization' ORDER BY ts, rank")
    assert [r["value"] for r in utilization] == [40.0, 50.0, 41.0, 51.0]  # report 3's group reported an error
    ranks = _rows(run, "SELECT rank, chip, core, instance_type FROM ranks")
    assert ranks == [
        {"rank": 0, "chip": 0, "core": 0, "instance_type": "trn1.32xlarge"},
        {"rank": 1, "chip": 0, "core": 1, "instance_type": "trn1.32xlarge"},
    ]
    record = assert_accounted(run)
    assert record["quarantine_reasons"] == {"reported_error": 1}
    quarantine = run.sql(f"SELECT detail FROM read_parquet('{tmp_path}/run/ingest/quarantine.parquet')")
    assert quarantine["detail"].tolist() == ["neuroncore_counters: device busy"]


def test_neuron_monitor_rank_offset(tmp_path):
    ingest([DATA / "neuron_monitor.jsonl"], tmp_path / "run", rank=32)
    assert open_run(tmp_path / "run").sql("SELECT rank FROM ranks")["rank"].tolist() == [32, 33]


def test_system_profile_events(tmp_path):
    ingest([DATA / "system_profile.json"], tmp_path / "run")
    run = open_run(tmp_path / "run")
    events = _rows(run, "SELECT rank, kind, name, lane, bytes, args FROM events ORDER BY ts")
    assert [(e["rank"], e["kind"], e["name"], e["lane"], e["bytes"]) for e in events] == [
        (0, "annotation", "PjitFunction(matmul_allgather)", "host/tid-80375131", None),
        (0, "transfer", "nrt_tensor_write", "dma/h2d", 4),
        (0, "host", "nrt_execute", "host/tid-1627711", None),
        (1, "compute", "nc_exec_running", "nc/exec", None),
    ]
    assert json.loads(events[1]["args"])["event_type"] == "Neuron_Runtime_API_Event"
    record = run.manifest["ingest"]["files"][0]
    assert record["quarantine_reasons"] == {"negative_duration": 1}
    assert record["to"] == {"events": 4, "counters": 2, "meta": 0, "quarantine": 1}
    assert sorted(run.sql("SELECT DISTINCT name FROM counters")["name"]) == [
        "host.cpu.47.util",
        "host.memory.used",
        "host.memory.used_percent",
    ]


def test_explorer_profile(tmp_path):
    ingest([DATA / "explorer"], tmp_path / "run")
    run = open_run(tmp_path / "run")
    colls = _rows(
        run,
        "SELECT kind, name, coll_op, bytes, coll_group, coll_seq, coll_ranks, args FROM events "
        "WHERE lane = 'nc/cc' AND name <> 'cc_running' ORDER BY ts",
    )
    assert [(c["kind"], c["coll_op"], c["bytes"], c["coll_seq"], c["coll_ranks"]) for c in colls] == [
        ("collective", "all_gather", 32768, 7, 4),
        ("p2p", "send", 64, 8, 2),
    ]
    assert json.loads(colls[0]["args"])["algorithm"] == "Ring"
    compute = _rows(run, "SELECT lane, name, dur FROM events WHERE kind = 'compute' ORDER BY ts")
    assert [c["lane"] for c in compute] == ["nc/tensor", "nc/vector", "nc/pcore1/tensor"]
    assert run.sql("SELECT rank FROM ranks")["rank"].tolist() == [1]  # Metadata.neuroncore_idx
    counters = sorted(run.sql("SELECT DISTINCT name FROM counters")["name"])
    assert counters == [
        "hbm_traffic.throughput",
        "hbm_traffic.transferred",
        "host.memory.used",
        "host.memory.used_percent",
    ]
    copied = sorted(p.name for p in (tmp_path / "run" / "neuron_explorer").iterdir())
    assert copied == [
        "cc_op.parquet",
        "hbm_usage.parquet",
        "host_mem_usage.parquet",
        "instruction.parquet",
        "metadata.parquet",
        "summary.parquet",
        "system_profile_events.parquet",
    ]
    assert assert_accounted(run)["source_entries"] == 3 + 2 + 2 + 1 + 1 + 2 + 1


def test_explorer_table_without_required_field(tmp_path):
    import pyarrow as pa
    import pyarrow.parquet as pq

    folder = tmp_path / "profile"
    folder.mkdir()
    pq.write_table(pa.table({"start_ts": [1], "engine": ["tensor"]}), folder / "Instruction.parquet")
    with pytest.raises(TrnprofError, match="Instruction lacks required field.*opcode"):
        ingest([folder], tmp_path / "run")


@pytest.mark.parametrize(
    "name, content, message",
    [
        ("m.jsonl", '{"neuron_runtime_data": [}\n', "invalid neuron-monitor JSON"),
        ("s.json", '{"trace_events": 5}', "trace_events is not an array"),
    ],
)
def test_neuron_bad_inputs(tmp_path, name, content, message):
    (tmp_path / name).write_text(content)
    with pytest.raises(TrnprofError, match=message):
        ingest([tmp_path / name], tmp_path / "run")
