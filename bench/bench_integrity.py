"""Benchmark: what the integrity check on open (`trnprof.integrity.check_on_open`) adds to
`trnprof info` and `trnprof analyze` on a 1,024-rank run.

Side by side in one process, alternated for --rounds rounds (the fastest of each kept): `info`
and `analyze` (all built-in rules) with the check, and with it replaced by a no-op. Also timed:
the check alone, the full `trnprof check` (every file read), and what reading every Parquet
footer would cost (the reason the open check compares sizes, not footers).

    python bench/bench_integrity.py [--ranks 1024] [--steps 10] [--ops 96] [--keep DIR]

Target (issue 15): the check adds <= 5 % to info and analyze on a 1,024-rank run.
"""

from __future__ import annotations

import argparse
import tempfile
import time
from pathlib import Path

import pyarrow.parquet as pq

from trnprof import integrity
from trnprof.api import open_run
from trnprof.collectors.synthetic import synthetic_run
from trnprof.manifest import read_manifest
from trnprof.rules_engine.engine import analyze

CHECK = integrity.check_on_open


def timed(action) -> float:
    start = time.perf_counter()
    action()
    return time.perf_counter() - start


def info(path: Path) -> None:
    with open_run(path) as run:
        run.info()


def rules(path: Path) -> None:
    with open_run(path) as run:
        analyze(run)


def with_check(on: bool, action, path: Path) -> float:
    integrity.check_on_open = CHECK if on else (lambda run_dir, manifest: None)
    try:
        return timed(lambda: action(path))
    finally:
        integrity.check_on_open = CHECK


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--ranks", type=int, default=1024)
    parser.add_argument("--steps", type=int, default=10)
    parser.add_argument("--ops", type=int, default=96, help="compute ops per rank and step")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--keep", type=Path, help="folder to build (or reuse) the run in")
    args = parser.parse_args()
    folder = args.keep or Path(tempfile.mkdtemp(prefix="trnprof-bench-integrity-"))
    path = folder / f"synthetic-{args.ranks}x{args.steps}x{args.ops}"
    if not path.exists():
        synthetic_run(path, ranks=args.ranks, steps=args.steps, ops_per_step=args.ops, slow_rank=7)
    manifest = read_manifest(path, check_files=False)
    results = {key: [] for key in ("info on", "info off", "analyze on", "analyze off")}
    for _ in range(args.rounds):
        for name, action in (("info", info), ("analyze", rules)):
            results[f"{name} on"].append(with_check(True, action, path))
            results[f"{name} off"].append(with_check(False, action, path))
    best = {key: min(values) for key, values in results.items()}
    check = min(timed(lambda: CHECK(path, manifest)) for _ in range(args.rounds))
    footers = timed(lambda: [pq.ParquetFile(path / p).metadata.num_rows for p in manifest["parts"]])
    full = timed(lambda: integrity.verify(path, manifest))
    print(
        f"run                    {args.ranks} ranks, {sum(manifest['counts'].values()):,} rows, "
        f"{len(manifest['parts'])} Parquet files"
    )
    for name in ("info", "analyze"):
        on, off = best[f"{name} on"], best[f"{name} off"]
        print(
            f"{name:<8} with check    {on:.3f} s   without {off:.3f} s   +{(on - off) / off:.1%} "
            f"(check alone: +{check / off:.1%}; target <= 5 %)"
        )
    print(f"check on open alone    {check * 1000:.1f} ms (listing + stat per file)")
    print(f"all footers read       {footers * 1000:.1f} ms (not done on open)")
    print(f"trnprof check (full)   {full:.2f} s")


if __name__ == "__main__":
    main()
