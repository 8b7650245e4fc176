"""Whether a process still runs: the one probe of a PID, shared by the run store (the leftover
folders of writers that died) and the derived cache (the staging folders of processes that died)."""

from __future__ import annotations


def start_time(pid: int) -> float | None:
    """When process `pid` started (seconds since the epoch): None when there is no such process,
    -1.0 when there is one that cannot be inspected (another user's: taken as running). Comparing
    it with a recorded start tells a recycled PID from the process that recorded it."""
    import psutil  # loads only when a folder's owner is judged or recorded

    try:
        return psutil.Process(pid).create_time()
    except psutil.NoSuchProcess:
        return None
    except psutil.Error:
        return -1.0


def alive(pid: int) -> bool:
    """Whether a process with this PID runs (any process: the PID may have been recycled)."""
    return start_time(pid) is not None
