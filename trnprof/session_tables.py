"""Tables every run session has beside the run's own: `run_job` (the manifest's job metadata as
one row), `hardware` (the Trainium hardware table) and `gpu_hardware` (the GPU families). They are
created before the stdlib views, which read them (e.g. `step_mfu`), and rule SQL may read them too."""

from __future__ import annotations

import duckdb
import pyarrow as pa

from . import hardware

# (column, arrow type, manifest job keys tried in order, description)
RUN_JOB_COLUMNS = [
    ("world_size", pa.int64(), (), "ranks in the job (the manifest's world_size)"),
    ("samples_per_step", pa.float64(), ("samples_per_step",), "global batch: samples per step"),
    (
        "model_flops_per_step",
        pa.float64(),
        ("model_flops_per_step",),
        "FLOPs the model needs per step over all ranks (for MFU)",
    ),
    ("peak_flops_per_s", pa.float64(), ("peak_flops_per_s",), "peak FLOP/s of all the job's devices together"),
    ("instance_type", pa.string(), ("instance_type",), "instance type, e.g. trn1.32xlarge"),
    ("precision", pa.string(), ("precision",), "training precision as the collector states it, e.g. bf16"),
    (
        "zero_stage",
        pa.int64(),
        ("zero_stage", "zero", "zero1"),
        "ZeRO stage of the optimizer (0 = unsharded, 1 = optimizer state sharded); null when unknown",
    ),
    (
        "microbatches",
        pa.int64(),
        ("microbatches", "num_microbatches"),
        "pipeline microbatches per step; null when unknown",
    ),
    ("collector", pa.string(), (), "collector that wrote the run"),
    (
        "device_kind",
        pa.string(),
        ("device_kind",),
        "platform the trace ran on as its collector recorded it: cuda, rocm, mtia, xpu, hpu, cpu; "
        "null when not recorded",
    ),
    ("device_model", pa.string(), ("device_model",), "device name, e.g. Tesla V100-SXM2-32GB; null when unknown"),
    (
        "neuron_sdk",
        pa.string(),
        ("neuron_sdk",),
        "Neuron SDK release the job ran with, e.g. 2.30.0; null when not recorded",
    ),
    (
        "framework",
        pa.string(),
        ("framework",),
        "training framework as recorded: torch-xla, torchneuron (native PyTorch on Neuron), torchtitan, jax; "
        "null when not recorded",
    ),
]
RUN_JOB_DOC = "One row: the job metadata of the run's manifest (`job` keys), null where unknown."


def _job_value(job: dict, keys):
    for key in keys:
        for source in (job, job.get("parallelism") if isinstance(job.get("parallelism"), dict) else {}):
            if source.get(key) is not None:
                return source[key]
    return None


def run_job_table(manifest: dict) -> pa.Table:
    """The `run_job` table of a run: one row from its manifest."""
    job = manifest.get("job") or {}
    values = {}
    for name, typ, keys, _ in RUN_JOB_COLUMNS:
        if name == "world_size":
            value = manifest.get("world_size")
        elif name == "collector":
            value = (manifest.get("source") or {}).get("collector")
        else:
            value = _job_value(job, keys)
        if isinstance(value, bool):
            value = int(value)
        try:
            values[name] = pa.array([value], type=typ)
        except (pa.ArrowInvalid, pa.ArrowTypeError, TypeError, ValueError, OverflowError):
            values[name] = pa.nulls(1, typ)  # a value of another shape than documented: unknown
    return pa.table(values)


# name -> (description, [(column, description)])
DOCS = {
    "run_job": (RUN_JOB_DOC, [(name, doc) for name, _, _, doc in RUN_JOB_COLUMNS]),
    "hardware": (hardware.DOC, [(name, doc) for name, _, doc in hardware.COLUMNS]),
    "gpu_hardware": (hardware.GPU_DOC, [(name, doc) for name, _, doc in hardware.GPU_COLUMNS]),
}


def session_tables(manifest: dict) -> list[tuple[str, pa.Table]]:
    """(name, table) of every session table of a run, for each engine to register."""
    return [
        ("run_job", run_job_table(manifest)),
        ("hardware", hardware.table()),
        ("gpu_hardware", hardware.gpu_table()),
    ]


def attach_tables(con: duckdb.DuckDBPyConnection, manifest: dict, schema: str = "main") -> None:
    """Create `run_job` and `hardware` in `schema` (before the stdlib views that read them)."""
    con.execute(f'CREATE SCHEMA IF NOT EXISTS "{schema}"')
    for name, arrow in session_tables(manifest):
        con.register("_arrow_source", arrow)
        try:
            con.execute(f'CREATE TABLE "{schema}"."{name}" AS SELECT * FROM _arrow_source')
        finally:
            con.unregister("_arrow_source")
