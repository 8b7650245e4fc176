"""Benchmark: the interval views (`device_segments`, `step_breakdown`, `host_self_time`,
`host_sync_calls`) as `analyze` computes them, per batch of ranks, before and after a change.

In one process and one run of the script: for each run given, the first --batches batches of
ranks that `analyze` would cut at the default memory budget (`trnprof/batches.py`; a one-rank
trace is one batch) are set up as analyze sets them up, then each view is computed into a table
in the order the batch pass computes them (`device_segments` kept as a table for its two readers)
and timed, wall and CPU (all threads). With --before REV the views of trnprof/stdlib/intervals.sql
and step_breakdown.sql at git revision REV are timed too, alternated with the working tree's over
--rounds rounds, so that the machine's load hits both alike; each figure is the best of the rounds.
Rows of the two versions are compared (same count and same sums).

    python bench/bench_intervals.py RUN [RUN ...] [--batches 2] [--rounds 3] [--before REV]
"""

from __future__ import annotations

import argparse
import os
import subprocess
import time
from pathlib import Path

os.environ["TRNPROF_CACHE"] = "off"  # the computation, not the derived/ cache

from trnprof import batches, session  # noqa: E402
from trnprof.stdlib import create_view, parse_module  # noqa: E402

REPO = Path(__file__).resolve().parents[1]
MODULES = ("intervals", "step_breakdown")
# the batch pass's order: the sweep is kept as a table from its first reader to its last
VIEWS = ("device_segments", "step_breakdown", "host_self_time", "host_sync_calls")
CHECKSUMS = {
    "device_segments": "SUM(dur), SUM(n_host), SUM(n_compute)",
    "step_breakdown": "SUM(host), SUM(host_sync), SUM(compute), SUM(idle)",
    "host_self_time": "SUM(self_ns)",
    "host_sync_calls": "SUM(dur), COUNT(DISTINCT site)",
}


def views_at(revision: str):
    """The views of the interval modules as they are at git `revision`."""
    found = []
    for module in MODULES:
        text = subprocess.run(
            ["git", "-C", str(REPO), "show", f"{revision}:trnprof/stdlib/{module}.sql"],
            check=True,
            capture_output=True,
            text=True,
        ).stdout
        found += parse_module(module, text)
    return found


def batch_session(run_dir: Path, index: int, replaced):
    """A session with batch `index` of `run_dir` set up as the batch pass sets it up; the
    interval views replaced by `replaced` when given."""
    con = session.connect()
    session.attach_run(con, run_dir)
    attached = session._session(con).runs["main"]
    cut = batches.rank_batches(
        attached.rank_bytes(), max(1, int(batches.parse_bytes(session.DEFAULT_MEMORY_LIMIT) * batches.BATCH_SHARE))
    )
    low, high, ranks = cut[index]
    batches._batch_schema(con, attached, low, high, ranks, batches.local_views())
    if replaced:
        con.execute(f"SET schema = '{batches.BATCH_SCHEMA}'")
        for view in replaced:
            con.execute(f"DROP VIEW IF EXISTS {view.name}")
            create_view(con, view)
        con.execute("SET schema = 'main'")
    return con, len(cut), len(ranks)


def timed_views(run_dir: Path, index: int, replaced) -> tuple[dict, dict]:
    """Wall and CPU seconds of each view of VIEWS in one batch, and a checksum of its rows."""
    con, _, _ = batch_session(run_dir, index, replaced)
    seconds, sums = {}, {}
    schema = batches.BATCH_SCHEMA
    try:
        for name in VIEWS:
            wall, cpu = time.perf_counter(), time.process_time()
            con.execute(f"CREATE TABLE {schema}._m_{name} AS SELECT * FROM {schema}.{name}")
            seconds[name] = (time.perf_counter() - wall, time.process_time() - cpu)
            sums[name] = con.execute(f"SELECT COUNT(*), {CHECKSUMS[name]} FROM {schema}._m_{name}").fetchone()
            if name == "device_segments":  # its readers read the table, as in the batch pass
                con.execute(f"DROP VIEW {schema}.{name}")
                con.execute(f"ALTER TABLE {schema}._m_{name} RENAME TO {name}")
        events = con.execute(f"SELECT COUNT(*) FROM {schema}.events").fetchone()[0]
    finally:
        session.close(con)
    sums["events"] = events
    return seconds, sums


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("runs", nargs="+", type=Path)
    parser.add_argument("--batches", type=int, default=2, help="the first N batches of each run (default 2)")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--before", help="git revision whose interval views to time beside the working tree's")
    args = parser.parse_args()
    variants = {"after": None}
    if args.before:
        variants = {f"before ({args.before})": views_at(args.before), "after": None}
    for run_dir in args.runs:
        _, total, _ = batch_session(run_dir, 0, None)
        best: dict[str, dict[str, tuple[float, float]]] = {v: {} for v in variants}
        sums: dict[str, list] = {v: [] for v in variants}
        for _ in range(args.rounds):
            for variant, replaced in variants.items():
                taken, checks = {}, []
                for index in range(min(args.batches, total)):
                    seconds, check = timed_views(run_dir, index, replaced)
                    checks.append(check)
                    for name, (wall, cpu) in seconds.items():
                        w, c = taken.get(name, (0.0, 0.0))
                        taken[name] = (w + wall, c + cpu)
                sums[variant] = checks
                for name, pair in taken.items():
                    best[variant][name] = min(best[variant].get(name, pair), pair)
        events = sum(check["events"] for check in next(iter(sums.values())))
        print(
            f"\n{run_dir}: {min(args.batches, total)} of {total} batches, {events:,} events, "
            f"best of {args.rounds} rounds, load average {os.getloadavg()[0]:.1f}"
        )
        for variant in variants:
            cells = "  ".join(f"{name} {wall:6.2f} s ({cpu:5.2f} CPU)" for name, (wall, cpu) in best[variant].items())
            total_wall = sum(w for w, _ in best[variant].values())
            print(f"  {variant:>22}: {cells}  | all {total_wall:6.2f} s")
        if len(variants) == 2:
            before, after = sums.values()
            same = all(b[n] == a[n] for b, a in zip(before, after) for n in VIEWS)
            print(f"  rows of the two versions: {'the same' if same else 'DIFFERENT'}")
            if not same:
                for b, a in zip(before, after):
                    for n in VIEWS:
                        if b[n] != a[n]:
                            print(f"    {n}: {b[n]} vs {a[n]}")


if __name__ == "__main__":
    main()
