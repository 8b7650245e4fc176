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

import argparse
import os
import tempfile
import time
from pathlib import Path

from trnprof.api import open_run
from trnprof.collectors.synthetic import synthetic_run
from trnprof.rules_engine import analyze

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
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--ranks", type=int, default=1024)
    parser.add_argument("--steps", type=int, default=10)
    parser.add_argument("--ops", type=int, default=960, help="compute ops per rank and step")
    parser.add_argument("--collectives", type=int, default=16, help="collectives per rank and step")
    parser.add_argument("--keep", type=Path, help="folder to build (or reuse) the run in")
    parser.add_argument("--rounds", type=int, default=2, help="alternating rounds; the fastest of each counts")
    args = parser.parse_args()
    folder = args.keep or Path(tempfile.mkdtemp(prefix="trnprof-bench-rules-"))
    path = folder / f"synthetic-{args.ranks}x{args.steps}x{args.ops}x{args.collectives}"
    if not path.exists():
        start = time.perf_counter()
        synthetic_run(path, ranks=args.ranks, steps=args.steps, ops_per_step=args.ops,
                      collectives_per_step=args.collectives, slow_rank=7)
        print(f"built {path} in {time.perf_counter() - start:.1f} s")
    breakdowns, rule_times = [], []
    for _ in range(args.rounds):  # alternate, so both see the same machine load
        seconds, events = time_breakdown(path)
        breakdowns.append(seconds)
        seconds, document = time_rules(path)
        rule_times.append(seconds)
    breakdown, rules = min(breakdowns), min(rule_times)
    print(f"events                {events:,}")
    print(f"step_breakdown alone  {breakdown:.2f} s")
    print(f"all built-in rules    {rules:.2f} s  ({len(document.rules)} rules, "
          f"{len(document.findings)} findings, {len(document.not_evaluated)} not evaluated, "
          f"{len(document.errors)} errors)")
    print(f"ratio                 {rules / breakdown:.2f}x  (target <= 3x, <= 15 s)")
    slowest = sorted(document.rule_seconds.items(), key=lambda kv: -kv[1])[:3]
    print("slowest rule queries  " + ", ".join(f"{name} {seconds:.3f} s" for name, seconds in slowest))


if __name__ == "__main__":
    main()
