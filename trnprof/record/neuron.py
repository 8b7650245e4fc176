"""The Neuron side of a recording: the runtime's environment for a system profile and
`neuron-monitor` as a sidecar.

- System profile: the Neuron Runtime captures one when `NEURON_RT_INSPECT_ENABLE=1`
  (system profile on by default, `NEURON_RT_INSPECT_SYSTEM_PROFILE=1`), writing to
  `NEURON_RT_INSPECT_OUTPUT_DIR` (Neuron Explorer docs, "Environment Variables"). The launcher
  starts torch.profiler with CPU activities only (no NeuronConfig), so this is the only
  Neuron profiling mechanism in the process, as those docs require.
- Device profile through Neuron Explorer (`neuron-explorer`, aws-neuronx-tools): when it is on
  PATH the runtime also captures the device profile (`NEURON_RT_INSPECT_DEVICE_PROFILE=1`, the
  no-code-change capture of "Capture profiles with Neuron Explorer", section "Capturing a profile
  from CLI"), and after the job `neuron-explorer view -d <inspect> --ingest-only
  --output-format parquet --output-file <capture>/neuron-explorer` processes it into the Parquet
  tables the Explorer reader ingests (flags: "Get started with Neuron Explorer", step 5, and
  "Analyze Profile Output": Parquet is the default output format, `--output-file` names the
  folder). `neuron-explorer capture -n NEFF -s NTFF` (the migration guide's command) profiles one
  compiled NEFF on its own, not a training job, so `record` does not use it.
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
from functools import lru_cache
from pathlib import Path

from trnprof.collectors.neuron.monitor import RECEIVED as STAMP
from trnprof.errors import TrnprofError

MONITOR = "neuron-monitor"
EXPLORER = "neuron-explorer"
EXPLORER_FOLDER = "neuron-explorer"  # its Parquet output, in the capture
EXPLORER_LOG = "neuron_explorer.log"  # its stdout and stderr (not a .json: ingest skips it)
EXPLORER_TIMEOUT_S = 1800  # processing a large profile takes minutes; never forever
VERSION_TIMEOUT_S = 30
INSPECT_FOLDER = "neuron-inspect"
MONITOR_FILE = "neuron_monitor.jsonl"


def neuron_host() -> bool:
    """A Neuron device is present (the driver's /dev/neuron0)."""
    return Path("/dev/neuron0").exists()


def runtime_env(capture: Path, device_profile: bool = False) -> dict[str, str]:
    env = {
        "NEURON_RT_INSPECT_ENABLE": "1",
        "NEURON_RT_INSPECT_SYSTEM_PROFILE": "1",
        "NEURON_RT_INSPECT_OUTPUT_DIR": str(Path(capture).resolve() / INSPECT_FOLDER),
    }
    if device_profile:  # mode 1 (`model`): the first execution of each NEFF per core
        env["NEURON_RT_INSPECT_DEVICE_PROFILE"] = "1"
    return env


def _last_line(text: str) -> str:
    lines = [line.strip() for line in text.splitlines() if line.strip()]
    return lines[-1][:300] if lines else "no output"


def wants_runtime(neuron_mode: str) -> bool:
    """Whether the Neuron runtime's profile is asked for: `on`, or `auto` on a Neuron host."""
    return neuron_mode == "on" or (neuron_mode == "auto" and neuron_host())


@lru_cache(maxsize=1)
def explorer_version() -> str | None:
    """`neuron-explorer --version` (Get started, step 1), checked before the job (once per
    process: the preflight asks, the capture reuses the answer): None when it is not on PATH;
    one TrnprofError line when it is there and does not work."""
    path = shutil.which(EXPLORER)
    if path is None:
        return None
    try:
        done = subprocess.run(
            [path, "--version"],
            capture_output=True,
            text=True,
            errors="replace",
            stdin=subprocess.DEVNULL,
            timeout=VERSION_TIMEOUT_S,
        )
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise TrnprofError(f"{EXPLORER} --version did not answer ({exc})") from None
    if done.returncode != 0:
        raise TrnprofError(
            f"{EXPLORER} --version failed (exit {done.returncode}): {_last_line(done.stderr + done.stdout)}"
        )
    return _last_line(done.stdout or done.stderr)


def explorer_folders(out: Path) -> list[Path]:
    """The folders of Explorer Parquet tables under `out`: `out` itself, or each profile folder
    below it (the docs name the folder, not its layout, so both are looked for)."""
    from trnprof.collectors.ingest.detect import is_explorer_folder

    if is_explorer_folder(out):
        return [out]
    if not out.is_dir():
        return []
    return sorted(p for p in out.rglob("*") if p.is_dir() and is_explorer_folder(p))


def process_device_profile(capture: Path, timeout_s: float = EXPLORER_TIMEOUT_S) -> tuple[list[Path], str]:
    """Run Neuron Explorer over the runtime's inspect output; (its Parquet folders, empty when
    none, and the one line saying what happened). Its output is logged to `neuron_explorer.log`."""
    inspect, out = Path(capture) / INSPECT_FOLDER, Path(capture) / EXPLORER_FOLDER
    if not inspect.is_dir() or not any(inspect.iterdir()):
        return [], f"the Neuron runtime wrote no profile in {inspect}: nothing for {EXPLORER} to process"
    command = [
        EXPLORER,
        "view",
        "-d",
        str(inspect),
        "--ingest-only",
        "--output-format",
        "parquet",
        "--output-file",
        str(out),
    ]
    retry = f"the raw profile is kept in {inspect} (`{' '.join(command)}` processes it again)"
    log = Path(capture) / EXPLORER_LOG
    try:
        with log.open("w") as handle:
            done = subprocess.run(
                command, stdout=handle, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, timeout=timeout_s
            )
    except subprocess.TimeoutExpired:
        return [], f"{EXPLORER} did not finish within {timeout_s:g} s: no device profile in the run; {retry}"
    except OSError as exc:
        return [], f"cannot start {EXPLORER}: {exc.strerror or exc}; {retry}"
    if done.returncode != 0:
        text = log.read_text(errors="replace")
        return [], (
            f"{EXPLORER} failed (exit {done.returncode}: {_last_line(text)}): no device profile in the run; {retry}"
        )
    folders = explorer_folders(out)
    if not folders:
        return [], f"{EXPLORER} wrote no Parquet profile in {out}: no device profile in the run; {retry}"
    return folders, f"{EXPLORER}: device profile processed into {out}"


def monitor_config(period_s: float) -> dict:
    """The metric groups trnprof ingests (collectors/neuron/monitor.py)."""
    runtime = ["neuroncore_counters", "memory_used", "neuron_runtime_vcpu_usage", "execution_stats"]
    system = ["vcpu_usage", "memory_info", "neuron_hw_counters"]
    return {
        "period": f"{max(1, round(period_s))}s",  # whole seconds, as the guide's examples (1s at least)
        "neuron_runtimes": [{"tag_filter": ".*", "metrics": [{"type": t} for t in runtime]}],
        "system_metrics": [{"type": t} for t in system],
    }


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
            self.process = subprocess.Popen(
                [MONITOR, "-c", str(config)],
                stdout=subprocess.PIPE,
                stderr=subprocess.DEVNULL,
                stdin=subprocess.DEVNULL,
                text=True,
                process_group=0,
            )  # Ctrl-C reaches trnprof, which stops it last
        except OSError as exc:
            raise TrnprofError(
                f"cannot start {MONITOR}: {exc.strerror or exc} (pass --neuron off to skip it)"
            ) from None
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
