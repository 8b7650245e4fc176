"""Benchmark: `trnprof ingest` on 250 MB+ and 500 MB+ Kineto traces, against `json.load`.

The traces are built in a temporary folder by repeating the events of the largest real test trace
(tests/data/kineto/negative_queue_length_values_check, 26 MB of JSON) with times shifted by
the trace's span and ProfilerStep numbers renumbered. Side by side in one run, per size: the wall
time of the whole `trnprof ingest FILE -o RUN` process (interpreter start included), the time
`json.load` takes in this process merely to parse the same decompressed file, their ratio, and
the ingest process's peak RSS against the file size.

    python bench/bench_ingest.py [--sizes 250 500] [--keep DIR]

Targets (docs/performance.md): ingest time <= json.load time on 250 MB+; peak RSS <= 2x the JSON size on a
500 MB trace (the peer analyzer HTA needs 6-7x).
"""

from __future__ import annotations

import argparse
import gc
import gzip
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import msgspec

KINETO = Path(__file__).resolve().parents[1] / "tests" / "data" / "kineto"
SOURCE = KINETO / "negative_queue_length_values_check" / "rank0.json.gz"


def build_trace(out: Path, target_mb: int) -> int:
    """Repeat SOURCE's events with shifted times until the file holds `target_mb` MB; bytes written."""
    document = msgspec.json.decode(gzip.open(SOURCE).read())
    events = document.pop("traceEvents")
    times = [e["ts"] for e in events if isinstance(e.get("ts"), (int, float))]
    span = max(times) - min(times) + 1000
    steps = [e for e in events if str(e.get("name", "")).startswith("ProfilerStep#")]
    first_step = {id(e): int(e["name"].split("#")[1]) for e in steps}
    meta = [e for e in events if e.get("ph") == "M"]
    timed = [e for e in events if e.get("ph") != "M"]
    head = msgspec.json.encode(document)[:-1] + b',"traceEvents":['
    written = 0
    with out.open("wb") as handle:
        handle.write(head)
        handle.write(msgspec.json.encode(meta)[1:-1])
        rep = 0
        while written < target_mb * 1_000_000:
            for event in timed:
                if "ts" in event:
                    event["ts"] = event["ts"] + (span if rep else 0)
                if id(event) in first_step:
                    event["name"] = f"ProfilerStep#{first_step[id(event)] + rep * len(steps)}"
            block = msgspec.json.encode(timed)
            handle.write(b"," + block[1:-1])
            written = handle.tell()
            rep += 1
        handle.write(b"]}")
    return out.stat().st_size


def time_json_load(path: Path) -> float:
    gc.collect()
    start = time.perf_counter()
    with path.open("rb") as handle:
        value = json.load(handle)
    seconds = time.perf_counter() - start
    del value
    gc.collect()
    return seconds


def time_ingest_process(path: Path, run: Path) -> tuple[float, float, str]:
    """Wall seconds and peak RSS (MB) of one `trnprof ingest` process, and its summary line.

    Measured from a small launcher process: a child forked straight from this (large, after
    json.load) process would report this process's RSS as its own peak."""
    launcher = subprocess.run(
        [sys.executable, __file__, "--measure-ingest", str(path), str(run)], capture_output=True, text=True
    )
    if launcher.returncode != 0:
        raise SystemExit(f"trnprof ingest failed: {launcher.stderr.strip()}")
    result = json.loads(launcher.stdout)
    return result["seconds"], result["peak_rss_mb"], result["summary"]


def measure_ingest(path: Path, run: Path) -> None:
    shutil.rmtree(run, ignore_errors=True)
    start = time.perf_counter()
    child = subprocess.Popen(
        [sys.executable, "-m", "trnprof", "ingest", str(path), "-o", str(run)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    _, status, usage = os.wait4(child.pid, 0)
    seconds = time.perf_counter() - start
    out, err = child.stdout.read().decode().strip(), child.stderr.read().decode().strip()
    if os.waitstatus_to_exitcode(status) != 0:
        raise SystemExit(err)
    print(json.dumps({"seconds": seconds, "peak_rss_mb": usage.ru_maxrss / 1024, "summary": out}))


def main() -> None:
    if len(sys.argv) == 4 and sys.argv[1] == "--measure-ingest":
        measure_ingest(Path(sys.argv[2]), Path(sys.argv[3]))
        return
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[250, 500], help="trace sizes, MB of JSON")
    parser.add_argument("--keep", type=Path, help="build the traces here and keep them")
    args = parser.parse_args()
    if not SOURCE.is_file():
        raise SystemExit(f"test trace missing: {SOURCE}")
    folder = args.keep or Path(tempfile.mkdtemp(prefix="trnprof-bench-ingest-"))
    folder.mkdir(parents=True, exist_ok=True)
    rows = []
    try:
        traces = []
        for size in args.sizes:
            trace = folder / f"trace_{size}mb.json"
            if not trace.exists():
                build_trace(trace, size)
            traces.append(trace)
        ingests = [time_ingest_process(trace, folder / f"run_{trace.stem}") for trace in traces]
        for trace, (ingest_s, rss_mb, summary) in zip(traces, ingests):
            mb = trace.stat().st_size / 1e6
            load_s = time_json_load(trace)
            rows.append((mb, ingest_s, load_s, rss_mb))
            print(
                f"{mb:7.0f} MB  ingest process {ingest_s:6.2f} s   json.load {load_s:6.2f} s   "
                f"ratio {ingest_s / load_s:4.2f} (target <= 1)   peak RSS {rss_mb:6.0f} MB = "
                f"{rss_mb / mb:4.2f}x the JSON (target <= 2 on 500 MB)\n          {summary}",
                flush=True,
            )
    finally:
        if args.keep is None:
            shutil.rmtree(folder, ignore_errors=True)
    print(
        json.dumps(
            {
                "results": [
                    {
                        "json_mb": round(mb),
                        "ingest_s": round(i, 2),
                        "json_load_s": round(j, 2),
                        "ratio": round(i / j, 2),
                        "peak_rss_mb": round(r),
                        "rss_x_json": round(r / mb, 2),
                    }
                    for mb, i, j, r in rows
                ]
            }
        )
    )


if __name__ == "__main__":
    main()
