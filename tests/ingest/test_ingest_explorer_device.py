"""Explorer device profiles: tables copied with rank and step, the profile as one step, the schema
version checked with one warning, and the deprecated JSON output read into the same tables."""

from __future__ import annotations

import json

import pyarrow as pa
import pyarrow.parquet as pq

import trnprof
from trnprof.collectors.ingest import ingest
from trnprof.collectors.ingest.detect import detect


def _profile(folder, version="7.4.0"):
    folder.mkdir()
    pq.write_table(
        pa.table(
            {
                "start_ts": [0, 100],
                "end_ts": [100, 400],
                "duration_ns": [100, 300],
                "engine": ["tensor", "vector"],
                "opcode": ["MATMUL", "TENSOR_TENSOR"],
                "raw_flops": [1000, 0],
            }
        ),
        folder / "Instruction.parquet",
    )
    pq.write_table(pa.table({"profile_schema_version": [version], "neuroncore_idx": [3]}), folder / "Metadata.parquet")
    return folder


def test_known_schema_no_warning_and_views(tmp_path):
    summary = ingest([_profile(tmp_path / "p")], tmp_path / "run")
    assert summary["warnings"] == []
    run = trnprof.open_run(tmp_path / "run")
    activity = run.sql("SELECT rank, step, engine, active_ns, raw_flops FROM engine_activity ORDER BY engine")
    assert activity.to_dict("records") == [
        {"rank": 3, "step": 0, "engine": "tensor", "active_ns": 100.0, "raw_flops": 1000.0},
        {"rank": 3, "step": 0, "engine": "vector", "active_ns": 300.0, "raw_flops": 0.0},
    ]
    steps = run.sql("SELECT ts, dur FROM events WHERE kind = 'step'")
    assert steps.to_dict("records") == [{"ts": 0, "dur": 400}]


def test_unknown_schema_version_loads_with_one_warning(tmp_path):
    summary = ingest([_profile(tmp_path / "p", version="9.0.0")], tmp_path / "run")
    assert len(summary["warnings"]) == 1 and "'9.0.0'" in summary["warnings"][0]
    assert trnprof.open_run(tmp_path / "run").sql("SELECT COUNT(*) AS n FROM engine_activity")["n"][0] == 2


def test_deprecated_json_output(tmp_path):
    path = tmp_path / "profile.json"
    path.write_text(
        json.dumps(
            {
                "summary": [{"total_time": 4e-7, "hardware_flops": 1000}],
                "instruction": [
                    {"timestamp": 0, "duration": 100, "label": "TensorMatrix", "opcode": "MATMUL", "raw_flops": 1000}
                ],
            }
        )
    )
    assert detect(path) == "neuron-explorer-json"
    ingest([path], tmp_path / "run")
    run = trnprof.open_run(tmp_path / "run")
    assert run.sql("SELECT engine, active_ns FROM engine_activity").to_dict("records") == [
        {"engine": "tensor", "active_ns": 100.0}
    ]
    agreement = run.sql("SELECT within_tolerance FROM explorer_agreement WHERE metric = 'hardware_flops'")
    assert agreement["within_tolerance"].tolist() == [True]
