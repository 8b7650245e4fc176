"""Neuron tool outputs -> canonical tables: neuron-monitor reports (`monitor`), the Profiler 2.0
`system_profile.json` (`system_profile`) and Neuron Explorer Parquet profiles (`explorer`)."""

from .explorer import read_explorer
from .monitor import read_monitor
from .system_profile import read_system_profile

READERS = {
    "neuron-monitor": read_monitor,
    "neuron-system-profile": read_system_profile,
    "neuron-explorer": read_explorer,
}

__all__ = ["READERS", "read_explorer", "read_monitor", "read_system_profile"]
