"""neuron-monitor JSON reports -> counters per NeuronCore (docs/ingest.md, "neuron-monitor").

neuron-monitor prints one complete JSON report per period (field names: the Neuron docs,
aws-neuron/aws-neuron-sdk tools/neuron-sys-tools/neuron-monitor-user-guide.rst; typed in `monitor_types.py`).
Reports carry no clock, so report k is
placed at the sum of the periods of reports 0..k (its end), from 0 ns: line it up with other
inputs yourself if needed. Reports captured by `trnprof record` carry the epoch ns at which each
arrived (`trnprof_received_ns`, the end of its period): that is their time.
Rank = `--rank` (default 0) + NeuronCore index.

Per NeuronCore: `nc.utilization` (percent), `nc.flops` (flop/s), device memory `hbm.tensors`,
`hbm.constants`, `hbm.model_code`, `hbm.model_shared_scratchpad`, `hbm.runtime_memory` (bytes,
additive: together the runtime's device memory on that core). Per Neuron application, on its
first NeuronCore: `host_mem.<category>` (bytes), `runtime.memory.<host|neuron_device>` (bytes,
the application's totals), `exec.<outcome>` and `exec.error.<type>` (counts per period),
`exec.<total|device>_latency.<pNN>` (seconds), `runtime.vcpu.<user|system>` (percent).
Instance-wide, on the first rank: `host.memory.<field>` (bytes), `host.vcpu.<field>` (percent),
`host.context_switches` (count), and per Neuron device (on its first core) `ecc.<counter>`
(count). Counter `args` name the report, period and application. Everything else (loaded
models, per-vCPU usage, instance and hardware info, top-level keys the docs do not list) goes to
the meta table.

Accounting: a source record is one metric group of one application or of the system, one info
object or one other top-level key of a report (a report that is not an object is one record).
Each goes whole to counters, meta or quarantine (a group reporting an `error`, a group not of
the documented shape, an unknown group, a core index beyond the rank range).
"""

from __future__ import annotations

from pathlib import Path

import msgspec

from trnprof.collectors.common.limits import MAX_RANK, MAX_TIME_NS
from trnprof.collectors.common.source import Source
from trnprof.errors import TrnprofError

from .monitor_out import Out, finish
from .monitor_types import INFO_KEYS, RUNTIME_GROUPS, SYSTEM_GROUPS, Runtime, problem
from .util import open_text

RECEIVED = "trnprof_received_ns"  # added by `trnprof record`'s sidecar: when the report arrived
TOP_KEYS = ("neuron_runtime_data", "system_data", RECEIVED) + INFO_KEYS


def _reports(path: Path) -> list:
    stripped = open_text(path).strip()
    if not stripped:
        raise TrnprofError(f"{path}: empty file")
    if stripped.startswith("["):
        try:
            reports = msgspec.json.decode(stripped)
        except msgspec.DecodeError as exc:
            raise TrnprofError(f"{path}: invalid neuron-monitor JSON: {exc}") from None
        return reports
    reports = []
    for number, line in enumerate(stripped.splitlines(), 1):
        if line.strip():
            try:
                reports.append(msgspec.json.decode(line))
            except msgspec.DecodeError as exc:
                raise TrnprofError(
                    f"{path}: line {number}: invalid neuron-monitor JSON (one report per line expected): {exc}"
                ) from None
    return reports


def _period_ns(report: dict) -> int:
    groups = []
    runtimes = report.get("neuron_runtime_data")
    for runtime in runtimes if isinstance(runtimes, list) else []:
        inner = runtime.get("report") if isinstance(runtime, dict) else None
        groups += list(inner.values()) if isinstance(inner, dict) else []
    system = report.get("system_data")
    groups += list(system.values()) if isinstance(system, dict) else []
    for group in groups:
        period = group.get("period") if isinstance(group, dict) else None
        if isinstance(period, (int, float)) and not isinstance(period, bool) and 0 < period <= 86_400:
            return round(period * 1e9)
    return 0


def read_monitor(path: Path, rank: int | None = None) -> Source:
    reports = _reports(path)
    if not isinstance(reports, list) or not reports:
        raise TrnprofError(f"{path}: not neuron-monitor reports (JSON objects with neuron_runtime_data)")
    out = Out(rank or 0)
    ts = 0
    for index, report in enumerate(reports):
        if not isinstance(report, dict):
            out.quarantine_record(index, "malformed_report", "a report is a JSON object", report)
            continue
        received = report.get(RECEIVED)
        stamped = isinstance(received, int) and not isinstance(received, bool) and 0 <= received <= MAX_TIME_NS
        ts = received if stamped else ts + _period_ns(report)
        if ts > MAX_TIME_NS:
            raise TrnprofError(f"{path}: report {index}: the periods add up beyond {MAX_TIME_NS} ns")
        _report(out, index, ts, report)
    return finish(path, out, len(reports), rank)


def _report(out: Out, index: int, ts: int, report: dict) -> None:
    for key, value in report.items():
        if key in INFO_KEYS:
            out.info(index, key, value)
        elif key not in TOP_KEYS:
            out.meta_record(f"{key}[{index}]", value)
    hardware = report.get("neuron_hardware_info")
    if isinstance(hardware, dict) and out.cores_per_device is None:
        per_device = hardware.get("neuroncore_per_device_count")
        if isinstance(per_device, int) and not isinstance(per_device, bool) and 0 < per_device <= 1024:
            out.cores_per_device = per_device
    runtimes = report.get("neuron_runtime_data")
    if runtimes is not None and not isinstance(runtimes, list):
        out.quarantine_record(index, "malformed_report", "neuron_runtime_data is not an array", runtimes)
    for number, runtime in enumerate(runtimes if isinstance(runtimes, list) else []):
        _runtime(out, index, ts, runtime, f"neuron_runtime_data[{number}]")
    system = report.get("system_data")
    if system is not None and not isinstance(system, dict):
        out.quarantine_record(index, "malformed_report", "system_data is not an object", system)
    elif system:
        _system(out, index, ts, system)


def _typed(out: Out, index: int, where: str, raw, kind):
    """`raw` as `kind`, or None after quarantining it (an error it reports, or a bad shape)."""
    try:
        group = msgspec.convert(raw, kind)
    except msgspec.ValidationError as exc:
        out.quarantine_record(index, "bad_shape", problem(exc, where), raw)
        return None
    if getattr(group, "error", ""):
        out.quarantine_record(index, "reported_error", f"{where.rsplit('.', 1)[-1]}: {group.error}", raw)
        return None
    return group


def _core_rank(out: Out, index: int, where: str, raw, cores) -> list[int] | None:
    """The ranks of the NeuronCore keys of a group, or None after quarantining it."""
    ranks = []
    for core in cores:
        if not core.isdigit():
            out.quarantine_record(index, "bad_core_index", f"{where}: NeuronCore index {core!r}", raw)
            return None
        if out.base + int(core) > MAX_RANK:
            out.quarantine_record(
                index, "rank_out_of_range", f"{where}: NeuronCore {core} + rank {out.base} exceeds {MAX_RANK}", raw
            )
            return None
        ranks.append(out.base + int(core))
    return ranks


def _runtime(out: Out, index: int, ts: int, raw, where: str) -> None:
    runtime = _typed(out, index, where, raw, Runtime)
    if runtime is None:
        return
    args = {
        "report": index,
        "pid": runtime.pid,
        "neuron_runtime_tag": runtime.neuron_runtime_tag,
        "address": runtime.address,
    }
    groups, cores = {}, []
    for name, group in runtime.report.items():
        kind = RUNTIME_GROUPS.get(name)
        if kind is None:
            out.quarantine_record(index, "unknown_group", f"{where}.report.{name}", group)
            continue
        typed = _typed(out, index, f"{where}.report.{name}", group, kind)
        keys = _group_cores(typed)
        ranks = None if typed is None else _core_rank(out, index, f"{where}.report.{name}", group, keys)
        if ranks is not None:
            groups[name] = (typed, dict(zip(keys, ranks)))
            cores += ranks
    out.cores.update(cores)
    owner = min(cores) if cores else out.base
    for name, (group, ranks) in groups.items():
        out.emit_runtime(name, group, ranks, owner, ts, dict(args, period_s=group.period))


def _group_cores(group) -> list[str]:
    if group is None:
        return []
    if hasattr(group, "neuroncores_in_use"):
        return list(group.neuroncores_in_use)
    if hasattr(group, "neuron_runtime_used_bytes"):
        return list(group.neuron_runtime_used_bytes.usage_breakdown.neuroncore_memory_usage)
    return []


def _system(out: Out, index: int, ts: int, system: dict) -> None:
    for name, raw in system.items():
        kind = SYSTEM_GROUPS.get(name)
        if kind is None:
            out.quarantine_record(index, "unknown_group", f"system_data.{name}", raw)
            continue
        group = _typed(out, index, f"system_data.{name}", raw, kind)
        if group is None:
            continue
        owners = out.device_owners(group) if name == "neuron_hw_counters" else []
        if owners is None:
            out.quarantine_record(index, "bad_device_index", f"system_data.{name}: device index out of range", raw)
            continue
        out.emit_system(name, group, owners, ts, {"report": index, "period_s": group.period})
