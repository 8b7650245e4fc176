"""Running a command under capture: the child with the launcher on its PYTHONPATH, the host
metrics sampler and the Neuron sidecar beside it, Ctrl-C and SIGTERM forwarded once to the
child's process group, and the list of what was captured.

The child runs in its own process group, so a signal meant for the job reaches it once,
through trnprof (a terminal's Ctrl-C, or SIGINT / SIGTERM sent to trnprof or to trnprof's
process group), and trnprof stays alive to ingest what was captured.
"""

from __future__ import annotations

import os
import re
import signal
import subprocess
from dataclasses import dataclass, field
from pathlib import Path

from ..errors import TrnprofError
from . import neuron
from .hostmetrics import FILE_NAME as HOST_FILE
from .hostmetrics import Sampler
from .preflight import check_explorer
from .runtime import ENV, Settings, folder_bytes

BOOT = Path(__file__).resolve().parent / "boot"
FORWARDED = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)


@dataclass
class Capture:
    folder: Path
    returncode: int  # the child's, as a shell reports it (128 + N when killed by signal N)
    stopped_by: str | None = None  # the signal trnprof forwarded, if any
    host_samples: int = 0
    monitor_reports: int = 0
    traces: list[Path] = field(default_factory=list)  # one per rank that wrote its window
    inputs: list[Path] = field(default_factory=list)  # what the ingest reads: traces, job logs, host
    # metrics, neuron-monitor
    bytes: int = 0  # size of the capture folder
    apart: list[Path] = field(default_factory=list)  # a second process's files of an already-seen
    # RANK, not ingested
    steps_seen: int = 0  # steps the job logs counted, all ranks together
    lingering: bool = False  # processes of the command still ran after it ended
    dropped: list[Path] = field(default_factory=list)  # inputs that could not be read (cut short), left out
    unfinished: list[Path] = field(default_factory=list)  # traces whose writer was killed before it finished
    device_profiles: list[Path] = field(default_factory=list)  # Neuron Explorer's Parquet folders
    refused: dict[Path, str] = field(default_factory=dict)  # inputs the ingest refused: its error line


_PER_RANK = re.compile(r"(trace|job)_rank(\d+)(\.pid\d+)?\.(json\.gz|jsonl)$")


def _found(folder: Path) -> tuple[list[Path], list[Path], list[Path]]:
    """(traces, inputs, apart). Each rank's first trace and job log are ingested; those of a
    second process with the same RANK (named `.pid<PID>`) are kept apart. A trace file that is
    empty (its process was killed while it wrote) is left out."""
    chosen: dict[tuple[str, int], Path] = {}
    apart = []
    for path in sorted(folder.iterdir(), key=lambda p: (len(p.name), p.name)):  # unsuffixed names first
        match = _PER_RANK.match(path.name)
        if match is None or not path.is_file() or path.stat().st_size == 0:
            continue
        key = (match[1], int(match[2]))
        if key in chosen:
            apart.append(path)
        else:
            chosen[key] = path
    traces = sorted(p for (kind, _), p in chosen.items() if kind == "trace")
    logs = sorted(p for (kind, _), p in chosen.items() if kind == "job")
    extra = [folder / HOST_FILE, folder / neuron.MONITOR_FILE]
    return traces, traces + logs + [p for p in extra if p.is_file() and p.stat().st_size > 0], sorted(apart)


def _steps_seen(inputs: list[Path]) -> int:
    """Steps counted by the job logs (their last `job.step` per rank, summed)."""
    import json

    total = 0
    for path in inputs:
        if not path.name.startswith("job_rank"):
            continue
        last = 0
        for line in path.read_text().splitlines()[1:]:
            try:
                last = max([last] + [int(v) for _, name, v, _ in json.loads(line)["samples"] if name == "job.step"])
            except (ValueError, KeyError, TypeError):
                continue
        total += last
    return total


def _lingering(group: int) -> bool:
    try:
        os.killpg(group, 0)
    except (ProcessLookupError, PermissionError):
        return False
    return True


def child_env(settings: Settings, with_neuron: bool, device_profile: bool = False) -> dict[str, str]:
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(p for p in (str(BOOT), env.get("PYTHONPATH")) if p)
    env[ENV] = settings.to_env()
    if with_neuron:
        env.update(neuron.runtime_env(Path(settings.capture), device_profile))
    return env


def _explorer(with_neuron: bool, note) -> bool:
    """Whether Neuron Explorer takes the device profile (checked before the job: a broken
    install is one error line then, not a surprise after it)."""
    if not with_neuron:
        return False
    version = check_explorer()
    if version is None:
        note(
            f"{neuron.EXPLORER} is not on PATH: no device profile (it comes with aws-neuronx-tools); "
            "the runtime's system profile is still captured"
        )
        return False
    note(f"Neuron Explorer ({version}): device profile on, processed into Parquet after the command")
    return True


def _start(command: list[str], env: dict) -> subprocess.Popen:
    try:
        return subprocess.Popen(command, env=env, process_group=0)
    except FileNotFoundError:
        raise TrnprofError(f"command not found: {command[0]}") from None
    except PermissionError:
        raise TrnprofError(f"command not executable: {command[0]}") from None


class _Forwarder:
    """Forwards SIGINT / SIGTERM / SIGHUP to the child's process group while it runs (a signal
    that arrives before the child exists is sent to it as soon as it does)."""

    def __init__(self):
        self.child: subprocess.Popen | None = None
        self.received: int | None = None
        self.previous = {}

    def __enter__(self):
        for sig in FORWARDED:
            self.previous[sig] = signal.signal(sig, self._forward)
        return self

    def attach(self, child: subprocess.Popen) -> None:
        self.child = child
        if self.received:
            self._send(self.received)

    def _forward(self, signum, frame):
        self.received = self.received or signum
        if self.child is not None:
            self._send(signum)

    def _send(self, signum: int) -> None:
        try:
            os.killpg(self.child.pid, signum)
        except ProcessLookupError:
            pass

    def __exit__(self, *exc):
        for sig, handler in self.previous.items():
            signal.signal(sig, handler)


def run_captured(
    command: list[str],
    settings: Settings,
    *,
    neuron_mode: str = "auto",
    interval: float = 0.5,
    max_bytes: int | None = None,
    note=lambda text: None,
) -> Capture:
    """Run `command` to its end, capturing into `settings.capture`; `note` hears one line per
    part that is on or missing."""
    folder = Path(settings.capture)
    with_neuron = neuron.wants_runtime(neuron_mode)
    if with_neuron:
        note(f"Neuron runtime system profile: on (inspect output in {folder / neuron.INSPECT_FOLDER})")
    elif neuron_mode == "auto":
        note("no Neuron device (/dev/neuron0): no Neuron runtime system profile")
    explorer = _explorer(with_neuron, note)
    monitor = (
        neuron.Monitor(folder, interval, max_bytes) if neuron_mode != "off" and neuron.Monitor.available() else None
    )
    if monitor is not None:
        note("neuron-monitor: running beside the command")
    elif neuron_mode != "off":
        note("neuron-monitor is not on PATH: no Neuron counters")
    env = child_env(settings, with_neuron, explorer)
    if monitor is not None:
        monitor.start()  # before the job: its first report covers the job's start
    with _Forwarder() as forwarder:
        try:
            child = _start(command, env)
        except BaseException:
            if monitor is not None:
                monitor.stop()
            raise
        forwarder.attach(child)
        sampler = Sampler(folder, child.pid, interval, max_bytes)
        sampler.start()
        try:
            code = child.wait()
        finally:
            sampler.stop()
            if monitor is not None:
                monitor.stop()
    stopped = signal.Signals(forwarder.received).name if forwarder.received else None
    if sampler.full:
        note("host metrics stopped at the size cap")
    profiles = []
    if explorer:
        profiles, line = neuron.process_device_profile(folder)
        note(line)
    traces, inputs, apart = _found(folder)
    if not sampler.samples:  # a header alone: nothing to ingest
        inputs = [p for p in inputs if p.name != HOST_FILE]
    inputs += profiles
    return Capture(
        folder=folder,
        returncode=128 - code if code < 0 else code,
        stopped_by=stopped,
        host_samples=sampler.samples,
        monitor_reports=monitor.reports if monitor else 0,
        traces=traces,
        inputs=inputs,
        bytes=folder_bytes(folder),
        apart=apart,
        steps_seen=_steps_seen(inputs),
        lingering=_lingering(child.pid),
        unfinished=sorted(folder.glob(".trace_rank*.partial.json.gz")),
        device_profiles=profiles,
    )
