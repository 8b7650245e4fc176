"""Benchmark: every built-in rule pack on a 10-million-event, 1,024-rank run, against
materialising `step_breakdown` alone on the same run.

Side by side in one process, each in a fresh session: (1) `step_breakdown` materialised into a
table, (2) `analyze()` with all built-in rules (stdlib views materialised, copied into the
sandbox, every rule run); alternated for --rounds rounds, the fastest of each kept. Prints both
times, their ratio and the slowest rules.

    python bench/bench_rules.py [--ranks 1024] [--steps 10] [--ops 960] [--collectives 16] [--keep DIR]

Targets (docs/performance.md): all packs <= 15 s and <= 3x step_breakdown alone.
"""

from __future__ import annotations

import os
import time
from pathlib import Path

import synthetic_runs

from trnprof.api import open_run
from trnprof.rules_engine.engine import analyze

os.environ["TRNPROF_CACHE"] = "off"  # measure the computation, not the derived/ cache (bench_scale.py does)


def time_breakdown(path: Path) -> tuple[float, int]:
    with open_run(path) as run:
        events = run.con.execute("SELECT COUNT(*) FROM events").fetchone()[0]
        start = time.perf_counter()
        run.con.execute("CREATE TEMP TABLE bd AS SELECT * FROM step_breakdown")
        return time.perf_counter() - start, events


def time_rules(path: Path) -> tuple[float, dict]:
    with open_run(path) as run:
        run.con.execute("SELECT COUNT(*) FROM events").fetchone()  # same warm-up as above
        start = time.perf_counter()
        document = analyze(run)
        return time.perf_counter() - start, document


def main() -> None:
    args = synthetic_runs.parser(__doc__.splitlines()[0]).parse_args()
    path = synthetic_runs.build(synthetic_runs.folder(args, "trnprof-bench-rules-"), "synthetic", args, slow_rank=7)
    breakdowns, rule_times = [], []
    for _ in range(args.rounds):  # alternate, so both see the same machine load
        seconds, events = time_breakdown(path)
        breakdowns.append(seconds)
        seconds, document = time_rules(path)
        rule_times.append(seconds)
    breakdown, rules = min(breakdowns), min(rule_times)
    print(f"events                {events:,}")
    print(f"step_breakdown alone  {breakdown:.2f} s")
    print(
        f"all built-in rules    {rules:.2f} s  ({len(document.rules)} rules, "
        f"{len(document.findings)} findings, {len(document.not_evaluated)} not evaluated, "
        f"{len(document.errors)} errors)"
    )
    print(f"ratio                 {rules / breakdown:.2f}x  (target <= 3x, <= 15 s)")
    slowest = sorted(document.rule_seconds.items(), key=lambda kv: -kv[1])[:3]
    print("slowest rule queries  " + ", ".join(f"{name} {seconds:.3f} s" for name, seconds in slowest))


if __name__ == "__main__":
    main()
