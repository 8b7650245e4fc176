"""What rule SQL may read: the run's tables, the public stdlib views and the `run_job` table.

`run_job` is the one table the engine adds: the manifest's job metadata as one row, so rules can
use what the collector knew about the job (samples per step, model FLOPs, peak FLOPs, ...).
"""

from __future__ import annotations

from functools import lru_cache

import pyarrow as pa

from trnprof.schema import TABLE_COLUMNS
from trnprof.stdlib import ViewDef, load_views

# (column, arrow type, manifest job keys tried in order, description)
RUN_JOB_COLUMNS = [
    ("world_size", pa.int64(), (), "ranks in the job (the manifest's world_size)"),
    ("samples_per_step", pa.float64(), ("samples_per_step",), "global batch: samples per step"),
    ("model_flops_per_step", pa.float64(), ("model_flops_per_step",),
     "FLOPs the model needs per step over all ranks (for MFU)"),
    ("peak_flops_per_s", pa.float64(), ("peak_flops_per_s",),
     "peak FLOP/s of all the job's devices together"),
    ("instance_type", pa.string(), ("instance_type",), "instance type, e.g. trn1.32xlarge"),
    ("precision", pa.string(), ("precision",), "training precision as the collector states it, e.g. bf16"),
    ("zero_stage", pa.int64(), ("zero_stage", "zero", "zero1"),
     "ZeRO stage of the optimizer (0 = unsharded, 1 = optimizer state sharded); null when unknown"),
    ("microbatches", pa.int64(), ("microbatches", "num_microbatches"),
     "pipeline microbatches per step; null when unknown"),
    ("collector", pa.string(), (), "collector that wrote the run"),
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
        except (pa.ArrowInvalid, pa.ArrowTypeError, TypeError, ValueError):
            values[name] = pa.nulls(1, typ)  # a value of another shape than documented: unknown
    return pa.table(values)


@lru_cache(maxsize=1)
def stdlib_views() -> dict[str, ViewDef]:
    return {view.name: view for view in load_views() if view.public}


def readable_tables() -> list[str]:
    """Every name rule SQL may read."""
    return sorted(set(TABLE_COLUMNS) | set(stdlib_views()) | {"run_job"})


def signal_names() -> dict[str, str]:
    """The flags of the `signals` view a rule may list under `requires`, with their meaning."""
    return dict(stdlib_views()["signals"].columns)
