"""Benchmark: `step_breakdown` over a 10-million-event, 1,024-rank run.

Side by side in one process: the time DuckDB takes to sort the same events by (rank, ts) into a
table — the floor for any interval sweep — then the time to materialise `step_breakdown`.
Prints the ratio, the process's peak RSS, and the wall time of a `trnprof info` process.

    python bench/bench_stdlib.py [--ranks 1024] [--events-per-rank-step 977] [--keep DIR]

Targets (docs/performance.md): breakdown <= 4x sort, <= 10 s, peak RSS < 2 GB; `trnprof info` < 2 s.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from trnprof.api import open_run
from trnprof.collectors.synthetic import synthetic_run

os.environ["TRNPROF_CACHE"] = "off"  # measure the computation, not the derived/ cache (bench_scale.py does)


QUERIES = {
    # the floor: the same events sorted by (rank, ts) into a table, with DuckDB's own memory budget
    "sort": "CREATE TEMP TABLE sorted AS SELECT * FROM events ORDER BY rank, ts",
    "step_breakdown": "CREATE TEMP TABLE bd AS SELECT * FROM step_breakdown",
}


def measure(path: Path, what: str) -> dict:
    """Time one query in a fresh session; this process's peak RSS is that query's."""
    with open_run(path) as run:
        if what == "sort":
            run.con.execute("RESET memory_limit")
        rows = run.con.execute("SELECT COUNT(*) FROM events").fetchone()[0]
        start = time.perf_counter()
        run.con.execute(QUERIES[what])
        seconds = time.perf_counter() - start
    return {
        "events": rows,
        "seconds": seconds,
        "peak_rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
    }


def measure_in_child(path: Path, what: str) -> dict:
    child = subprocess.run(
        [sys.executable, __file__, "--measure-only", str(path), "--what", what],
        check=True,
        capture_output=True,
        text=True,
    )
    return json.loads(child.stdout)


def time_info_process(path: Path) -> float:
    start = time.perf_counter()
    subprocess.run([sys.executable, "-m", "trnprof", "info", str(path)], check=True, capture_output=True)
    return time.perf_counter() - start


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--ranks", type=int, default=1024)
    parser.add_argument("--steps", type=int, default=10)
    parser.add_argument("--events-per-rank-step", type=int, default=977)
    parser.add_argument("--keep", type=Path, help="build (or reuse) the run here instead of a temp dir")
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--measure-only", type=Path, help=argparse.SUPPRESS)
    parser.add_argument("--what", choices=sorted(QUERIES), help=argparse.SUPPRESS)
    args = parser.parse_args()

    if args.measure_only:
        print(json.dumps(measure(args.measure_only, args.what)))
        return

    with tempfile.TemporaryDirectory() as tmp:
        path = args.keep or Path(tmp) / "bench-run"
        if not (path / "trnprof.json").exists():
            start = time.perf_counter()
            synthetic_run(
                path,
                ranks=args.ranks,
                steps=args.steps,
                ops_per_step=args.events_per_rank_step - 7,
                collectives_per_step=4,
            )
            print(f"built run: {time.perf_counter() - start:.1f} s")
        # alternate the two, best of `rounds` each, so machine noise hits both alike
        runs = {"sort": [], "step_breakdown": []}
        for _ in range(args.rounds):
            for what in runs:
                runs[what].append(measure_in_child(path, what))
        info_s = time_info_process(path)
    sort = min(runs["sort"], key=lambda r: r["seconds"])
    breakdown = min(runs["step_breakdown"], key=lambda r: r["seconds"])
    print(f"events                 {sort['events']:,}")
    print(f"sort by (rank, ts)     {sort['seconds']:.2f} s   (peak RSS {sort['peak_rss_mb']:.0f} MB)")
    print(f"step_breakdown         {breakdown['seconds']:.2f} s   (target <= 10 s)")
    print(f"ratio                  {breakdown['seconds'] / sort['seconds']:.2f}x  (target <= 4x)")
    print(f"step_breakdown peak RSS {max(r['peak_rss_mb'] for r in runs['step_breakdown']):.0f} MB (target < 2048 MB)")
    print(f"trnprof info process   {info_s:.2f} s   (target < 2 s)")


if __name__ == "__main__":
    main()
