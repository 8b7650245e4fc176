"""Host metrics of a recorded job, sampled by `trnprof record` (psutil) while the command runs,
written as `host_metrics.jsonl` in the capture folder (read back by
`trnprof.collectors.host`).

Line 1 is a header (`{"trnprof_host_metrics": 1, ...}`); each further line is one sample:
`{"ts": epoch ns, "samples": [[rank, name, value, unit], ...]}`. Host-wide series go to the
node's lowest rank; each rank's main process and its data-loader workers (its descendants that
share its RANK) to that rank.

| counter | unit | what |
|---|---|---|
| `host.cpu.<i>.util` | percent | each logical CPU, busy share since the last sample |
| `host.memory.used` | bytes | the host's used memory (psutil `virtual_memory().used`): every process's, context only |
| `host.process.rss` | bytes | resident memory of the rank's main process |
| `host.process.cpu` | percent | CPU of the main process (100 = one core) |
| `host.loader_workers.rss` | bytes | resident memory of its data-loader workers together |
| `host.loader_workers.cpu` | percent | their CPU together |
| `host.loader_workers.count` | count | how many there are |
| `host.disk.read_bytes_per_s`, `host.disk.write_bytes_per_s` | bytes/s | all disks |
| `host.net.recv_bytes_per_s`, `host.net.sent_bytes_per_s` | bytes/s | all interfaces |
"""

from __future__ import annotations

import json
import os
import socket
import threading
import time
from pathlib import Path

import psutil

from trnprof.collectors.host.format import FILE_NAME, HEADER_KEY

TREE_EVERY = 5.0  # seconds between two listings of the command's processes
SEARCH_S = 120.0  # how long the listing is redone at every sample while no process has a RANK:
# torchrun imports torch and meets its peers before it starts the ranks


def _rank_of(process: psutil.Process) -> tuple[int, int] | None:
    """(RANK, LOCAL_WORLD_SIZE) from the process's environment, or None without a RANK."""
    try:
        env = process.environ()
    except (psutil.Error, OSError):
        return None
    rank, local = env.get("RANK", ""), env.get("LOCAL_WORLD_SIZE", "")
    if not rank.isdigit():
        return None
    return int(rank), int(local) if local.isdigit() else 1


def _is_python(process: psutil.Process) -> bool:
    try:
        return os.path.basename(process.cmdline()[0]).startswith("python")
    except (psutil.Error, OSError, IndexError):
        return False


def rank_processes(
    root: psutil.Process, known: dict[int, tuple[int, int]] | None = None
) -> dict[int, tuple[psutil.Process, list[psutil.Process]]]:
    """rank -> (main process, its data-loader workers). Processes carrying torchrun's RANK are
    the ranks' (the topmost of each RANK is its main process); without any RANK, the first
    Python process of the tree is rank 0's main process. `known` caches each pid's
    (RANK, LOCAL_WORLD_SIZE) once found: a process read between fork and exec still shows its
    parent's environment, so a process without a RANK is read again at the next listing."""
    known = {} if known is None else known
    try:
        tree = [root] + root.children(recursive=True)
    except psutil.Error:
        return {}
    for process in tree:
        if process.pid not in known and (found_rank := _rank_of(process)) is not None:
            known[process.pid] = found_rank
    found: dict[int, tuple[psutil.Process, list[psutil.Process]]] = {}
    if any(p.pid in known for p in tree):
        for process in tree:  # parents come before their children
            if process.pid not in known:
                continue
            rank = known[process.pid][0]
            if rank in found:
                found[rank][1].append(process)
            else:
                found[rank] = (process, [])
        return found
    main = next((p for p in tree if _is_python(p)), root)
    inside = {main.pid}
    for process in tree:  # parents come before their children
        try:
            if process.ppid() in inside:
                inside.add(process.pid)
        except psutil.Error:
            continue
    return {0: (main, [p for p in tree if p.pid in inside and p.pid != main.pid])}


class Sampler:
    """Samples every `interval` s on a thread until `stop()`; stops writing at `max_bytes`."""

    def __init__(self, capture: Path, root_pid: int, interval: float, max_bytes: int | None = None):
        self.path = Path(capture) / FILE_NAME
        try:
            self.root = psutil.Process(root_pid)
        except psutil.Error:  # the command already ended: host-wide series only
            self.root = None
        self.interval = interval
        self.max_bytes = max_bytes
        self.samples = 0
        self.full = False
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="trnprof-host-metrics", daemon=True)
        self._cpu: dict[int, psutil.Process] = {}  # pid -> Process, kept so cpu_percent has a previous sample
        self._ranks: dict[int, tuple[int, int]] = {}  # pid -> (RANK, LOCAL_WORLD_SIZE), read once found
        self._tree = None  # rank_processes(), refreshed every TREE_EVERY s
        self._last = None  # (ts, disk counters, net counters)
        self._started = time.monotonic()

    def start(self) -> None:
        header = {HEADER_KEY: 1, "interval_s": self.interval, "host": socket.gethostname(), "cpus": psutil.cpu_count()}
        with self.path.open("w") as out:
            out.write(json.dumps(header) + "\n")
        psutil.cpu_percent(percpu=True)  # the first call only sets the baseline
        self._last = (time.time_ns(), psutil.disk_io_counters(), psutil.net_io_counters())
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        self._thread.join()

    def _run(self) -> None:
        with self.path.open("a") as out:
            while not self._stop.wait(self.interval):
                line = json.dumps({"ts": time.time_ns(), "samples": self.sample()}) + "\n"
                if self.max_bytes is not None and out.tell() + len(line) > self.max_bytes:
                    self.full = True
                    return
                out.write(line)
                out.flush()
                self.samples += 1

    def sample(self) -> list[list]:
        per_rank = self._per_rank()
        first = min(per_rank, default=0)
        rows = [[first, f"host.cpu.{i}.util", v, "percent"] for i, v in enumerate(psutil.cpu_percent(percpu=True))]
        rows.append([first, "host.memory.used", float(psutil.virtual_memory().used), "bytes"])
        rows += self._rates(first)
        for rank, (main, workers) in sorted(per_rank.items()):
            rss, cpu = self._usage([main])
            rows += [[rank, "host.process.rss", rss, "bytes"], [rank, "host.process.cpu", cpu, "percent"]]
            rss, cpu = self._usage(workers)
            rows += [
                [rank, "host.loader_workers.rss", rss, "bytes"],
                [rank, "host.loader_workers.cpu", cpu, "percent"],
                [rank, "host.loader_workers.count", float(len(workers)), "count"],
            ]
        return rows

    def _per_rank(self):
        """The ranks' processes, found again every TREE_EVERY seconds (listing a process tree
        reads every process of the host), when one of them has ended, or at every sample while
        the ranks are still starting: fewer found than the node's LOCAL_WORLD_SIZE (torchrun starts
        them one by one), or none found yet in the job's first SEARCH_S seconds."""
        if self.root is None:
            return {}
        starting = len(self._tree or ()) < self._ranks_expected() or (
            not self._ranks and time.monotonic() - self._started < SEARCH_S
        )
        stale = (
            starting
            or self._tree is None
            or self.samples % max(1, round(TREE_EVERY / self.interval)) == 0
            or not all(p.is_running() for main, workers in self._tree.values() for p in [main, *workers])
        )
        if stale:
            self._tree = rank_processes(self.root, self._ranks)
        return self._tree

    def _ranks_expected(self) -> int:
        return max((local for _, local in self._ranks.values()), default=0)

    def _usage(self, processes: list[psutil.Process]) -> tuple[float, float]:
        rss = cpu = 0.0
        for process in processes:
            known = self._cpu.setdefault(process.pid, process)
            try:
                rss += known.memory_info().rss
                cpu += known.cpu_percent()
            except psutil.Error:
                self._cpu.pop(process.pid, None)
        return rss, cpu

    def _rates(self, rank: int) -> list[list]:
        now, disk, net = time.time_ns(), psutil.disk_io_counters(), psutil.net_io_counters()
        then, disk0, net0 = self._last
        self._last = (now, disk, net)
        seconds = max((now - then) / 1e9, 1e-9)
        rows = []
        if disk is not None and disk0 is not None:
            rows += [
                [rank, "host.disk.read_bytes_per_s", max(disk.read_bytes - disk0.read_bytes, 0) / seconds, "bytes/s"],
                [
                    rank,
                    "host.disk.write_bytes_per_s",
                    max(disk.write_bytes - disk0.write_bytes, 0) / seconds,
                    "bytes/s",
                ],
            ]
        if net is not None and net0 is not None:
            rows += [
                [rank, "host.net.recv_bytes_per_s", max(net.bytes_recv - net0.bytes_recv, 0) / seconds, "bytes/s"],
                [rank, "host.net.sent_bytes_per_s", max(net.bytes_sent - net0.bytes_sent, 0) / seconds, "bytes/s"],
            ]
        return rows
