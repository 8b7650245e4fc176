"""Builds the Neuron test inputs in this folder from the documented field names (no real
neuron-monitor capture, system profile or Explorer profile was available). Sources:
the public aws-neuron/aws-neuron-sdk docs tools/neuron-sys-tools/neuron-monitor-user-guide.rst,
archive/profiler/neuron-profiler-2-0-beta-user-guide.rst, tools/neuron-explorer/profile-schema-reference.rst.
Run: python tests/data/neuron/make_samples.py"""

import json
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq

HERE = Path(__file__).resolve().parent


def monitor_report(k: int, error: str = "") -> dict:
    cores = {
        str(c): {
            "constants": 193986816,
            "model_code": 176285056,
            "model_shared_scratchpad": 0,
            "runtime_memory": 1048576 * c,
            "tensors": 20971520 + k * 1048576,
        }
        for c in (0, 1)
    }
    return {
        "neuron_runtime_data": [
            {
                "pid": 4242,
                "address": "",
                "neuron_runtime_tag": "train",
                "error": "",
                "report": {
                    "neuroncore_counters": {
                        "period": 1.0,
                        "neuroncores_in_use": {
                            "0": {"neuroncore_utilization": 40.0 + k, "flops": 1234567891011},
                            "1": {"neuroncore_utilization": 50.0 + k, "flops": 1234567891021},
                        },
                        "error": error,
                    },
                    "execution_stats": {
                        "period": 1.0,
                        "error_summary": {"generic": 0, "numerical": 0},
                        "execution_summary": {"completed": 10 + k, "timed_out": 0},
                        "latency_stats": {
                            "total_latency": {"p50": 0.011, "p99": 0.012},
                            "device_latency": {"p50": 0.010, "p99": 0.011},
                        },
                        "error": "",
                    },
                    "memory_used": {
                        "period": 1.0,
                        "neuron_runtime_used_bytes": {
                            "host": 6997643264,
                            "neuron_device": 12519788544,
                            "usage_breakdown": {
                                "host": {
                                    "application_memory": 6996594688,
                                    "constants": 0,
                                    "dma_buffers": 1048576,
                                    "tensors": 0,
                                },
                                "neuroncore_memory_usage": cores,
                            },
                        },
                        "loaded_models": [{"name": "neff", "uuid": "91f2", "model_id": 10005, "is_running": True}],
                        "error": "",
                    },
                    "neuron_runtime_vcpu_usage": {
                        "period": 1.0,
                        "vcpu_usage": {"user": 42.0, "system": 12.3},
                        "error": "",
                    },
                },
            }
        ],
        "system_data": {
            "neuron_hw_counters": {
                "period": 1.0,
                "neuron_devices": [
                    {
                        "neuron_device_index": 0,
                        "mem_ecc_corrected": 0,
                        "mem_ecc_uncorrected": 0,
                        "sram_ecc_uncorrected": 0,
                        "sram_ecc_corrected": 0,
                    }
                ],
                "error": "",
            },
            "vcpu_usage": {
                "period": 1.0,
                "average_usage": {"user": 32.7, "system": 22.8, "idle": 39.3},
                "usage_data": {"0": {"user": 34.4}},
                "context_switch_count": 123456,
                "error": "",
            },
            "memory_info": {
                "period": 1.0,
                "memory_total_bytes": 49345835008,
                "memory_used_bytes": 16042344448,
                "swap_total_bytes": 0,
                "swap_used_bytes": 0,
                "error": "",
            },
        },
        "instance_info": {
            "instance_name": "",
            "instance_id": "i-0011223344556677a",
            "instance_type": "trn1.32xlarge",
            "error": "",
        },
        "neuron_hardware_info": {
            "neuron_device_type": "trainium",
            "neuroncore_version": "v2",
            "neuron_device_count": 16,
            "neuron_device_memory_size": 34359738368,
            "neuroncore_per_device_count": 2,
            "error": "",
        },
    }


def system_profile() -> dict:
    events = [
        {
            "Neuron_Runtime_API_Event": {
                "duration": 27094,
                "group": "nrt-nc-000",
                "id": 1,
                "instance_id": "i-0f207fb2a99bd2d08",
                "lnc_idx": "0",
                "name": "nrt_tensor_write",
                "parent_id": 0,
                "process_id": "1627711",
                "size": "4",
                "tensor_id": "4900392441224765051",
                "tensor_name": "_unknown_",
                "thread_id": 1627711,
                "timestamp": 1729888371056597613,
                "type": 11,
            }
        },
        {
            "duration": 3000000,
            "group": "nrt-nc-000",
            "id": 2,
            "instance_id": "i-0f207fb2a99bd2d08",
            "lnc_idx": "0",
            "name": "nrt_execute",
            "parent_id": 0,
            "process_id": "1627711",
            "thread_id": 1627711,
            "timestamp": 1729888371057000000,
            "type": 3,
        },
        {
            "duration": 2500000,
            "group": "nrt-nc-001",
            "id": 3,
            "instance_id": "i-0f207fb2a99bd2d08",
            "lnc_idx": "1",
            "name": "nc_exec_running",
            "process_id": "1627712",
            "thread_id": 1627712,
            "timestamp": 1729888371057100000,
            "type": 7,
        },
        {
            "Framework_Event": {
                "duration": 3758079,
                "group": "framework-80375131",
                "instance_id": "i-0f207fb2a99bd2d08",
                "name": "PjitFunction(matmul_allgather)",
                "process_id": "1627711",
                "thread_id": 80375131,
                "timestamp": 1729888371056557372,
                "type": 99999,
            }
        },
        {
            "duration": -5,
            "group": "nrt-nc-000",
            "lnc_idx": "0",
            "name": "nrt_execute",
            "process_id": "1627711",
            "thread_id": 1627711,
            "timestamp": 1729888371060000000,
        },
    ]
    return {
        "trace_events": events,
        "mem_usage": [
            {
                "duration": 1,
                "instance_id": "i-0f207fb2a99bd2d08",
                "percent_usage": 9.728179797845964,
                "timestamp": 1729888369286687792,
                "usage": 51805806592,
            }
        ],
        "cpu_util": [
            {
                "cpu_id": "47",
                "duration": 1,
                "instance_id": "i-0f207fb2a99bd2d08",
                "timestamp": 1729888371287337243,
                "util": 2.3255813,
            }
        ],
    }


def explorer(folder: Path) -> None:
    folder.mkdir(exist_ok=True)
    t0 = 1_000_000
    pq.write_table(
        pa.table(
            {
                "start_ts": [t0, t0 + 500, t0 + 900],
                "end_ts": [t0 + 400, t0 + 800, t0 + 1500],
                "duration_ns": [400, 300, 600],
                "engine": ["tensor", "vector", "tensor"],
                "pcore_idx": [0, 0, 1],
                "opcode": ["MATMULT", "TENSOR_TENSOR", "MATMULT"],
                "operands": ["a", "b", "c"],
                "id": [1, 2, 3],
                "pc": [10, 11, 12],
                "bir_id": ["sg0000:1", "sg0000:2", "sg0000:3"],
                "hlo_name": ["dot.1", "add.2", "dot.3"],
            }
        ),
        folder / "Instruction.parquet",
    )
    pq.write_table(
        pa.table(
            {
                "start_ts": [t0 + 200, t0 + 1600],
                "end_ts": [t0 + 1200, t0 + 1700],
                "duration_ns": [1000, 100],
                "operation": ["AllGather", "Send"],
                "algorithm": ["Ring", "Direct"],
                "num_elements": [4096, 16],
                "dtype": ["fp16", "fp32"],
                "op_id": [7, 8],
                "stream_id": [0, 0],
                "stream_index": [0, 0],
                "trigger_engine": ["Pool", "Pool"],
                "input_size": [8192, 64],
                "output_size": [32768, 64],
                "algorithm_bandwidth": [32.768e9, 0.64e9],
                "bus_bandwidth": [24.576e9, 0.64e9],
                "replica_group": ["[[0, 1, 2, 3]]", "[[0, 1]]"],
                "replica_group_id": [0, 1],
            }
        ),
        folder / "CcOp.parquet",
    )
    pq.write_table(
        pa.table(
            {
                "timestamp": [t0, t0 + 1000],
                "current_throughput": [1.5e11, 2.0e11],
                "total_transfer_bytes": [0, 200000],
                "pcore_idx": [0, 0],
            }
        ),
        folder / "HbmUsage.parquet",
    )
    pq.write_table(
        pa.table(
            {
                "timestamp": [t0],
                "used_bytes": [51805806592],
                "used_percent": [9.7],
                "instance_id": ["i-0f207fb2a99bd2d08"],
            }
        ),
        folder / "HostMemUsage.parquet",
    )
    pq.write_table(
        pa.table(
            {
                "profile_schema_version": ["7.4.0"],
                "ntff_version": pa.array([5], pa.int32()),
                "neuroncore_idx": [1],
                "neuron_device_idx": [0],
                "instance_type": ["trn1.32xlarge"],
            }
        ),
        folder / "Metadata.parquet",
    )
    pq.write_table(
        pa.table(
            {
                "id": [1, 2],
                "name": ["nrt_execute", "cc_running"],
                "start_ts": [t0 - 100, t0 + 200],
                "end_ts": [t0 + 1600, t0 + 1200],
                "duration_ns": [1700, 1000],
                "trace_event_source": ["neuron_rt", "neuron_hw"],
                "instance_id": ["i-0f2", "i-0f2"],
                "process_id": [11, 11],
                "thread_id": [12, 12],
                "nc_idx": [0, 0],
            }
        ),
        folder / "SystemProfileEvents.parquet",
    )
    pq.write_table(pa.table({"total_time": [0.0015], "event_count": [5]}), folder / "Summary.parquet")


if __name__ == "__main__":
    with open(HERE / "neuron_monitor.jsonl", "w") as out:
        for k in range(3):
            out.write(json.dumps(monitor_report(k, error="device busy" if k == 2 else "")) + "\n")
    (HERE / "system_profile.json").write_text(json.dumps(system_profile(), indent=1))
    explorer(HERE / "explorer")
