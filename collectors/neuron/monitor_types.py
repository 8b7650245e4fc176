"""The documented shape of a neuron-monitor report as msgspec types (field names: the Neuron
docs, "neuron-monitor user guide"). Each metric group is validated on its own: a group that does
not match (a string where a number belongs, a field the docs do not list, a number beyond
float range) is quarantined whole with msgspec's message, which names the field."""

from __future__ import annotations

from typing import Annotated, Any, Optional

import msgspec

MAX_PERIOD_S = 86_400.0  # one report per day at most; keeps report times far inside int64 ns
Period = Annotated[float, msgspec.Meta(ge=0, le=MAX_PERIOD_S)]
Num = float  # msgspec accepts JSON ints and floats here and refuses bools, strings, 1e400
Percentiles = Optional[dict[str, Optional[Num]]]  # null when no model ran in the period


class Group(msgspec.Struct, forbid_unknown_fields=True):
    period: Optional[Period] = None
    error: str = ""


class SubCore(msgspec.Struct, forbid_unknown_fields=True):
    neuroncore_utilization: Optional[Num] = None


class CoreUsage(msgspec.Struct, forbid_unknown_fields=True):
    neuroncore_utilization: Optional[Num] = None
    flops: Optional[Num] = None
    v3d: dict[str, SubCore] = {}


class NeuronCoreCounters(Group):
    neuroncores_in_use: dict[str, CoreUsage] = {}


class Breakdown(msgspec.Struct, forbid_unknown_fields=True):
    host: dict[str, Num] = {}
    neuroncore_memory_usage: dict[str, dict[str, Num]] = {}


class UsedBytes(msgspec.Struct, forbid_unknown_fields=True):
    host: Optional[Num] = None
    neuron_device: Optional[Num] = None
    usage_breakdown: Breakdown = msgspec.field(default_factory=Breakdown)


class MemoryUsed(Group):
    neuron_runtime_used_bytes: UsedBytes = msgspec.field(default_factory=UsedBytes)
    loaded_models: list[Any] = []


class ExecutionStats(Group):
    error_summary: dict[str, Num] = {}
    execution_summary: dict[str, Num] = {}
    latency_stats: dict[str, Percentiles] = {}


class RuntimeVcpu(Group):
    vcpu_usage: dict[str, Num] = {}


class HwCounters(Group):
    neuron_devices: list[dict[str, Num]] = []


class VcpuUsage(Group):
    average_usage: dict[str, Num] = {}
    usage_data: dict[str, dict[str, Num]] = {}
    context_switch_count: Optional[Num] = None


class Runtime(msgspec.Struct, forbid_unknown_fields=True):
    pid: Optional[int] = None
    address: str = ""
    neuron_runtime_tag: Optional[str] = None
    error: str = ""
    report: dict[str, Any] = {}


RUNTIME_GROUPS = {
    "neuroncore_counters": NeuronCoreCounters,
    "memory_used": MemoryUsed,
    "execution_stats": ExecutionStats,
    "neuron_runtime_vcpu_usage": RuntimeVcpu,
}


class MemoryInfo(Group):
    memory_total_bytes: Optional[Num] = None
    memory_used_bytes: Optional[Num] = None
    swap_total_bytes: Optional[Num] = None
    swap_used_bytes: Optional[Num] = None


SYSTEM_GROUPS = {"neuron_hw_counters": HwCounters, "vcpu_usage": VcpuUsage, "memory_info": MemoryInfo}
INFO_KEYS = ("instance_info", "neuron_hardware_info", "neuron_k8s_info")


def problem(exc: msgspec.ValidationError, where: str) -> str:
    """msgspec's message with the path made absolute: 'Expected `float`, got `str` - at
    `neuron_runtime_data[0].report.memory_used.…`'."""
    text = str(exc)
    if " - at `$" in text:
        message, path = text.split(" - at `$", 1)
        return f"{message} - at `{where}{path}"
    return f"{text} - at `{where}`"
