"""Handing the C heap's free memory back to the system between the phases of one command.

glibc's allocator keeps freed memory for the process: after the ingest of `analyze TRACE` (the
trace's Python objects) or the rule sandbox's close, the pages stay in the process's RSS and the
next phase's peak sits on top of them. `trim()` asks glibc to return them (`malloc_trim`): 5-13
MiB off the peak of a small trace's analyze (docs/performance.md). The critical path trims between
a large step's rank ranges: their arrays (~1M rows) live in the heap, and the reads in a second
thread's arena; kept by the process, they raised the 1,024-rank run's peak RSS step by step (2.0 GB
for one step, 2.9 GB over ten). Elsewhere (musl, macOS) a no-op.
"""

from __future__ import annotations

import ctypes
import functools


@functools.cache
def _malloc_trim():
    try:
        return ctypes.CDLL(None).malloc_trim  # the process's own symbols: glibc's, when it is glibc
    except (OSError, AttributeError):
        return None


def trim() -> bool:
    """Return the heap's free memory to the system; False where the C library cannot."""
    function = _malloc_trim()
    return bool(function(0)) if function is not None else False
