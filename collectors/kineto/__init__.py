"""PyTorch profiler (Kineto) and Chrome trace JSON -> canonical runs, streamed.

Modules, in data-flow order: `stream` (chunked typed decoding), `columns` (chunk -> staged
Arrow rows, exact ns times via `times`), `route` (where each entry goes, quarantine reasons),
`partial` + `classify` (kinds, lanes), `counters`, `collectives`, `steps`, `finish` (what needs
the whole file), `header` (rank, time base), `trace` (one file, end to end).
"""

from .trace import TraceFile, read_trace

__all__ = ["TraceFile", "read_trace"]
