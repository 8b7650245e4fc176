"""Benchmark: peak memory of hostile rule queries against the sandbox's per-rule memory limit.

Each query runs in a child process (a fresh interpreter) in a sandbox holding a 1,024-rank
`steps` table (one row per rank); the child reports its peak RSS before the query (interpreter, DuckDB, the
copied table) and after it, and whether the query failed with one line. The figure is the
growth during the query against the limit.

    python bench/bench_sandbox.py [--limit 256MB] [--threads 2]

Target (issue 15): a hostile rule never exceeds its memory limit by more than 50 %.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys

QUERIES = {
    "string_agg (cannot spill)": "SELECT length(string_agg(repeat('x', 200) || r, ',')) AS n "
    "FROM steps, range(20000) t(r)",
    "list aggregate": "SELECT len(list(repeat('y', 100) || r)) AS n FROM steps, range(20000) t(r)",
    "big sort (window)": "SELECT MAX(n) AS n FROM (SELECT row_number() OVER (ORDER BY hash(r, rank)) AS n "
    "FROM steps, range(50000) t(r))",
    "big hash join": "SELECT COUNT(*) AS n FROM (SELECT rank * 1000000 + r AS k, repeat('z', 64) || r AS p "
    "FROM steps, range(3000) t(r)) a JOIN (SELECT rank * 1000000 + r AS k, p FROM steps, "
    "range(3000) t(r), (SELECT repeat('q', 64) AS p)) b USING (k)",
    "distinct strings": "SELECT COUNT(DISTINCT repeat('w', 50) || r || '-' || rank) AS n FROM steps, range(20000) t(r)",
}

CHILD = """
import json, resource, sys, time
import pyarrow as pa
from trnprof.rules_engine.sandbox import Sandbox, SandboxError, parse_size
limit, threads, sql = sys.argv[1], int(sys.argv[2]), sys.argv[3]
steps = pa.table({"rank": list(range(1024)), "step": [0] * 1024, "dur": [1000] * 1024})
box = Sandbox({"steps": steps}, memory_limit=limit, threads=threads)
before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
start = time.perf_counter()
try:
    box.query(sql, timeout=120)
    error = None
except SandboxError as exc:
    error = str(exc)
seconds = time.perf_counter() - start
box.close()
peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
print(json.dumps({"before": before, "peak": peak, "limit": parse_size(limit), "error": error, "seconds": seconds}))
"""


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--limit", default="256MB")
    parser.add_argument("--threads", type=int, default=2)
    args = parser.parse_args()
    print(f"memory limit {args.limit}, {args.threads} thread(s); growth = peak RSS during the query - RSS before it")
    worst = 0.0
    for name, sql in QUERIES.items():
        done = subprocess.run(
            [sys.executable, "-c", CHILD, args.limit, str(args.threads), sql],
            capture_output=True,
            text=True,
            check=True,
        )
        result = json.loads(done.stdout.strip().splitlines()[-1])
        growth = max(0, result["peak"] - result["before"])
        share = growth / result["limit"]
        worst = max(worst, share)
        outcome = "failed: " + result["error"][:70] if result["error"] else "finished"
        print(
            f"{name:<28} growth {growth / 2**20:7.0f} MiB = {share:5.0%} of the limit  "
            f"{result['seconds']:6.1f} s  {outcome}"
        )
    print(f"worst                        {worst:.0%} of the limit (target <= 150 %)")


if __name__ == "__main__":
    main()
