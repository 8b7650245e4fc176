"""Hostile inputs to the collectors: every one ends in a run whose source records add up exactly
(events + counters + meta + quarantine) with the damaged record quarantined under a reason, or in
one error line (exit 2) naming file and field; never a traceback, never a silent drop."""

from __future__ import annotations

import copy
import json
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from tests.conftest import DATA, assert_accounted
from trnprof.api import open_run
from trnprof.collectors.ingest import ingest
from trnprof.errors import TrnprofError

NEURON = DATA / "neuron"
MONITOR = json.loads((NEURON / "neuron_monitor.jsonl").read_text().splitlines()[0])
PROFILE = json.loads((NEURON / "system_profile.json").read_text())


def accounted(run_path: Path) -> dict:
    """The one input's record; asserts its source records add up."""
    with open_run(run_path) as run:
        return assert_accounted(run)


def quarantined(run_path: Path) -> list[dict]:
    return pq.read_table(run_path / "ingest" / "quarantine.parquet").to_pylist()


def monitor_file(tmp_path: Path, change) -> Path:
    report = copy.deepcopy(MONITOR)
    change(report)
    path = tmp_path / "monitor.jsonl"
    path.write_text(json.dumps(report) + "\n")
    return path


def _core(report) -> dict:
    return report["neuron_runtime_data"][0]["report"]["neuroncore_counters"]["neuroncores_in_use"]


@pytest.mark.parametrize(
    "change, reason, field",
    [
        (lambda r: r.__setitem__("neuron_runtime_data", {"0": 1}), "malformed_report", "neuron_runtime_data"),
        (
            lambda r: r["neuron_runtime_data"][0].__setitem__("report", "x"),
            "bad_shape",
            "neuron_runtime_data[0].report",
        ),
        (lambda r: r["neuron_runtime_data"][0]["report"].__setitem__("memory_used", [1]), "bad_shape", "memory_used"),
        (
            lambda r: r["neuron_runtime_data"][0]["report"]["neuroncore_counters"].__setitem__("period", 1e300),
            "bad_shape",
            "neuroncore_counters.period",
        ),
        (
            lambda r: _core(r)["0"].__setitem__("neuroncore_utilization", "high"),
            "bad_shape",
            "neuroncores_in_use[...].neuroncore_utilization",
        ),
        (lambda r: _core(r)["0"].__setitem__("flops", 10**400), "bad_shape", "flops"),
        (lambda r: _core(r)["0"].__setitem__("temperature", 80), "bad_shape", "temperature"),
        (lambda r: _core(r).__setitem__("99999999999", {"flops": 1.0}), "rank_out_of_range", "99999999999"),
        (lambda r: _core(r).__setitem__("x", {"flops": 1.0}), "bad_core_index", "'x'"),
        (
            lambda r: r["neuron_runtime_data"][0]["report"].__setitem__("new_group", {"a": 1}),
            "unknown_group",
            "new_group",
        ),
        (lambda r: r.__setitem__("system_data", "x"), "malformed_report", "system_data"),
        (lambda r: r.__setitem__("neuron_hardware_info", [1]), "malformed_report", "neuron_hardware_info"),
        (
            lambda r: r["system_data"]["neuron_hw_counters"]["neuron_devices"][0].__setitem__(
                "neuron_device_index", 1e12
            ),
            "bad_device_index",
            "device index",
        ),
    ],
)
def test_monitor_shape_violations_are_quarantined_with_the_field(tmp_path, change, reason, field):
    ingest([monitor_file(tmp_path, change)], tmp_path / "run")
    record = accounted(tmp_path / "run")
    assert record["quarantine_reasons"] == {reason: 1}
    rows = quarantined(tmp_path / "run")
    assert len(rows) == 1 and field in rows[0]["detail"] and rows[0]["event"]


def test_monitor_unknown_report_keys_are_kept_in_meta(tmp_path):
    ingest([monitor_file(tmp_path, lambda r: r.__setitem__("new_info", {"x": 1}))], tmp_path / "run")
    record = accounted(tmp_path / "run")
    meta = pq.read_table(tmp_path / "run" / "ingest" / "meta.parquet").to_pylist()
    assert {"name": "new_info[0]", "value": '{"x": 1}'} in [{"name": m["name"], "value": m["value"]} for m in meta]
    assert record["quarantine_reasons"] == {}


def test_monitor_counters_carry_their_source_in_args(tmp_path):
    ingest([NEURON / "neuron_monitor.jsonl"], tmp_path / "run")
    args = open_run(tmp_path / "run").sql("SELECT DISTINCT args FROM counters WHERE name = 'nc.flops'")["args"]
    first = json.loads(sorted(args)[0])
    assert first == {"address": "", "neuron_runtime_tag": "train", "period_s": 1.0, "pid": 4242, "report": 0}


def test_monitor_rank_beyond_int32_from_the_option_is_one_error(tmp_path):
    with pytest.raises(TrnprofError, match=r"--rank: rank 2147483648 is out of range"):
        ingest([NEURON / "neuron_monitor.jsonl"], tmp_path / "run", rank=2**31)
    assert not (tmp_path / "run").exists()


def test_monitor_core_plus_rank_beyond_int32_is_quarantined(tmp_path):
    ingest([NEURON / "neuron_monitor.jsonl"], tmp_path / "run", rank=2**31 - 1)
    record = accounted(tmp_path / "run")
    assert record["quarantine_reasons"]["rank_out_of_range"] >= 1


def test_monitor_bad_line_names_the_line(tmp_path):
    path = tmp_path / "m.jsonl"
    path.write_text(json.dumps(MONITOR) + "\n{nope\n")
    with pytest.raises(TrnprofError, match=r"m.jsonl: line 2: invalid neuron-monitor JSON"):
        ingest([path], tmp_path / "run")


def profile_file(tmp_path: Path, change) -> Path:
    document = copy.deepcopy(PROFILE)
    change(document)
    path = tmp_path / "system_profile.json"
    path.write_text(json.dumps(document))
    return path


@pytest.mark.parametrize(
    "change, reason, detail",
    [
        (lambda d: d["mem_usage"][0].__setitem__("usage", "lots"), "bad_counter_value", "usage"),
        (lambda d: d["mem_usage"][0].__setitem__("usage", "nan"), "bad_counter_value", "usage"),
        (lambda d: d["mem_usage"][0].__setitem__("timestamp", 2**63), "bad_counter_value", "timestamp"),
        (lambda d: d["cpu_util"].append([1, 2]), "bad_counter_value", "not an object"),
        (lambda d: d["trace_events"][1].__setitem__("timestamp", 2**64), "bad_time", None),
        (lambda d: d["trace_events"][1].__setitem__("lnc_idx", 2**40), "rank_out_of_range", None),
    ],
)
def test_system_profile_bad_records_are_quarantined(tmp_path, change, reason, detail):
    ingest([profile_file(tmp_path, change)], tmp_path / "run")
    record = accounted(tmp_path / "run")
    assert record["quarantine_reasons"].get(reason) == 1
    if detail:
        assert any(detail in (row["detail"] or "") for row in quarantined(tmp_path / "run"))


def test_system_profile_sample_fields_are_kept_in_args(tmp_path):
    ingest([NEURON / "system_profile.json"], tmp_path / "run")
    rows = open_run(tmp_path / "run").sql("SELECT name, args FROM counters ORDER BY name").to_dict("records")
    assert {r["name"]: json.loads(r["args"]) for r in rows}["host.memory.used"] == {
        "duration": 1,
        "instance_id": "i-0f207fb2a99bd2d08",
    }


@pytest.mark.parametrize("section", ["trace_events", "mem_usage", "cpu_util"])
def test_system_profile_section_of_the_wrong_type_is_one_error(tmp_path, section):
    with pytest.raises(TrnprofError, match=rf"system_profile.json: {section} is not an array"):
        ingest([profile_file(tmp_path, lambda d: d.__setitem__(section, 5))], tmp_path / "run")


def explorer_copy(tmp_path: Path, table: str, content) -> Path:
    folder = tmp_path / "profile"
    folder.mkdir()
    for path in (NEURON / "explorer").iterdir():
        (folder / path.name).write_bytes(path.read_bytes())
    if isinstance(content, bytes):
        (folder / f"{table}.parquet").write_bytes(content)
    else:
        pq.write_table(content, folder / f"{table}.parquet")
    return folder


@pytest.mark.parametrize(
    "table, content, message",
    [
        ("Metadata", b"not parquet", r"Metadata.parquet: not a readable Parquet file"),
        ("Metadata", pa.table({"neuroncore_idx": ["abc"]}), r"Metadata.neuroncore_idx: a rank must be an integer"),
        ("Metadata", pa.table({"neuroncore_idx": [2**40]}), r"Metadata.neuroncore_idx: rank 1099511627776 is out"),
        ("Summary", b"PAR1junkPAR1", r"Summary.parquet: not a readable Parquet file"),
        (
            "Instruction",
            pa.table({"start_ts": ["x"], "engine": ["t"], "opcode": ["x"], "duration_ns": [1]}),
            r"Instruction.parquet: events.ts",
        ),
        (
            "SystemProfileEvents",
            pa.table({"start_ts": [1], "name": ["nc_exec"], "nc_idx": [2**40], "duration_ns": [1]}),
            r"SystemProfileEvents.parquet: events.rank",
        ),
    ],
)
def test_explorer_bad_tables_are_one_error_naming_the_file(tmp_path, table, content, message):
    with pytest.raises(TrnprofError, match=message):
        ingest([explorer_copy(tmp_path, table, content)], tmp_path / "run")
    assert not (tmp_path / "run").exists()


def kineto_trace(path: Path, rank=None) -> Path:
    document = {"traceEvents": [{"ph": "X", "name": "ProfilerStep#1", "ts": 0, "dur": 10, "pid": 1, "tid": 1}]}
    if rank is not None:
        document["distributedInfo"] = {"rank": rank, "world_size": 1}
    path.write_text(json.dumps(document))
    return path


@pytest.mark.parametrize(
    "name, rank, option, message",
    [
        ("t.json", 2**31, None, r"distributedInfo.rank: rank 2147483648 is out of range"),
        ("t.json", 2**70, None, r"distributedInfo.rank: rank 1180591620717411303424 is out of range"),
        ("rank-2147483648.json", None, None, r"file name: rank 2147483648 is out of range"),
        ("t.json", None, 2**31, r"--rank: rank 2147483648 is out of range"),
    ],
)
def test_kineto_rank_out_of_range_is_one_error(tmp_path, name, rank, option, message):
    with pytest.raises(TrnprofError, match=message):
        ingest([kineto_trace(tmp_path / name, rank)], tmp_path / "run", rank=option)


@pytest.mark.parametrize("base", [2**63, -(2**63) - 1, 2**62 + 1])
def test_kineto_time_base_beyond_range_is_one_error(tmp_path, base):
    path = kineto_trace(tmp_path / "t.json", 0)
    document = json.loads(path.read_text())
    document["baseTimeNanoseconds"] = base
    path.write_text(json.dumps(document))
    with pytest.raises(TrnprofError, match=r"t.json: baseTimeNanoseconds .* is beyond"):
        ingest([path], tmp_path / "run")


def test_every_neuron_sample_is_accounted_exactly(tmp_path):
    for i, sample in enumerate([NEURON / "neuron_monitor.jsonl", NEURON / "system_profile.json", NEURON / "explorer"]):
        ingest([sample], tmp_path / f"run{i}")
        record = accounted(tmp_path / f"run{i}")
        totals = open_run(tmp_path / f"run{i}").manifest["ingest"]["totals"]
        assert totals["source_entries"] == sum(v for k, v in totals.items() if k != "source_entries")
        assert (
            record["to"].get("quarantine", 0)
            == pq.read_metadata(tmp_path / f"run{i}" / "ingest" / "quarantine.parquet").num_rows
        )


def test_a_kineto_ingest_leaves_no_file_beside_the_run(tmp_path):
    out = tmp_path / "runs"
    out.mkdir()
    ingest([kineto_trace(tmp_path / "t.json", 0)], out / "run")
    assert sorted(p.name for p in out.iterdir()) == ["run"]
    assert not (out / "run" / ".scratch").exists()


def test_explorer_counters_keep_their_other_columns_in_args(tmp_path):
    ingest([NEURON / "explorer"], tmp_path / "run")
    rows = open_run(tmp_path / "run").sql("SELECT name, args FROM counters").to_dict("records")
    args = {r["name"]: json.loads(r["args"]) for r in rows}
    assert set(args["hbm_traffic.throughput"]) == {"pcore_idx"}
    assert set(args["host.memory.used"]) == {"instance_id"}
