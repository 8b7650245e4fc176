"""Benchmark of the Trn1 execution model at its scale target.

llama2-7b on 32 trn1.32xlarge nodes (1,024 ranks) x 10 steps, simulated and written, in a child
process so its peak RSS is its own. Printed side by side in one run: wall time, events per
second, peak RSS, and the ratio to writing the same number of rows straight to Parquet (the
floor any collector writing canonical runs pays). Also: the tiny demo job and --summary-only
for every preset. Targets (docs/performance.md): <= 60 s, peak RSS < 4 GB, > 1M events/s; tiny and every
summary < 2 s.

    python bench/bench_simulate.py [--nodes 32] [--steps 10]
"""

from __future__ import annotations

import argparse
import json
import resource
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pyarrow.parquet as pq

OUT = Path(__file__).resolve().parent / "out"

CHILD = """
import json, sys, time
from trnprof.collectors.trn1 import load_config, simulate
cfg = load_config(preset="llama2-7b", overrides=["cluster.nodes={nodes}", "run.steps={steps}"])
t0 = time.perf_counter()
path = simulate(cfg, sys.argv[1], overwrite=True)
print(json.dumps({{"seconds": time.perf_counter() - t0}}))
"""


def run_child(code: str, *args) -> tuple[dict, float, float]:
    """Result JSON, wall seconds and peak RSS (bytes) of a child Python process."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
    t0 = time.perf_counter()
    done = subprocess.run([sys.executable, "-c", code, *map(str, args)], capture_output=True, text=True, check=True)
    wall = time.perf_counter() - t0
    peak_kib = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
    return json.loads(done.stdout.strip().splitlines()[-1]), wall, max(peak_kib, before) * 1024


def raw_write_rate(run: Path, ranks: int = 32) -> float:
    """Rows per second of pyarrow writing `ranks` ranks' events as one zstd Parquet file each."""
    files = sorted((run / "events").glob("rank=*/*.parquet"))[:ranks]
    tables = [pq.read_table(f) for f in files]
    rows = sum(t.num_rows for t in tables)
    t0 = time.perf_counter()
    for i, table in enumerate(tables):
        pq.write_table(table, OUT / f"raw-{i}.parquet", compression="zstd")
    seconds = time.perf_counter() - t0
    for i in range(len(tables)):
        (OUT / f"raw-{i}.parquet").unlink()
    return rows / seconds


def summary_cases(name: str, load_config):
    """The preset as it is, on 4,096 nodes (8 microbatches per step) and on the fewest nodes
    its parallelism allows (the most microbatches per step: the longest pipeline schedule)."""
    from trnprof.model.job import resolve

    job = resolve(load_config(preset=name))
    yield "as is", job.config
    micro, per_replica = job.micro, job.tp * job.pp
    dp = 4096 * job.cores_per_node // per_replica
    yield "on 4096 nodes", load_config(preset=name, overrides=["cluster.nodes=4096", f"batch.global={8 * micro * dp}"])
    fewest = -(-per_replica // job.cores_per_node)
    dp = fewest * job.cores_per_node // per_replica
    if job.global_batch % (micro * dp) == 0:
        yield f"on {fewest} node(s)", load_config(preset=name, overrides=[f"cluster.nodes={fewest}"])


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--nodes", type=int, default=32)
    parser.add_argument("--steps", type=int, default=10)
    args = parser.parse_args()
    OUT.mkdir(parents=True, exist_ok=True)
    run = OUT / "llama2-7b"

    result, wall, rss = run_child(CHILD.format(nodes=args.nodes, steps=args.steps), run)
    manifest = json.loads((run / "trnprof.json").read_text())
    events = manifest["counts"]["events"]
    rate = events / result["seconds"]
    raw = raw_write_rate(run)
    size = sum(f.stat().st_size for f in run.rglob("*.parquet"))
    print(f"llama2-7b, {args.nodes} nodes ({manifest['world_size']} ranks) x {args.steps} steps")
    print(
        f"  events              {events:,} (+ {manifest['counts']['counters']:,} counter samples), "
        f"{size / 1e6:.0f} MB on disk"
    )
    print(
        f"  simulate + write    {result['seconds']:.1f} s (process wall {wall:.1f} s)   target <= 60 s: "
        f"{'ok' if result['seconds'] <= 60 else 'MISSED'}"
    )
    print(f"  events per second   {rate / 1e6:.2f} M/s   target > 1 M/s: {'ok' if rate > 1e6 else 'MISSED'}")
    print(f"  peak RSS            {rss / 1e9:.2f} GB   target < 4 GB: {'ok' if rss < 4e9 else 'MISSED'}")
    print(f"  raw Parquet write   {raw / 1e6:.2f} M rows/s; simulation runs at {rate / raw:.2f}x that floor")
    shutil.rmtree(run)

    from trnprof.collectors.trn1 import demo_config, list_presets, load_config, simulate, summary

    t0 = time.perf_counter()
    simulate(demo_config(), OUT / "tiny", overwrite=True)
    tiny = time.perf_counter() - t0
    shutil.rmtree(OUT / "tiny")
    print(f"tiny demo job simulated in {tiny:.2f} s   target < 2 s: {'ok' if tiny < 2 else 'MISSED'}")
    worst = (0.0, "")
    for name in list_presets()["job"] + list_presets()["model"]:
        for label, cfg in summary_cases(name, load_config):
            t0 = time.perf_counter()
            summary(cfg)
            worst = max(worst, (time.perf_counter() - t0, f"{name} {label}"))
    print(f"slowest --summary-only {worst[0]:.2f} s ({worst[1]})   target < 2 s: {'ok' if worst[0] < 2 else 'MISSED'}")


if __name__ == "__main__":
    main()
