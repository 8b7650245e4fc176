"""The Neuron side of a recording: the runtime's environment for a system profile and
`neuron-monitor` as a sidecar.

- System profile: the Neuron Runtime captures one when `NEURON_RT_INSPECT_ENABLE=1`
  (system profile on by default, `NEURON_RT_INSPECT_SYSTEM_PROFILE=1`), writing to
  `NEURON_RT_INSPECT_OUTPUT_DIR` (Neuron Explorer docs, "Environment Variables"). The launcher
  starts torch.profiler with CPU activities only (no NeuronConfig), so this is the only
  Neuron profiling mechanism in the process, as those docs require.
- neuron-monitor: run as `neuron-monitor -c CONFIG` (one JSON report per line on stdout, per
  the neuron-monitor user guide); each report is stamped with the time it arrived
  (`trnprof_received_ns`, epoch ns), which places its counters on the traces' clock.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import threading
import time
from pathlib import Path

from trnprof.collectors.neuron.monitor import RECEIVED as STAMP
from trnprof.errors import TrnprofError

MONITOR = "neuron-monitor"
INSPECT_FOLDER = "neuron-inspect"
MONITOR_FILE = "neuron_monitor.jsonl"


def neuron_host() -> bool:
    """A Neuron device is present (the driver's /dev/neuron0)."""
    return Path("/dev/neuron0").exists()


def runtime_env(capture: Path) -> dict[str, str]:
    return {"NEURON_RT_INSPECT_ENABLE": "1", "NEURON_RT_INSPECT_SYSTEM_PROFILE": "1",
            "NEURON_RT_INSPECT_OUTPUT_DIR": str(Path(capture).resolve() / INSPECT_FOLDER)}


def monitor_config(period_s: float) -> dict:
    """The metric groups trnprof ingests (collectors/neuron/monitor.py)."""
    runtime = ["neuroncore_counters", "memory_used", "neuron_runtime_vcpu_usage", "execution_stats"]
    system = ["vcpu_usage", "memory_info", "neuron_hw_counters"]
    return {"period": f"{max(1, round(period_s))}s",  # whole seconds, as the guide's examples (1s at least)
            "neuron_runtimes": [{"tag_filter": ".*", "metrics": [{"type": t} for t in runtime]}],
            "system_metrics": [{"type": t} for t in system]}


def stamp(line: str, now_ns: int) -> str:
    """The report with the time it arrived; a line that is not a JSON object is kept as it is
    (the reader quarantines it)."""
    text = line.rstrip()
    if not (text.startswith("{") and text.endswith("}")):
        return text
    inner = text[:-1].rstrip()
    sep = "" if inner == "{" else ", "
    return f'{inner}{sep}"{STAMP}": {now_ns}}}'


class Monitor:
    """neuron-monitor writing stamped reports to the capture folder until `stop()`."""

    def __init__(self, capture: Path, period_s: float, max_bytes: int | None = None):
        self.capture = Path(capture)
        self.path = self.capture / MONITOR_FILE
        self.period_s = period_s
        self.max_bytes = max_bytes
        self.reports = 0
        self.process: subprocess.Popen | None = None
        self._thread: threading.Thread | None = None

    @staticmethod
    def available() -> bool:
        return shutil.which(MONITOR) is not None

    def start(self) -> None:
        config = self.capture / "neuron_monitor.config"  # not a .json: `trnprof ingest CAPTURE` skips it
        config.write_text(json.dumps(monitor_config(self.period_s)))
        try:
            self.process = subprocess.Popen([MONITOR, "-c", str(config)], stdout=subprocess.PIPE,
                                            stderr=subprocess.DEVNULL, stdin=subprocess.DEVNULL, text=True,
                                            process_group=0)  # Ctrl-C reaches trnprof, which stops it last
        except OSError as exc:
            raise TrnprofError(f"cannot start {MONITOR}: {exc.strerror or exc} (pass --neuron off to skip it)") from None
        self._thread = threading.Thread(target=self._copy, name="trnprof-neuron-monitor", daemon=True)
        self._thread.start()

    def _copy(self) -> None:
        written = 0
        with self.path.open("w") as out:
            for line in self.process.stdout:
                if not line.strip():
                    continue
                text = stamp(line, time.time_ns()) + "\n"
                if self.max_bytes is not None and written + len(text) > self.max_bytes:
                    continue  # full: keep draining so the monitor never blocks
                out.write(text)
                out.flush()
                written += len(text)
                self.reports += 1

    def stop(self) -> None:
        if self.process is None:
            return
        if self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(timeout=5)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()
        self._thread.join(timeout=5)
