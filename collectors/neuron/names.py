"""Kinds and lanes of Neuron runtime / hardware / framework events, by event name and source
(Profiler 2.0 `system_profile.json` and the Explorer `SystemProfileEvents` table share them).

| event | kind | lane |
|---|---|---|
| `nc_exec_running`, `nc_exec*` (a NEFF executing on the NeuronCore) | compute | nc/exec |
| `cc_*` (collectives on the collective engines) | collective | nc/cc |
| `nrt_tensor_write` / `nrt_tensor_read` (host <-> device copies) | transfer | dma/h2d, dma/d2h |
| `nrt_*` runtime API calls (`nrt_execute`, `nrt_load` ...) | host | host/tid-N |
| framework events (`framework` source or group) | annotation | host/tid-N |
| anything else | annotation | host/tid-N |
"""

from __future__ import annotations


def classify(name: str, source: str | None = None, group: str | None = None) -> tuple[str, str | None]:
    """(kind, fixed lane or None for the thread's host lane)."""
    lowered = (name or "").lower()
    if lowered.startswith("nc_exec"):
        return "compute", "nc/exec"
    if lowered.startswith("cc_"):
        return "collective", "nc/cc"
    if lowered == "nrt_tensor_write":
        return "transfer", "dma/h2d"
    if lowered == "nrt_tensor_read":
        return "transfer", "dma/d2h"
    if (source or "") == "framework" or (group or "").startswith("framework"):
        return "annotation", None
    if lowered.startswith("nrt_") or (source or "") == "neuron_rt":
        return "host", None
    return "annotation", None
