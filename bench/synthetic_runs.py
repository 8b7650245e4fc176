"""The synthetic runs the rule and diff benchmarks share: their size options and a builder that
reuses a run already built in --keep."""

from __future__ import annotations

import argparse
import tempfile
import time
from pathlib import Path

from trnprof.collectors.synthetic import synthetic_run


def parser(description: str) -> argparse.ArgumentParser:
    """Options of the run's size (10M events by default), --keep and --rounds."""
    parser = argparse.ArgumentParser(description=description)
    parser.add_argument("--ranks", type=int, default=1024)
    parser.add_argument("--steps", type=int, default=10)
    parser.add_argument("--ops", type=int, default=960, help="compute ops per rank and step")
    parser.add_argument("--collectives", type=int, default=16, help="collectives per rank and step")
    parser.add_argument("--keep", type=Path, help="folder to build (or reuse) the runs in")
    parser.add_argument("--rounds", type=int, default=2, help="alternating rounds; the fastest of each counts")
    return parser


def folder(args, prefix: str) -> Path:
    return args.keep or Path(tempfile.mkdtemp(prefix=prefix))


def build(folder: Path, name: str, args, **faults) -> Path:
    """The run `name` of the size `args` give, built unless `folder` holds it."""
    path = folder / f"{name}-{args.ranks}x{args.steps}x{args.ops}x{args.collectives}"
    if not path.exists():
        start = time.perf_counter()
        synthetic_run(
            path,
            ranks=args.ranks,
            steps=args.steps,
            ops_per_step=args.ops,
            collectives_per_step=args.collectives,
            **faults,
        )
        print(f"built {path} in {time.perf_counter() - start:.1f} s")
    return path
