"""Benchmark: the device views (trnprof/stdlib/device.sql) over simulated device profiles.

Simulates llama2-7b on one trn1 node for 3 steps with `--device-profile` (ranks 0 and 31, the
two steady steps: 673,816 instruction rows at 32 layers) and smaller models of the same job
(fewer layers), so that the growth curve shows; then times each device view cold (a fresh
process, the derived/ cache off: `SELECT *` computes the view and every stored view it reads)
and `analyze --select device` of the run, printing wall and CPU seconds (user + system of the
process, so DuckDB's threads count) and the process's own peak RSS (VmHWM) side by side with
the views as issue 36 first wrote them (tests/device/device_views_before.sql), run in the same
way where they finish within --old-timeout (they join intervals pairwise and recompute what
they read: minutes at the full size).

    python bench/bench_device_views.py [--layers 4,8,16,32] [--old-max-layers 8] [--keep DIR]

Target (docs/performance.md, "Device views"): each view under 10 s at 32 layers, idle machine.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
BEFORE = REPO / "tests" / "device" / "device_views_before.sql"
VIEWS = [
    "device_units",
    "engine_activity",
    "dma_queues",
    "device_spill",
    "throttling",
    "device_collectives",
    "device_utilization",
    "explorer_agreement",
]
JOB = ["--preset", "llama2-7b", "--set", "cluster.nodes=1", "--steps", "3", "--device-profile"]


def _peak_rss_mb() -> float:
    """This process's own peak RSS (VmHWM; ru_maxrss would carry over its parent's)."""
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) / 1024
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def _cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


def before_views(con) -> None:
    """Create the views as issue 36 wrote them, each named old_<name>, in `con`."""
    from trnprof.stdlib import parse_module

    views = parse_module("device", BEFORE.read_text(encoding="utf-8"))
    names = [v.name for v in views]
    for view in views:
        con.execute(re.sub(r"\b(" + "|".join(names) + r")\b", r"old_\1", view.sql))


def measure(path: str, what: str, old: bool) -> dict:
    """In this (fresh) process: compute `what` (a view, or 'analyze') over the run at `path`."""
    os.environ["TRNPROF_CACHE"] = "off"
    from trnprof import api

    wall, cpu = time.perf_counter(), _cpu()
    if what == "analyze":
        found = api.analyze(path, select=["device"]).findings
        rows = len(found)
    else:
        with api.open_run(path) as run:
            if old:
                before_views(run.con)
                rows = len(run.con.execute(f"SELECT * FROM old_{what}").df())
            else:
                rows = len(run.sql(f"SELECT * FROM {what}"))
    return {"rows": rows, "wall_s": time.perf_counter() - wall, "cpu_s": _cpu() - cpu, "peak_mb": _peak_rss_mb()}


def in_child(path: Path, what: str, old: bool, timeout: float) -> dict | None:
    """`measure` in a fresh process; None when it runs past `timeout` seconds."""
    command = [sys.executable, __file__, "--measure", str(path), what] + ["--old"] * old
    try:
        child = subprocess.run(command, check=True, capture_output=True, text=True, timeout=timeout)
    except subprocess.TimeoutExpired:
        return None
    return json.loads(child.stdout)


def simulate(folder: Path, layers: int) -> tuple[Path, int]:
    path = folder / f"llama2-7b-{layers}L"
    if not path.exists():
        subprocess.run(
            [sys.executable, "-m", "trnprof", "simulate", *JOB, "--set", f"model.layers={layers}", "-o", str(path)],
            check=True,
            capture_output=True,
        )
    import duckdb

    rows = duckdb.sql(f"SELECT COUNT(*) FROM '{path}/neuron_explorer/instruction.parquet'").fetchall()[0][0]
    return path, rows


def _cell(result: dict | None, timeout: float) -> str:
    if result is None:
        return f"{'> ' + format(timeout, '.0f') + ' s':>26s}"
    return f"{result['wall_s']:8.2f} {result['cpu_s']:8.2f} {result['peak_mb']:8.0f}"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--layers", default="4,8,16,32", help="model.layers of each profile (32: llama2-7b)")
    parser.add_argument("--old-max-layers", type=int, default=8, help="time the old views up to this size")
    parser.add_argument("--old-timeout", type=float, default=120.0, help="seconds an old view may take")
    parser.add_argument("--keep", type=Path, help="folder for the simulated runs (kept; reused when present)")
    parser.add_argument("--measure", nargs=2, metavar=("RUN", "WHAT"), help=argparse.SUPPRESS)
    parser.add_argument("--old", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.measure:
        print(json.dumps(measure(*args.measure, args.old)))
        return
    folder = args.keep or Path(tempfile.mkdtemp(prefix="bench-device-"))
    folder.mkdir(parents=True, exist_ok=True)
    print(f"load average {os.getloadavg()[0]:.1f}, {os.cpu_count()} cores")
    print(
        f"{'layers':>6s} {'instr.':>8s} {'view':22s} {'new: wall s':>11s} {'CPU s':>8s} {'peak MB':>8s}   "
        f"{'old: wall s':>11s} {'CPU s':>8s} {'peak MB':>8s}  speed-up"
    )
    for layers in (int(n) for n in args.layers.split(",")):
        path, rows = simulate(folder, layers)
        for what in VIEWS + ["analyze"]:
            new = in_child(path, what, False, 3600)
            old = None
            if what != "analyze" and layers <= args.old_max_layers:
                old = in_child(path, what, True, args.old_timeout)
            old_text = _cell(old, args.old_timeout) if what != "analyze" and layers <= args.old_max_layers else ""
            ratio = f"{old['wall_s'] / new['wall_s']:7.1f}x" if old and new else ""
            print(f"{layers:6d} {rows:8,d} {what:22s} {_cell(new, 0):>30s}   {old_text:>28s}  {ratio}", flush=True)
    print(f"load average {os.getloadavg()[0]:.1f} after")


if __name__ == "__main__":
    main()
