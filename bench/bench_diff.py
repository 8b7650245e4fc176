"""Benchmark: `trnprof diff` of two 10-million-event, 1,024-rank runs, against `analyze` of one.

Side by side in one process, each in fresh sessions: (1) `analyze()` with all built-in rules
on the base run, (2) `diff()` of base and new (analyze on both runs, read at the same time in two
sessions, plus the diff views and the comparison); alternated for --rounds rounds, the fastest of each kept. Prints both times and
their ratio, and the time diff spends beyond the two analyses.

    python bench/bench_diff.py [--ranks 1024] [--steps 10] [--ops 960] [--collectives 16] [--keep DIR]

Target (issue 11): diff <= 2x analyze of one run.
"""

from __future__ import annotations

import argparse
import tempfile
import time
from pathlib import Path

from trnprof.api import open_run
from trnprof.collectors.synthetic import synthetic_run
from trnprof.diff.document import build
from trnprof.diff.load import load_sides
from trnprof.rules_engine import analyze


def time_analyze(path: Path) -> float:
    with open_run(path) as run:
        start = time.perf_counter()
        analyze(run)
        return time.perf_counter() - start


def time_diff(base: Path, new: Path) -> tuple[float, float, dict]:
    """Total diff time, and the rules' time summed over both runs (they overlap in time)."""
    start = time.perf_counter()
    sides = load_sides(base, new)
    document = build(*sides)
    return time.perf_counter() - start, sum(side.findings["seconds"] for side in sides), document


def _run(folder: Path, name: str, args, **faults) -> Path:
    path = folder / f"{name}-{args.ranks}x{args.steps}x{args.ops}x{args.collectives}"
    if not path.exists():
        start = time.perf_counter()
        synthetic_run(path, ranks=args.ranks, steps=args.steps, ops_per_step=args.ops,
                      collectives_per_step=args.collectives, **faults)
        print(f"built {path} in {time.perf_counter() - start:.1f} s")
    return path


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--ranks", type=int, default=1024)
    parser.add_argument("--steps", type=int, default=10)
    parser.add_argument("--ops", type=int, default=960, help="compute ops per rank and step")
    parser.add_argument("--collectives", type=int, default=16, help="collectives per rank and step")
    parser.add_argument("--keep", type=Path, help="folder to build (or reuse) the runs in")
    parser.add_argument("--rounds", type=int, default=2, help="alternating rounds; the fastest of each counts")
    args = parser.parse_args()
    folder = args.keep or Path(tempfile.mkdtemp(prefix="trnprof-bench-diff-"))
    base = _run(folder, "base", args, seed=0)
    new = _run(folder, "new", args, seed=1, slow_rank=7)
    with open_run(base) as run:
        events = run.con.execute("SELECT COUNT(*) FROM events").fetchone()[0]
    analyses, diffs = [], []
    for _ in range(args.rounds):  # alternate, so both see the same machine load
        analyses.append(time_analyze(base))
        diffs.append(time_diff(base, new))
    single = min(analyses)
    total, rules, document = min(diffs, key=lambda d: d[0])
    print(f"events per run        {events:,}")
    print(f"analyze (one run)     {single:.2f} s")
    print(f"diff (two runs)       {total:.2f} s  (rules {rules:.2f} s summed over both sessions; step time "
          f"{document['step_time']['change']:+.1%}, significant {document['step_time']['significant']})")
    print(f"ratio                 {total / single:.2f}x  (target <= 2x)")


if __name__ == "__main__":
    main()
