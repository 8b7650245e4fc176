"""The built-in ingest formats, in the order their sniffs are tried (the first that claims an
input reads it). Each sniff looks at the probe only (`spec.Probe`: a file's first 64 KiB); a
JSON object no format claims is then read as Kineto, whose reader says what it lacks
(`detect.py`). Adding a format: its reader module, one `Format` line here, a test."""

from __future__ import annotations

from trnprof.collectors.host.format import FORMAT as HOST_FORMAT
from trnprof.collectors.host.format import HEADER_KEY as HOST_HEADER

from .spec import Format, Probe

_NEURON = "trnprof.collectors.neuron"


def _explorer(probe: Probe) -> bool:
    if probe.is_dir:
        from trnprof.collectors.neuron.explorer_tables import table_files

        return bool(table_files(probe.path))
    return probe.head[:4] == b"PAR1"


def _host_metrics(probe: Probe) -> bool:
    return probe.text.startswith(b'{"' + HOST_HEADER.encode())


def _monitor(probe: Probe) -> bool:
    return b'"neuron_runtime_data"' in probe.head


def _kineto(probe: Probe) -> bool:
    return b'"traceEvents"' in probe.head or probe.text[:1] == b"["


def _explorer_json(probe: Probe) -> bool:
    head = probe.head
    return b'"instruction"' in head and b'"summary"' in head and b'"traceEvents"' not in head


def _system_profile(probe: Probe) -> bool:
    return any(key in probe.head for key in (b'"trace_events"', b'"mem_usage"', b'"cpu_util"'))


FORMATS = (
    Format(
        "neuron-explorer",
        _explorer,
        f"{_NEURON}.explorer:read_explorer",
        folder=True,
        doc="a folder of Neuron Explorer Parquet tables (`CcOp.parquet`, ...), or one of its tables",
    ),
    Format(
        HOST_FORMAT,
        _host_metrics,
        "trnprof.collectors.host.metrics:read_host_metrics",
        doc="the host metrics `trnprof record` samples (`host_metrics.jsonl`)",
    ),
    Format(
        "neuron-monitor",
        _monitor,
        f"{_NEURON}.monitor:read_monitor",
        doc="neuron-monitor's JSON reports (`neuron_runtime_data`), one per line",
    ),
    Format(
        "kineto",
        _kineto,
        "trnprof.collectors.kineto:read_trace",
        streamed=True,
        doc="Chrome trace JSON (`traceEvents`, or the bare array), plain or gzip: PyTorch profiler, "
        "torch-neuronx / XLA, `trnprof export`",
    ),
    Format(
        "neuron-explorer-json",
        _explorer_json,
        f"{_NEURON}.explorer_json:read_explorer_json",
        doc='Neuron Explorer\'s deprecated JSON output (`"summary"` and `"instruction"`)',
    ),
    Format(
        "neuron-system-profile",
        _system_profile,
        f"{_NEURON}.system_profile:read_system_profile",
        doc="`system_profile.json` of `neuron-profile view --output-format json` (`trace_events`, "
        "`mem_usage`, `cpu_util`)",
    ),
)
