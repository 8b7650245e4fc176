"""neuron-monitor JSON reports -> counters per NeuronCore (docs/ingest.md, "neuron-monitor").

neuron-monitor prints one complete JSON report per period (field names: the Neuron docs,
aws-neuron/aws-neuron-sdk tools/neuron-sys-tools/neuron-monitor-user-guide.rst). Reports carry no clock, so report k is
placed at the sum of the periods of reports 0..k (its end), from 0 ns: line it up with other
inputs yourself if needed. Rank = `--rank` (default 0) + NeuronCore index.

Per NeuronCore: `nc.utilization` (percent), `nc.flops` (flop/s), device memory `hbm.tensors`,
`hbm.constants`, `hbm.model_code`, `hbm.model_shared_scratchpad`, `hbm.runtime_memory` (bytes,
additive: together the runtime's device memory on that core). Per Neuron application, on its
first NeuronCore: `host_mem.<category>` (bytes), `exec.<outcome>` and `exec.error.<type>`
(counts per period), `exec.<total|device>_latency.<pNN>` (seconds), `runtime.vcpu.<user|system>`
(percent). Instance-wide, on the first rank: `host.memory.<field>` (bytes), `host.vcpu.<field>`
(percent), `host.context_switches` (count), and per Neuron device (on its first core)
`ecc.<counter>` (count). Everything else (loaded models, per-vCPU usage, instance and hardware
info) goes to the meta table; a metric group reporting an `error` goes to quarantine.
"""

from __future__ import annotations

import json
from pathlib import Path

import msgspec
import pyarrow as pa

from trnprof.collectors.ingest.source import Source
from trnprof.collectors.ingest.tables import meta_rows, quarantine_table
from trnprof.errors import TrnprofError
from trnprof.runstore import conform
from trnprof.schema import COUNTERS

from .util import open_text

HBM_CATEGORIES = ("tensors", "constants", "model_code", "model_shared_scratchpad", "runtime_memory")
RUNTIME_GROUPS = ("neuroncore_counters", "memory_used", "execution_stats", "neuron_runtime_vcpu_usage")
SYSTEM_GROUPS = ("neuron_hw_counters", "vcpu_usage", "memory_info")
INFO_KEYS = ("instance_info", "neuron_hardware_info", "neuron_k8s_info")


def _reports(path: Path) -> list:
    text = open_text(path)
    stripped = text.strip()
    if not stripped:
        raise TrnprofError(f"{path}: empty file")
    try:
        if stripped.startswith("["):
            reports = msgspec.json.decode(stripped)
        else:
            reports = [msgspec.json.decode(line) for line in stripped.splitlines() if line.strip()]
    except msgspec.DecodeError as exc:
        raise TrnprofError(f"{path}: invalid neuron-monitor JSON (one report per line expected): {exc}") from None
    if not reports or not all(isinstance(r, dict) for r in reports):
        raise TrnprofError(f"{path}: not neuron-monitor reports (JSON objects with neuron_runtime_data)")
    return reports


def _number(value):
    return value if isinstance(value, (int, float)) and not isinstance(value, bool) else None


class _Out:
    def __init__(self, base: int):
        self.base = base
        self.rows = {"rank": [], "ts": [], "name": [], "value": [], "unit": []}
        self.meta = []        # (name, value JSON)
        self.quarantine = []  # (index, reason, detail, JSON)
        self.to = {"counters": 0, "meta": 0, "quarantine": 0}
        self.cores: set[int] = set()

    def add(self, rank: int, ts: int, name: str, value, unit: str) -> None:
        value = _number(value)
        if value is None:
            return
        for key, item in (("rank", rank), ("ts", ts), ("name", name), ("value", float(value)), ("unit", unit)):
            self.rows[key].append(item)


def _period_ns(report: dict) -> int:
    groups = []
    for runtime in report.get("neuron_runtime_data") or []:
        groups += list(((runtime or {}).get("report") or {}).values())
    groups += list((report.get("system_data") or {}).values())
    for group in groups:
        if isinstance(group, dict) and _number(group.get("period")):
            return round(group["period"] * 1e9)
    return 0


def _core_counters(out: _Out, ts: int, group: dict) -> list[int]:
    cores = []
    for core, data in (group.get("neuroncores_in_use") or {}).items():
        if not str(core).isdigit() or not isinstance(data, dict):
            continue
        rank = out.base + int(core)
        cores.append(rank)
        out.add(rank, ts, "nc.utilization", data.get("neuroncore_utilization"), "percent")
        out.add(rank, ts, "nc.flops", data.get("flops"), "flop/s")
        for sub, values in (data.get("v3d") or {}).items():
            if isinstance(values, dict):
                out.add(rank, ts, f"nc.{sub}.utilization", values.get("neuroncore_utilization"), "percent")
    return cores


def _memory(out: _Out, ts: int, group: dict, first: int | None) -> tuple[list[int], list]:
    used = group.get("neuron_runtime_used_bytes") or {}
    breakdown = used.get("usage_breakdown") or {}
    cores = []
    for core, data in (breakdown.get("neuroncore_memory_usage") or {}).items():
        if not str(core).isdigit() or not isinstance(data, dict):
            continue
        rank = out.base + int(core)
        cores.append(rank)
        for category in HBM_CATEGORIES:
            out.add(rank, ts, f"hbm.{category}", data.get(category), "bytes")
        for category, value in data.items():
            if category not in HBM_CATEGORIES:
                out.add(rank, ts, f"hbm.{category}", value, "bytes")
    owner = first if first is not None else (min(cores) if cores else out.base)
    for category, value in (breakdown.get("host") or {}).items():
        out.add(owner, ts, f"host_mem.{category}", value, "bytes")
    return cores, group.get("loaded_models") or []


def _execution(out: _Out, ts: int, group: dict, owner: int) -> None:
    for outcome, n in (group.get("execution_summary") or {}).items():
        out.add(owner, ts, f"exec.{outcome}", n, "count")
    for kind, n in (group.get("error_summary") or {}).items():
        out.add(owner, ts, f"exec.error.{kind}", n, "count")
    for which, percentiles in (group.get("latency_stats") or {}).items():
        for p, seconds in (percentiles or {}).items():
            out.add(owner, ts, f"exec.{which}.{p}", seconds, "s")


def read_monitor(path: Path, rank: int | None = None) -> Source:
    reports = _reports(path)
    out = _Out(rank or 0)
    ts = 0
    infos: dict[str, str] = {}
    cores_per_device = None
    for index, report in enumerate(reports):
        ts += _period_ns(report)
        for key in INFO_KEYS:
            if key not in report:
                continue
            value = json.dumps(report[key], sort_keys=True)
            if isinstance(report[key], dict) and report[key].get("error"):
                out.quarantine.append((index, "reported_error", f"{key}: {report[key]['error']}", value))
                out.to["quarantine"] += 1
                continue
            out.to["meta"] += 1
            if infos.get(key, value) != value:  # changed during the capture: keep each version
                key = f"{key}[{index}]"
            infos.setdefault(key, value)
        hardware = report.get("neuron_hardware_info") or {}
        cores_per_device = cores_per_device or _number(hardware.get("neuroncore_per_device_count"))
        for runtime in report.get("neuron_runtime_data") or []:
            _runtime(out, index, ts, runtime or {})
        _system(out, index, ts, report.get("system_data") or {}, cores_per_device)
    for key, value in infos.items():
        out.meta.append((key, value))
    return _source(path, out, reports, cores_per_device, rank)


def _group_error(out: _Out, index: int, name: str, group) -> bool:
    if isinstance(group, dict) and group.get("error"):
        out.quarantine.append((index, "reported_error", f"{name}: {group['error']}", json.dumps(group)))
        out.to["quarantine"] += 1
        return True
    return False


def _runtime(out: _Out, index: int, ts: int, runtime: dict) -> None:
    report = runtime.get("report") or {}
    if runtime.get("error"):
        out.quarantine.append((index, "reported_error", f"runtime {runtime.get('pid')}: {runtime['error']}",
                               json.dumps(runtime)))
        out.to["quarantine"] += 1
        return
    cores = []
    counters = report.get("neuroncore_counters")
    if counters is not None and not _group_error(out, index, "neuroncore_counters", counters):
        cores += _core_counters(out, ts, counters)
        out.to["counters"] += 1
    memory = report.get("memory_used")
    if memory is not None and not _group_error(out, index, "memory_used", memory):
        memory_cores, models = _memory(out, ts, memory, min(cores) if cores else None)
        cores += memory_cores
        out.to["counters"] += 1
        if models:
            out.meta.append((f"loaded_models[{index}]", json.dumps(models)))
    out.cores.update(cores)
    owner = min(cores) if cores else out.base
    stats = report.get("execution_stats")
    if stats is not None and not _group_error(out, index, "execution_stats", stats):
        _execution(out, ts, stats, owner)
        out.to["counters"] += 1
    vcpu = report.get("neuron_runtime_vcpu_usage")
    if vcpu is not None and not _group_error(out, index, "neuron_runtime_vcpu_usage", vcpu):
        for key, value in (vcpu.get("vcpu_usage") or {}).items():
            out.add(owner, ts, f"runtime.vcpu.{key}", value, "percent")
        out.to["counters"] += 1


def _system(out: _Out, index: int, ts: int, system: dict, cores_per_device) -> None:
    first = out.base
    hw = system.get("neuron_hw_counters")
    if hw is not None and not _group_error(out, index, "neuron_hw_counters", hw):
        for device in hw.get("neuron_devices") or []:
            d = _number(device.get("neuron_device_index"))
            owner = out.base + int(d) * int(cores_per_device or 1) if d is not None else first
            for key, value in device.items():
                if key != "neuron_device_index":
                    out.add(owner, ts, f"ecc.{key}", value, "count")
        out.to["counters"] += 1
    vcpu = system.get("vcpu_usage")
    if vcpu is not None and not _group_error(out, index, "vcpu_usage", vcpu):
        for key, value in (vcpu.get("average_usage") or {}).items():
            out.add(first, ts, f"host.vcpu.{key}", value, "percent")
        out.add(first, ts, "host.context_switches", vcpu.get("context_switch_count"), "count")
        if vcpu.get("usage_data"):
            out.meta.append((f"vcpu_usage_data[{index}]", json.dumps(vcpu["usage_data"])))
        out.to["counters"] += 1
    memory = system.get("memory_info")
    if memory is not None and not _group_error(out, index, "memory_info", memory):
        for key, value in memory.items():
            if key not in ("period", "error"):
                out.add(first, ts, f"host.memory.{key}", value, "bytes")
        out.to["counters"] += 1


def _source(path: Path, out: _Out, reports: list, cores_per_device, rank_option) -> Source:
    counters = conform(pa.table({k: pa.array(v, COUNTERS.field(k).type) for k, v in out.rows.items()}), "counters")
    info = {k: json.loads(v) for k, v in out.meta if k in INFO_KEYS}
    hardware = info.get("neuron_hardware_info", {})
    instance = info.get("instance_info", {})
    per_core = None
    if _number(hardware.get("neuron_device_memory_size")) and cores_per_device:
        per_core = int(hardware["neuron_device_memory_size"] // cores_per_device)
    ranks = []
    for r in sorted(out.cores | ({out.base} if counters.num_rows else set())):
        core = r - out.base
        ranks.append({"rank": r, "host": instance.get("instance_id"),
                      "chip": core // int(cores_per_device) if cores_per_device else None,
                      "core": core % int(cores_per_device) if cores_per_device else None,
                      "instance_type": instance.get("instance_type"), "hbm_capacity_bytes": per_core})
    meta = meta_rows([k for k, _ in out.meta], [None] * len(out.meta), [None] * len(out.meta),
                     [v for _, v in out.meta], "neuron-monitor", None, path.name)
    job = {k: v for k, v in (("instance_type", instance.get("instance_type")),
                             ("neuron_device_type", hardware.get("neuron_device_type"))) if v}
    counts = {"source_entries": sum(out.to.values()), "reports": len(reports), "to": dict(out.to),
              "counter_rows": counters.num_rows,
              "quarantine_reasons": {"reported_error": out.to["quarantine"]} if out.to["quarantine"] else {}}
    return Source(path=path, format="neuron-monitor", counters=counters, extra={"ingest/meta": meta},
                  quarantine=quarantine_table(out.quarantine, None, path.name), ranks=ranks, counts=counts,
                  job=job, rank_from="--rank + NeuronCore index" if rank_option is not None else "NeuronCore index")
