"""Neuron tool outputs -> canonical tables: neuron-monitor reports (`monitor`), the Profiler 2.0
`system_profile.json` (`system_profile`) Neuron Explorer Parquet profiles (`explorer`) and their
deprecated JSON output (`explorer_json`)."""

from .explorer import read_explorer
from .explorer_json import read_explorer_json
from .monitor import read_monitor
from .system_profile import read_system_profile

READERS = {
    "neuron-monitor": read_monitor,
    "neuron-system-profile": read_system_profile,
    "neuron-explorer": read_explorer,
    "neuron-explorer-json": read_explorer_json,
}

__all__ = ["READERS", "read_explorer", "read_explorer_json", "read_monitor", "read_system_profile"]
