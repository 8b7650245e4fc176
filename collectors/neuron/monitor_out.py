"""What the neuron-monitor reader builds: counter rows, meta rows, quarantine rows and the
source accounting (every record counted once, in counters, meta or quarantine)."""

from __future__ import annotations

import json
from pathlib import Path

import pyarrow as pa

from trnprof.collectors.common.limits import MAX_RANK
from trnprof.collectors.common.source import Source
from trnprof.collectors.common.tables import meta_rows, quarantine_table
from trnprof.runstore import conform
from trnprof.schema import COUNTERS


def _json(value) -> str:
    return json.dumps(value, sort_keys=True, ensure_ascii=False, default=str)


class Out:
    def __init__(self, base: int):
        self.base = base
        self.rows = {"rank": [], "ts": [], "name": [], "value": [], "unit": [], "args": []}
        self.meta: list[tuple[str, str]] = []
        self.infos: dict[str, str] = {}
        self.quarantine: list[tuple] = []  # (index, reason, detail, JSON)
        self.to = {"counters": 0, "meta": 0, "quarantine": 0}
        self.reasons: dict[str, int] = {}
        self.cores: set[int] = set()
        self.cores_per_device: int | None = None

    # -- records --------------------------------------------------------------------------
    def quarantine_record(self, index: int, reason: str, detail: str, value) -> None:
        self.quarantine.append((index, reason, detail, _json(value)))
        self.to["quarantine"] += 1
        self.reasons[reason] = self.reasons.get(reason, 0) + 1

    def meta_record(self, name: str, value) -> None:
        self.meta.append((name, _json(value)))
        self.to["meta"] += 1

    def info(self, index: int, key: str, value) -> None:
        """An info object: kept once per distinct content (a change mid-capture keeps each)."""
        if not isinstance(value, dict):
            self.quarantine_record(index, "malformed_report", f"{key} is not an object", value)
            return
        if value.get("error"):
            self.quarantine_record(index, "reported_error", f"{key}: {value['error']}", value)
            return
        self.to["meta"] += 1
        text = _json(value)
        name = key if self.infos.get(key, text) == text else f"{key}[{index}]"
        if name not in self.infos:
            self.infos[name] = text
            self.meta.append((name, text))

    # -- counters -------------------------------------------------------------------------
    def add(self, rank: int, ts: int, name: str, value, unit: str, args: str) -> None:
        if value is None:
            return
        for key, item in (
            ("rank", rank),
            ("ts", ts),
            ("name", name),
            ("value", float(value)),
            ("unit", unit),
            ("args", args),
        ):
            self.rows[key].append(item)

    def emit_runtime(self, name: str, group, ranks: dict[str, int], owner: int, ts: int, args: dict) -> None:
        text = _json(args)
        self.to["counters"] += 1
        if name == "neuroncore_counters":
            for core, data in group.neuroncores_in_use.items():
                self.add(ranks[core], ts, "nc.utilization", data.neuroncore_utilization, "percent", text)
                self.add(ranks[core], ts, "nc.flops", data.flops, "flop/s", text)
                for sub, values in data.v3d.items():
                    self.add(ranks[core], ts, f"nc.{sub}.utilization", values.neuroncore_utilization, "percent", text)
        elif name == "memory_used":
            used = group.neuron_runtime_used_bytes
            for core, data in used.usage_breakdown.neuroncore_memory_usage.items():
                for category, value in data.items():
                    self.add(ranks[core], ts, f"hbm.{category}", value, "bytes", text)
            for category, value in used.usage_breakdown.host.items():
                self.add(owner, ts, f"host_mem.{category}", value, "bytes", text)
            self.add(owner, ts, "runtime.memory.host", used.host, "bytes", text)
            self.add(owner, ts, "runtime.memory.neuron_device", used.neuron_device, "bytes", text)
            if group.loaded_models:
                self.meta.append((f"loaded_models[{args['report']}]", _json(group.loaded_models)))
        elif name == "execution_stats":
            for outcome, n in group.execution_summary.items():
                self.add(owner, ts, f"exec.{outcome}", n, "count", text)
            for kind, n in group.error_summary.items():
                self.add(owner, ts, f"exec.error.{kind}", n, "count", text)
            for which, percentiles in group.latency_stats.items():
                for p, seconds in (percentiles or {}).items():
                    self.add(owner, ts, f"exec.{which}.{p}", seconds, "s", text)
        else:
            for key, value in group.vcpu_usage.items():
                self.add(owner, ts, f"runtime.vcpu.{key}", value, "percent", text)

    def device_owners(self, group) -> list[int] | None:
        """The rank of each device's first core, or None when one is out of range."""
        owners = []
        for device in group.neuron_devices:
            d = device.get("neuron_device_index")
            if d is None:
                owners.append(self.base)
                continue
            if d < 0 or not float(d).is_integer():
                return None
            owner = self.base + int(d) * (self.cores_per_device or 1)
            if owner > MAX_RANK:
                return None
            owners.append(owner)
        return owners

    def emit_system(self, name: str, group, owners: list[int], ts: int, args: dict) -> None:
        text, first = _json(args), self.base
        self.to["counters"] += 1
        if name == "neuron_hw_counters":
            for owner, device in zip(owners, group.neuron_devices):
                for key, value in device.items():
                    if key != "neuron_device_index":
                        self.add(owner, ts, f"ecc.{key}", value, "count", text)
        elif name == "vcpu_usage":
            for key, value in group.average_usage.items():
                self.add(first, ts, f"host.vcpu.{key}", value, "percent", text)
            self.add(first, ts, "host.context_switches", group.context_switch_count, "count", text)
            if group.usage_data:
                self.meta.append((f"vcpu_usage_data[{args['report']}]", _json(group.usage_data)))
        else:
            for key in ("memory_total_bytes", "memory_used_bytes", "swap_total_bytes", "swap_used_bytes"):
                self.add(first, ts, f"host.memory.{key}", getattr(group, key), "bytes", text)


def finish(path: Path, out: Out, reports: int, rank_option) -> Source:
    counters = conform(pa.table({k: pa.array(v, COUNTERS.field(k).type) for k, v in out.rows.items()}), "counters")
    info = {k: json.loads(v) for k, v in out.infos.items() if k in ("instance_info", "neuron_hardware_info")}
    hardware, instance = info.get("neuron_hardware_info", {}), info.get("instance_info", {})
    per_device = out.cores_per_device
    memory = hardware.get("neuron_device_memory_size")
    per_core = (
        int(memory // per_device)
        if isinstance(memory, (int, float)) and not isinstance(memory, bool) and 0 < memory < 1 << 62 and per_device
        else None
    )
    ranks = []
    for r in sorted(out.cores | ({out.base} if counters.num_rows else set())):
        core = r - out.base
        ranks.append(
            {
                "rank": r,
                "host": _text(instance.get("instance_id")),
                "chip": core // per_device if per_device else None,
                "core": core % per_device if per_device else None,
                "instance_type": _text(instance.get("instance_type")),
                "hbm_capacity_bytes": per_core,
            }
        )
    n = len(out.meta)
    meta = meta_rows(
        [k for k, _ in out.meta], [None] * n, [None] * n, [v for _, v in out.meta], "neuron-monitor", None, path.name
    )
    job = {
        k: v
        for k, v in (
            ("instance_type", _text(instance.get("instance_type"))),
            ("neuron_device_type", _text(hardware.get("neuron_device_type"))),
        )
        if v
    }
    counts = {
        "source_entries": sum(out.to.values()),
        "reports": reports,
        "to": dict(out.to),
        "counter_rows": counters.num_rows,
        "quarantine_reasons": dict(sorted(out.reasons.items())),
    }
    return Source(
        path=path,
        format="neuron-monitor",
        counters=counters,
        extra={"ingest/meta": meta},
        quarantine=quarantine_table(out.quarantine, None, path.name),
        ranks=ranks,
        counts=counts,
        job=job,
        rank_from="--rank + NeuronCore index" if rank_option is not None else "NeuronCore index",
    )


def _text(value) -> str | None:
    return value if isinstance(value, str) else None
