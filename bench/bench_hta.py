"""Benchmark: `trnprof ingest` + `trnprof analyze` against Holistic Trace Analysis (HTA) loading
the same Kineto trace and running its temporal, comm/comp overlap, idle time and kernel
breakdowns; plus what every command pays before it starts (`--version`, `--help`).

Side by side in one run, whole processes (interpreter start included), medians of --repeat (HTA
and each `analyze TRACE` taken in turn within each round, so that the machine's drift falls on all):
wall time and peak RSS (`/usr/bin/time -f`) of each tool, and their ratios, each beside its
target (docs/performance.md, "Small traces and fixed costs"); a missed target says "missed".
trnprof is measured both ways: `ingest` then `analyze RUN` (two processes), and `analyze TRACE`
(one process: the trace ingested into a run in the cache folder, then analyzed). Both are cold
for the run (no run, no `derived/` cache); the compiled rule packs are cached as for any user
after their first command (the cache folder is the benchmark's own, TRNPROF_CACHE_DIR).
--baseline TRNPROF measures another install's `trnprof` the same way beside it (before/after), both
ways. --warm also times `analyze TRACE` again over the run the first made (its derived/ cache
warm: stored views and replay prices), each install with its own cache folder, in turn.
The targets: issue 24's (4x HTA's speed, no more memory) for every row but `analyze TRACE`
of issue 39's traces (ISSUE_39: 4.9k at least as fast as HTA, 206k twice as fast, each within
1.5x of HTA's peak memory).

Traces: the real ones in tests/data/kineto (HTA's own test data, MIT licence), and three built
from them by tiling in time (each copy of the timed events shifted by the trace's span,
ProfilerStep numbers renumbered, metadata events once): ~10k entries from trace_filter's
sampled rank 0, 206k (three copies) from the V100 DDP trace (ns_resolution_trace), and at least
1.1M (whole copies: 1,197,836) from negative_queue_length_values_check. Issue 39's small traces
are 4.9k (trace_filter's rank 0 as it is) and 206k.

HTA (PyPI `HolisticTraceAnalysis`) is no dependency of trnprof: it lives in this benchmark's own
virtual environment (--hta-venv, default bench/.venv/hta, created on first use with the base
interpreter's packages visible). When it cannot be installed, the script says so and prints
trnprof's figures alone.

Before measuring, the script writes the bytecode of the trnprof it measures (`compile_bytecode`),
as pip does when it installs a package.

    python bench/bench_hta.py [--sizes 4.9k 206k 10k 41k 109k 456k 1.1M] [--repeat 3] [--hta-venv DIR] [--no-hta]
                              [--baseline PATH/TO/trnprof] [--direct-only] [--warm]
"""

from __future__ import annotations

import argparse
import gzip
import math
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path
from unittest import mock

import msgspec

REPO = Path(__file__).resolve().parents[1]
KINETO = REPO / "tests" / "data" / "kineto"
# label -> (source trace, entries to tile it to, or None for the trace as it is)
TRACES = {
    "4.9k": (
        KINETO / "trace_filter" / "sampled_rank-0.json.gz",
        None,
    ),  # 4,855 entries, one rank of a 128-rank NCCL job
    # the public V100 DDP trace (ns_resolution_trace, 68,692 entries) three times over: 206,004 entries
    "206k": (KINETO / "ns_resolution_trace" / "rank-0.Apr_03_18_51_38.1102.pt.trace.json.gz", 205_000),
    "10k": (KINETO / "trace_filter" / "sampled_rank-0.json.gz", 9_600),
    "41k": (KINETO / "nccl_parser_config" / "nccl_data.json.gz", None),
    "109k": (KINETO / "negative_queue_length_values_check" / "rank0.json.gz", None),
    "456k": (KINETO / "mtia_trace_single_rank" / "mtia_rank_0.json.gz", None),  # 2.9 MB gzipped
    "1.1M": (KINETO / "negative_queue_length_values_check" / "rank0.json.gz", 1_100_000),
}
SMALL = "456k"  # the small trace of the issue (2.9 MB gzipped): its analyze-after-ingest target

TARGET_STARTUP_S = 0.15
TARGET_ANALYZE_S = 1.0
TARGET_SPEEDUP = 4.0
# issue 39: `analyze TRACE` against HTA on its small traces: (speed >= x HTA's, peak memory <= x HTA's)
ISSUE_39 = {"4.9k": (1.0, 1.5), "206k": (2.0, 1.5)}

# HTA's part: load the folder's trace, then the four analyses (no plots)
HTA_JOB = """
import sys
from hta.trace_analysis import TraceAnalysis
analyzer = TraceAnalysis(trace_dir=sys.argv[1])
analyzer.get_temporal_breakdown(visualize=False)
analyzer.get_comm_comp_overlap(visualize=False)
analyzer.get_idle_time_breakdown(visualize=False)
analyzer.get_gpu_kernel_breakdown(visualize=False)
"""


def entries(path: Path) -> int:
    opener = gzip.open if path.suffix == ".gz" else open
    with opener(path, "rb") as handle:
        return len(msgspec.json.decode(handle.read())["traceEvents"])


def tile(source: Path, out: Path, target: int) -> None:
    """`source`'s timed events repeated, shifted by its span, until the trace holds `target` entries."""
    document = msgspec.json.decode(gzip.open(source).read())
    events = document.pop("traceEvents")
    meta = [e for e in events if e.get("ph") == "M"]
    timed = [e for e in events if e.get("ph") != "M"]
    timed_at = [e for e in timed if isinstance(e.get("ts"), (int, float))]
    span = max(e["ts"] + (e.get("dur") or 0) for e in timed_at) - min(e["ts"] for e in timed_at) + 1000
    steps = {id(e): int(e["name"].split("#")[1]) for e in timed if str(e.get("name", "")).startswith("ProfilerStep#")}
    copies = math.ceil((target - len(meta)) / len(timed))
    with out.open("wb") as handle:
        handle.write(msgspec.json.encode(document)[:-1] + b',"traceEvents":[')
        handle.write(msgspec.json.encode(meta)[1:-1])
        comma = b"," if meta else b""
        for rep in range(copies):
            block = [dict(event) for event in timed]
            for original, event in zip(timed, block):
                if isinstance(event.get("ts"), (int, float)):
                    event["ts"] += rep * span
                if id(original) in steps:
                    event["name"] = f"ProfilerStep#{steps[id(original)] + rep * len(steps)}"
            handle.write(comma + msgspec.json.encode(block)[1:-1])
            comma = b","
        handle.write(b"]}")


def prepare(label: str, work: Path) -> Path:
    """The trace of `label`, alone in its folder (HTA reads a folder of per-rank files)."""
    source, target = TRACES[label]
    folder = work / label
    folder.mkdir(parents=True, exist_ok=True)
    if target is None:
        trace = folder / source.name
        shutil.copyfile(source, trace)
    else:
        trace = folder / f"tiled_rank0_{label}.json"
        tile(source, trace, target)
    return trace


def timed_run(command: list[str]) -> tuple[float, float, float]:
    """Wall seconds, peak RSS (MiB) and CPU seconds (user + system) of one whole process; its
    output is discarded. CPU time grows far less than wall time when other jobs share the cores."""
    with tempfile.NamedTemporaryFile("r") as stats:
        done = subprocess.run(
            ["/usr/bin/time", "-o", stats.name, "-f", "%e %M %U %S", *command],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            text=True,
        )
        if done.returncode not in (0, 1):  # analyze exits 1 only under --fail-on
            sys.exit(f"{' '.join(command)} failed:\n{done.stderr[-2000:]}")
        wall, rss_kb, user, system = stats.read().split()[-4:]
    return float(wall), int(rss_kb) / 1024, float(user) + float(system)


def median_of(repeat: int, measure) -> tuple[float, ...]:
    results = [measure() for _ in range(repeat)]
    return tuple(statistics.median(column) for column in zip(*results))


def interleaved(repeat: int, measures: dict) -> dict:
    """Each measure's medians over `repeat` rounds, the measures taken in turn within a round: a
    drift of the machine's pace (this one's moves HTA's time by a third within minutes) falls on
    all of them alike."""
    results = {name: [] for name in measures}
    for _ in range(repeat):
        for name, measure in measures.items():
            results[name].append(measure())
    return {name: tuple(statistics.median(column) for column in zip(*rows)) for name, rows in results.items()}


def compile_bytecode() -> None:
    """Write the bytecode of the trnprof this interpreter imports, as `pip install` does: a
    source tree imported with PYTHONDONTWRITEBYTECODE set (or a read-only one) compiles every
    module in every process instead, about 0.1 s of CPU per process that no installed trnprof
    pays. HTA's venv has its bytecode from pip. A --baseline install's is its own."""
    import compileall
    import importlib

    for package in ("trnprof", "trnprof.collectors", "trnprof.rules"):
        compileall.compile_dir(os.path.dirname(importlib.import_module(package).__file__), quiet=1)


def trnprof_command() -> list[str]:
    script = Path(sys.executable).parent / "trnprof"
    return [str(script)] if script.exists() else [sys.executable, "-m", "trnprof"]


def hta_python(venv: Path) -> Path | None:
    """The HTA venv's interpreter, creating the venv and installing HTA on first use; None if it cannot."""
    python = venv / "bin" / "python"
    check = [str(python), "-c", "import hta.trace_analysis"]
    if python.exists() and subprocess.run(check, capture_output=True).returncode == 0:
        return python
    print(f"installing HolisticTraceAnalysis into {venv} ...", flush=True)
    steps = [
        [sys.executable, "-m", "venv", "--system-site-packages", str(venv)],
        [str(python), "-m", "pip", "install", "-q", "HolisticTraceAnalysis", "psutil"],
    ]  # HTA imports psutil undeclared
    for step in steps:
        done = subprocess.run(step, capture_output=True, text=True)
        if done.returncode != 0:
            print(f"HTA could not be installed ({' '.join(step[-2:])}): {done.stderr.strip()[-300:]}")
            return None
    return python if subprocess.run(check, capture_output=True).returncode == 0 else None


def hta_version(python: Path) -> str:
    return subprocess.run(
        [str(python), "-c", "import importlib.metadata as m; print(m.version('HolisticTraceAnalysis'))"],
        capture_output=True,
        text=True,
    ).stdout.strip()


def verdict(ok: bool) -> str:
    return "ok" if ok else "MISSED"


def load() -> str:
    return "load %.1f" % os.getloadavg()[0]


def startup(repeat: int) -> None:
    trnprof = trnprof_command()
    print(f"\nfixed costs (median of {repeat}, whole processes)")
    base, _, base_cpu = median_of(repeat, lambda: timed_run([sys.executable, "-c", "pass"]))
    print(f"  python -c pass        {base:6.2f} s  CPU {base_cpu:4.2f} s   (the interpreter alone)   {load()}")
    for args in (["--version"], ["--help"]):
        wall, rss, cpu = median_of(repeat, lambda: timed_run([*trnprof, *args]))
        print(
            f"  trnprof {args[0]:<13} {wall:6.2f} s  CPU {cpu:4.2f} s   target <= {TARGET_STARTUP_S} s: "
            f"{verdict(wall <= TARGET_STARTUP_S)}   {rss:.0f} MiB   {load()}"
        )


def measure_trnprof(trnprof: list[str], trace: Path, run: Path) -> tuple[float, ...]:
    """Cold: ingest replaces the run (and its derived/ cache), then analyze."""
    ingest_s, ingest_mb, ingest_cpu = timed_run([*trnprof, "ingest", str(trace), "-o", str(run), "--force"])
    analyze_s, analyze_mb, analyze_cpu = timed_run(
        [*trnprof, "analyze", str(run), "--format", "json", "-o", str(run.parent / "findings.json"), "--force"]
    )
    return ingest_s, analyze_s, ingest_s + analyze_s, max(ingest_mb, analyze_mb), ingest_cpu + analyze_cpu


def measure_direct(trnprof: list[str], trace: Path, cache: Path, warm: bool = False) -> tuple[float, float, float]:
    """`analyze TRACE`, cold: the cache's runs (which the benchmark made) removed first; with
    `warm`, the run and its derived/ cache kept from the command before (in `cache`, this
    install's own folder)."""
    if not warm:
        shutil.rmtree(cache / "runs", ignore_errors=True)
    command = [*trnprof, "analyze", str(trace), "--format", "json", "-o", str(cache.parent / "findings-direct.json")]
    with mock.patch.dict(os.environ, TRNPROF_CACHE_DIR=str(cache)):
        return timed_run([*command, "--force"])


def compare_warm(labels: list[str], repeat: int, work: Path, baseline: list[str] | None) -> None:
    """`analyze TRACE` again over the run the first made (its derived/ cache warm), each install
    with its own cache folder, in turn."""
    print(f"\nwarm `analyze TRACE` (median of {repeat}, whole processes, each install's own cache, in turn)")
    ways = ([("baseline", baseline)] if baseline else []) + [("trnprof", trnprof_command())]
    for label in labels:
        trace = prepare(label, work / "traces")
        measures = {}
        for name, command in ways:
            cache = work / f"cache-warm-{name}"
            shutil.rmtree(cache, ignore_errors=True)
            measure_direct(command, trace, cache)  # the run and its derived/ cache made once
            measures[name] = lambda command=command, cache=cache: measure_direct(command, trace, cache, warm=True)
        medians = interleaved(repeat, measures)
        for name, _ in ways:
            wall, rss, cpu = medians[name]
            print(f"  {label}: {name:<9} {wall:6.2f} s {rss:6.0f} MiB  CPU {cpu:5.2f} s   {load()}", flush=True)


def hta_run(python: Path, trace: Path) -> tuple[float, float, float]:
    return timed_run([str(python), "-c", HTA_JOB, str(trace.parent)])


def row(
    name: str, wall: float, rss: float, cpu: float, hta, targets: tuple[float, float] = (TARGET_SPEEDUP, 1.0)
) -> str:
    text = f"    {name:<24} {wall:7.2f} s {rss:6.0f} MiB  CPU {cpu:6.2f} s"
    if hta:
        (speed_target, memory_target), speedup, memory = targets, hta[0] / wall, rss / hta[1]
        text += (
            f" | vs HTA: {speedup:5.2f}x speed (>= {speed_target:g}x {verdict(speedup >= speed_target)}), "
            f"{memory:4.2f}x memory (<= {memory_target:g}x {verdict(memory <= memory_target)}), "
            f"CPU {hta[2] / cpu:4.2f}x"
        )
    return text


def compare(
    labels: list[str],
    repeat: int,
    python: Path | None,
    work: Path,
    baseline: list[str] | None,
    direct_only: bool = False,
) -> None:
    print(
        f"\ntraces (median of {repeat}, whole processes; HTA and each `analyze TRACE` in turn in a round): "
        "trnprof vs " + (f"HTA {hta_version(python)} load + 4 analyses" if python else "nothing (no HTA)")
    )
    cache = work / "cache"
    os.environ["TRNPROF_CACHE_DIR"] = str(cache)
    for label in labels:
        trace = prepare(label, work / "traces")
        print(f"  {label}: {trace.name}, {entries(trace):,} entries, {trace.stat().st_size / 2**20:.1f} MiB   {load()}")
        ways = ([("baseline", baseline)] if baseline else []) + [("trnprof", trnprof_command())]
        measures = {"HTA": lambda: hta_run(python, trace)} if python else {}
        for name, command in ways:
            measures[name] = lambda command=command: measure_direct(command, trace, cache)
        medians = interleaved(repeat, measures)
        hta = medians.get("HTA")
        if hta:
            print(f"    {'HTA':<24} {hta[0]:7.2f} s {hta[1]:6.0f} MiB  CPU {hta[2]:6.2f} s")
        for name, command in [] if direct_only else ways:
            ingest_s, analyze_s, total_s, rss, cpu = median_of(
                repeat, lambda: measure_trnprof(command, trace, work / "runs" / name / label)
            )
            print(
                row(f"{name} ingest + analyze", total_s, rss, cpu, hta)
                + f"   (ingest {ingest_s:.2f} s, analyze {analyze_s:.2f} s)"
            )
            if label == SMALL:
                print(
                    f"    {name} analyze after ingest: {analyze_s:.2f} s, target <= {TARGET_ANALYZE_S} s: "
                    f"{verdict(analyze_s <= TARGET_ANALYZE_S)}"
                )
        for name, _ in ways:
            wall, rss, cpu = medians[name]
            print(
                row(f"{name} analyze TRACE", wall, rss, cpu, hta, ISSUE_39.get(label, (TARGET_SPEEDUP, 1.0)))
                + f"   {load()}",
                flush=True,
            )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", nargs="+", choices=list(TRACES), default=list(TRACES))
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--hta-venv", type=Path, default=REPO / "bench" / ".venv" / "hta")
    parser.add_argument("--no-hta", action="store_true", help="trnprof's figures only")
    parser.add_argument("--keep", type=Path, help="keep the traces and runs in this folder")
    parser.add_argument("--baseline", type=Path, help="another install's trnprof script, measured beside")
    parser.add_argument("--direct-only", action="store_true", help="only `analyze TRACE`, not ingest + analyze")
    parser.add_argument("--warm", action="store_true", help="also `analyze TRACE` again over its cached run")
    args = parser.parse_args()
    print(f"machine: {os.cpu_count()} CPUs, {load()} at start")
    compile_bytecode()
    startup(max(args.repeat, 5))
    python = None if args.no_hta else hta_python(args.hta_venv)
    work = args.keep or Path(tempfile.mkdtemp(prefix="trnprof-bench-hta-"))
    try:
        baseline = [str(args.baseline)] if args.baseline else None
        compare(args.sizes, args.repeat, python, work, baseline, args.direct_only)
        if args.warm:
            compare_warm(args.sizes, args.repeat, work, baseline)
    finally:
        if args.keep is None:
            shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
