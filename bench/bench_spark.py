"""Benchmark: DuckDB vs Spark (local[2] by default) on synthetic runs of growing size.

Side by side in one process, for each run: (a) a stdlib query (QUERY) and (b) `analyze` with
every built-in rule pack, each from a fresh open of the run, on DuckDB and on Spark. The Spark
JVM's start-up (the first session) and the stdlib's transpiling are timed once, apart from the
per-run figures; a warm-up `analyze` of a tiny run on both engines (rule packs loaded, JVM
warmed) is not counted. Prints events, DuckDB s, Spark s and Spark / DuckDB per run, and the
peak RSS of this process (DuckDB runs in it) and of the Spark driver JVM.

    python bench/bench_spark.py [--sizes 8,64,256,1024] [--steps 10] [--ops 960] [--keep DIR]
                                [--master local[2]] [--spark-conf KEY=VALUE ...] [--rounds 1]
                                [--skip-duckdb] [--skip-spark]

The largest default run is bench_rules.py's: 1,024 ranks x 10 steps x (960 ops + 16
collectives + 3) = 10.0M events. Runs are built in --keep (default: a new temporary folder) and
reused from there. Target (issue 12): `analyze` of the 1,024-rank run on Spark local[2] finishes.
"""

from __future__ import annotations

import argparse
import os
import resource
import time
from pathlib import Path
from types import SimpleNamespace

import synthetic_runs

os.environ["TRNPROF_CACHE"] = "off"  # time the computation, not the derived/ cache of an earlier round

from trnprof import engines  # noqa: E402
from trnprof.api import open_run  # noqa: E402
from trnprof.manifest import read_manifest  # noqa: E402
from trnprof.rules_engine.engine import analyze  # noqa: E402

QUERY = "SELECT rank, AVG(idle) FROM step_breakdown GROUP BY rank"
# The driver's heap must be set before the JVM starts: it is part of the first session's settings.
SPARK_DEFAULTS = {"spark.driver.memory": "6g"}


def options() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="8,64,256,1024", help="comma-separated rank counts")
    parser.add_argument("--steps", type=int, default=10)
    parser.add_argument("--ops", type=int, default=960, help="compute ops per rank and step")
    parser.add_argument("--collectives", type=int, default=16, help="collectives per rank and step")
    parser.add_argument("--keep", type=Path, help="folder to build (or reuse) the runs in")
    parser.add_argument("--master", default="local[2]", help="Spark master URL")
    parser.add_argument(
        "--spark-conf",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help=f"a spark.* setting, repeatable (defaults: {SPARK_DEFAULTS})",
    )
    parser.add_argument("--rounds", type=int, default=1, help="rounds per run; the fastest of each counts")
    parser.add_argument("--skip-duckdb", action="store_true")
    parser.add_argument("--skip-spark", action="store_true")
    return parser.parse_args()


def spark_settings(pairs: list[str]) -> dict:
    settings = dict(SPARK_DEFAULTS)
    for pair in pairs:
        key, _, value = pair.partition("=")
        settings[key.strip()] = value.strip()
    return settings


def build_runs(args) -> tuple[Path, list[Path]]:
    """The tiny warm-up run and the measured runs, one per size."""
    folder = synthetic_runs.folder(args, "trnprof-bench-spark-")
    folder.mkdir(parents=True, exist_ok=True)
    warmup = synthetic_runs.build(folder, "warmup", SimpleNamespace(ranks=4, steps=4, ops=40, collectives=4))
    shape = {"steps": args.steps, "ops": args.ops, "collectives": args.collectives}
    return warmup, [
        synthetic_runs.build(folder, "synthetic", SimpleNamespace(ranks=int(ranks), **shape), slow_rank=7)
        for ranks in args.sizes.split(",")
    ]


# --- measuring ---
def time_query(path: Path) -> float:
    start = time.perf_counter()
    with open_run(path) as run:
        run.sql(QUERY)
    return time.perf_counter() - start


def time_analyze(path: Path) -> tuple[float, object]:
    start = time.perf_counter()
    document = analyze(path)
    return time.perf_counter() - start, document


def fastest(measure, path: Path, rounds: int):
    """The fastest of `rounds` calls of `measure(path)` (seconds, or (seconds, document))."""
    results = [measure(path) for _ in range(rounds)]
    return min(results, key=lambda r: r[0] if isinstance(r, tuple) else r)


def spark_start_up(master: str, conf: dict) -> tuple[float, float]:
    """Seconds to start the JVM and its first session, and to transpile the stdlib (once per process)."""
    from trnprof.spark import connect  # imported here: --skip-spark runs without pyspark
    from trnprof.spark.views import spark_views

    start = time.perf_counter()
    connect.session(master, conf)
    jvm = time.perf_counter() - start
    start = time.perf_counter()
    spark_views()
    return jvm, time.perf_counter() - start


# --- memory ---
def _descendants(pid: int) -> list[int]:
    children = []
    for task in Path(f"/proc/{pid}/task").iterdir():
        children += [int(c) for c in (task / "children").read_text().split()]
    return children + [d for child in children for d in _descendants(child)]


def peak_mb(pid: int) -> float:
    """A process's peak RSS so far (VmHWM), MB."""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) / 1024
    return float("nan")


def jvm_peak_mb() -> float | None:
    """Peak RSS of the Spark driver JVM this process started, MB (None before it starts)."""
    for pid in _descendants(os.getpid()):
        try:
            if Path(f"/proc/{pid}/comm").read_text().strip() == "java":
                return peak_mb(pid)
        except OSError:  # ended meanwhile
            continue
    return None


# --- one run on both engines ---
def chosen(args) -> list[str]:
    return [engine for engine, skip in (("duckdb", args.skip_duckdb), ("spark", args.skip_spark)) if not skip]


def measure_run(path: Path, args, conf: dict) -> dict:
    figures = {"events": read_manifest(path)["counts"]["events"]}
    for engine in chosen(args):
        with engines.using(engine, args.master, conf):
            figures[f"query {engine}"] = fastest(time_query, path, args.rounds)
            seconds, document = fastest(time_analyze, path, args.rounds)
        figures[f"analyze {engine}"] = seconds
        figures[f"document {engine}"] = document
    figures["python MB"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    figures["jvm MB"] = jvm_peak_mb()
    return figures


def ratio(figures: dict, what: str) -> str:
    duck, spark = figures.get(f"{what} duckdb"), figures.get(f"{what} spark")
    return f"{spark / duck:6.1f}x" if duck and spark else "      -"


def seconds(figures: dict, key: str) -> str:
    return f"{figures[key]:8.2f}" if key in figures else "       -"


def print_row(ranks: str, figures: dict) -> None:
    jvm = f"{figures['jvm MB']:,.0f}" if figures["jvm MB"] else "-"
    print(
        f"{ranks:>6} {figures['events']:>12,} | {seconds(figures, 'query duckdb')} {seconds(figures, 'query spark')} "
        f"{ratio(figures, 'query')} | {seconds(figures, 'analyze duckdb')} {seconds(figures, 'analyze spark')} "
        f"{ratio(figures, 'analyze')} | {figures['python MB']:,.0f} / {jvm}",
        flush=True,
    )


def print_documents(figures: dict) -> None:
    """Findings, not evaluated and errors of each engine's analyze, and every rule error."""
    for engine in ("duckdb", "spark"):
        document = figures.get(f"document {engine}")
        if document is None:
            continue
        print(
            f"         {engine}: {len(document.findings)} findings, {len(document.not_evaluated)} not evaluated, "
            f"{len(document.errors)} errors",
            flush=True,
        )
        for failure in document.errors:
            print(f"           error {failure.name}: {failure.error}", flush=True)


def print_slopes(results: list[dict]) -> None:
    """Seconds per million events between the two largest runs: the cost once fixed costs are paid."""
    if len(results) < 2:
        return
    small, big = results[-2], results[-1]
    millions = (big["events"] - small["events"]) / 1e6
    for what in ("query", "analyze"):
        slopes = {
            engine: (big[f"{what} {engine}"] - small[f"{what} {engine}"]) / millions
            for engine in ("duckdb", "spark")
            if f"{what} {engine}" in big
        }
        text = ", ".join(f"{engine} {slope:.2f}" for engine, slope in slopes.items())
        ratio_text = f" (Spark / DuckDB {slopes['spark'] / slopes['duckdb']:.1f}x)" if len(slopes) == 2 else ""
        print(f"\n{what}: s per million events between the two largest runs: {text}{ratio_text}", end="")
    print()


def print_target(largest: dict) -> None:
    document = largest.get("document spark")
    if document is not None:
        ok = "ok" if not document.errors else "MISSED (rule errors)"
        print(
            f"target: analyze of the largest run ({largest['events']:,} events) on Spark finishes: {ok}, "
            f"{largest['analyze spark']:.1f} s, {len(document.errors)} rule errors"
        )


def main() -> None:
    args = options()
    conf = spark_settings(args.spark_conf)
    print(f"load average at start {os.getloadavg()[0]:.2f} ({os.cpu_count()} cores); spark {args.master} {conf}")
    warmup, paths = build_runs(args)
    if not args.skip_spark:
        jvm, transpile = spark_start_up(args.master, conf)
        print(
            f"Spark JVM start-up (first session) {jvm:.2f} s; stdlib transpiled in {transpile:.2f} s (once per process)"
        )
    for engine in chosen(args):
        with engines.using(engine, args.master, conf):
            time_analyze(warmup)  # not counted
    print(
        f"\n{'ranks':>6} {'events':>12} | {'query: DuckDB s':>15} {'Spark s':>8} {'S/D':>7} | "
        f"{'analyze: DuckDB s':>17} {'Spark s':>8} {'S/D':>7} | peak RSS so far, MB: python / JVM"
    )
    results = []
    for ranks, path in zip(args.sizes.split(","), paths):
        results.append(measure_run(path, args, conf))
        print_row(ranks, results[-1])
        print_documents(results[-1])
    print_slopes(results)
    print_target(results[-1])
    print(f"\nload average at end {os.getloadavg()[0]:.2f}")


if __name__ == "__main__":
    main()
