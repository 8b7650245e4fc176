"""`trnprof.heap.trim`: the C heap's free pages back to the system (glibc), a no-op elsewhere."""

from __future__ import annotations

import platform

from trnprof import heap


def _rss_kib() -> int:
    with open("/proc/self/status") as status:
        return next(int(line.split()[1]) for line in status if line.startswith("VmRSS:"))


def test_trim_hands_freed_small_blocks_back_on_glibc():
    if platform.libc_ver()[0] != "glibc":
        assert heap.trim() is False
        return
    blocks = [bytearray(1000) for _ in range(60_000)]  # past pymalloc, below mmap: the C heap
    keep = blocks[-1]
    del blocks  # freed, but kept by the allocator below the last block
    before = _rss_kib()
    assert heap.trim() is True
    assert _rss_kib() < before - 10_000  # >10 MiB of the ~60 MiB freed returned
    assert len(keep) == 1000
