"""Benchmark: one `trnprof analyze TRACE` broken into its phases, each timed (wall and CPU) with
the imports it pays and the memory it leaves, medians over fresh processes.

Each round is one fresh interpreter running the real command (`trnprof.cli.main`, argv as the
user types it: `analyze TRACE --format json -o FILE --force`), the run cold (the cache folder's
runs removed first; compiled rule packs kept, as after any first command). Wrappers placed on
the functions of each phase (installed as the modules load, so nothing is imported early) time
each phase exclusive of the phases nested in it:

    imports     the interpreter's start to the command's module loaded (click, trnprof.cli,
                trnprof.cli.analyze and what it imports)
    plan        loading and choosing the rules (`rules_engine.engine.plan`)
    ingest      the trace into a run (`collectors.ingest.traces.run_of_traces`)
    open        opening the run: session, tables, stdlib views created (`engines.open_run`)
    views       computing the stdlib views the rules read (`batches.materialize`)
    sandbox     the rules' tables copied into the sandbox (`rules_engine.engine.open_sandbox`)
    rules       rule queries, findings, claims (`rules_engine.engine.evaluate`, the rest)
    pricing     pricing the fixes: model, critical path, replay (`api.priced`)
    render      the document rendered and written (`cli._output.render` and `emit`)
    other       the rest of the command (options, checks, closing the run)

"imports" in a phase's row is the time spent importing modules first loaded there (counted
once, by the outermost import). Memory: RSS after the phase, and the process's peak.
`python -X importtime` of the same command (--importtime) lists the largest imports.

    python bench/bench_phases.py [TRACE] [--repeat 5] [--importtime] [--tree OTHER_CHECKOUT]
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
DEFAULT_TRACE = REPO / "tests" / "data" / "kineto" / "trace_filter" / "sampled_rank-0.json.gz"  # 4,855 entries

# (phase, module, attribute wrapped), in the order a run meets them
PHASES = [
    ("plan", "trnprof.rules_engine.engine", "plan"),
    ("ingest", "trnprof.collectors.ingest.traces", "run_of_traces"),
    ("open", "trnprof.engines", "open_run"),
    ("views", "trnprof.batches", "materialize"),
    ("sandbox", "trnprof.rules_engine.engine", "open_sandbox"),
    ("rules", "trnprof.rules_engine.engine", "evaluate"),
    ("pricing", "trnprof.api", "priced"),
    ("render", "trnprof.cli._output", "render"),
    ("render", "trnprof.cli._output", "emit"),
]
ORDER = ["imports", *dict.fromkeys(phase for phase, _, _ in PHASES), "other"]


# ----- the child: one analyze, timed -----


class Clock:
    """Exclusive wall and CPU time per phase, and the import time inside each."""

    def __init__(self):
        self.stack = ["imports"]
        self.wall = dict.fromkeys(ORDER, 0.0)
        self.cpu = dict.fromkeys(ORDER, 0.0)
        self.imports = dict.fromkeys(ORDER, 0.0)
        self.rss = {}
        self.mark = (time.perf_counter(), time.process_time())

    def _charge(self):
        wall, cpu = time.perf_counter(), time.process_time()
        self.wall[self.stack[-1]] += wall - self.mark[0]
        self.cpu[self.stack[-1]] += cpu - self.mark[1]
        self.mark = (wall, cpu)

    def enter(self, phase: str):
        self._charge()
        self.stack.append(phase)

    def leave(self):
        self._charge()
        self.rss.setdefault(self.stack.pop(), rss_mib())  # after the phase's first part (a `with`'s entry)


def rss_mib(field: str = "VmRSS") -> float:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith(field + ":"):
            return int(line.split()[1]) / 1024
    return 0.0


def wrapped(clock: Clock, phase: str, function):
    import contextlib
    import functools
    import inspect

    if inspect.isgeneratorfunction(getattr(function, "__wrapped__", None)):  # a @contextmanager

        @contextlib.contextmanager
        def manager(*args, **kwargs):
            clock.enter(phase)
            try:
                with function(*args, **kwargs) as value:
                    clock.leave()
                    yield value
                    clock.enter(phase)
            finally:
                clock.leave()

        return manager

    @functools.wraps(function)
    def call(*args, **kwargs):
        clock.enter(phase)
        try:
            return function(*args, **kwargs)
        finally:
            clock.leave()

    return call


def install(clock: Clock) -> None:
    """Wrap each phase's function as its module finishes loading, and time every import."""
    import importlib._bootstrap as bootstrap

    wanted = {}
    for phase, module, name in PHASES:
        wanted.setdefault(module, []).append((phase, name))
    find_and_load, depth = bootstrap._find_and_load, [0]

    def patch(module_name: str) -> None:
        for phase, name in wanted.pop(module_name, []):
            module = sys.modules[module_name]
            original = getattr(module, name)
            setattr(module, name, wrapped(clock, phase, original))
            for other in list(sys.modules.values()):  # modules that imported the name already
                if getattr(other, "__name__", "").startswith("trnprof") and getattr(other, name, None) is original:
                    setattr(other, name, getattr(module, name))

    def timed_load(name, import_):
        depth[0] += 1
        start = time.perf_counter()
        try:
            return find_and_load(name, import_)
        finally:
            depth[0] -= 1
            if depth[0] == 0:
                clock.imports[clock.stack[-1]] += time.perf_counter() - start
            if name in wanted and name in sys.modules:
                patch(name)

    bootstrap._find_and_load = timed_load


def child(trace: str, out: str) -> None:
    import atexit

    clock = Clock()
    install(clock)
    import trnprof.cli
    import trnprof.cli.analyze  # noqa: F401 (what `get_command` loads before the command runs)

    clock.enter("other")

    @atexit.register  # also when the command ends the process at once (trnprof.cli.QUICK_EXIT)
    def report_phases():
        clock.leave()
        # the interpreter's start (before this script ran) and exit: the parent's whole less these
        print(
            json.dumps(
                {
                    "wall": clock.wall,
                    "cpu": clock.cpu,
                    "imports": clock.imports,
                    "rss": clock.rss,
                    "peak": rss_mib("VmHWM"),
                    "modules": len(sys.modules),
                }
            ),
            file=sys.stderr,
        )

    sys.argv = ["trnprof", "analyze", trace, "--format", "json", "-o", out, "--force"]
    trnprof.cli.main()  # the process's entry point, as `trnprof` calls it


# ----- the parent: fresh processes, medians -----


def one_round(trace: Path, cache: Path, tree: Path = REPO) -> dict:
    shutil.rmtree(cache / "runs", ignore_errors=True)
    env = dict(os.environ, TRNPROF_CACHE_DIR=str(cache), PYTHONPATH=str(tree))
    with tempfile.NamedTemporaryFile("r") as stats:
        started = time.perf_counter()
        done = subprocess.run(
            [
                "/usr/bin/time",
                "-o",
                stats.name,
                "-f",
                "%e %M %U %S",
                sys.executable,
                __file__,
                "--child",
                str(trace),
                str(cache / "findings.json"),
            ],
            env=env,
            capture_output=True,
            text=True,
        )
        whole = time.perf_counter() - started
        if done.returncode != 0:
            sys.exit(done.stderr[-3000:])
        wall, rss_kb, user, system = stats.read().split()[-4:]
    result = json.loads(done.stderr.strip().splitlines()[-1])
    result.update(whole_wall=float(wall) or whole, whole_cpu=float(user) + float(system), whole_rss=int(rss_kb) / 1024)
    return result


def report(rounds: list[dict]) -> None:
    median = lambda values: statistics.median(values)  # noqa: E731
    whole_wall = median([r["whole_wall"] for r in rounds])
    whole_cpu = median([r["whole_cpu"] for r in rounds])
    print(f"{'phase':<10} {'wall s':>7} {'CPU s':>7} {'of which imports s':>19} {'RSS after MiB':>14}")
    measured_wall = measured_cpu = 0.0
    for phase in ORDER:
        wall = median([r["wall"][phase] for r in rounds])
        cpu = median([r["cpu"][phase] for r in rounds])
        imports = median([r["imports"][phase] for r in rounds])
        rss = [r["rss"][phase] for r in rounds if phase in r["rss"]]
        measured_wall, measured_cpu = measured_wall + wall, measured_cpu + cpu
        print(f"{phase:<10} {wall:7.3f} {cpu:7.3f} {imports:19.3f} {median(rss) if rss else float('nan'):14.0f}")
    print(
        f"{'start':<10} {whole_wall - measured_wall:7.3f} {whole_cpu - measured_cpu:7.3f}"
        f"   (interpreter start and exit: the whole process less the phases)"
    )
    print(
        f"{'whole':<10} {whole_wall:7.3f} {whole_cpu:7.3f}   peak RSS "
        f"{median([r['whole_rss'] for r in rounds]):.0f} MiB, {median([r['modules'] for r in rounds]):.0f} modules"
        f"   load {os.getloadavg()[0]:.1f}"
    )


def importtime(trace: Path, cache: Path, top: int = 25) -> None:
    shutil.rmtree(cache / "runs", ignore_errors=True)
    env = dict(os.environ, TRNPROF_CACHE_DIR=str(cache), PYTHONPATH=str(REPO))
    done = subprocess.run(
        [
            sys.executable,
            "-X",
            "importtime",
            "-m",
            "trnprof",
            "analyze",
            str(trace),
            "--format",
            "json",
            "-o",
            str(cache / "findings.json"),
            "--force",
        ],
        env=env,
        capture_output=True,
        text=True,
    )
    rows = []
    for line in done.stderr.splitlines():
        if line.startswith("import time:") and "|" in line and "cumulative" not in line:
            _, cumulative, name = line[len("import time:") :].split("|")
            if len(name) - len(name.lstrip()) <= 3:  # top-level imports and their direct children
                rows.append((int(cumulative) / 1e6, name.rstrip()))
    print("\nlargest imports (cumulative s, python -X importtime, one process):")
    for seconds, name in sorted(rows, reverse=True)[:top]:
        print(f"  {seconds:6.3f} {name}")


def main() -> None:
    if len(sys.argv) == 4 and sys.argv[1] == "--child":
        return child(sys.argv[2], sys.argv[3])
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("trace", nargs="?", type=Path, default=DEFAULT_TRACE)
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--importtime", action="store_true", help="also list the largest imports")
    parser.add_argument(
        "--tree",
        type=Path,
        default=REPO,
        help="the source tree whose trnprof to measure (another checkout: before/after)",
    )
    args = parser.parse_args()
    cache = Path(tempfile.mkdtemp(prefix="trnprof-bench-phases-"))
    try:
        one_round(args.trace, cache, args.tree)  # compiles the rule packs into the cache, as any first command does
        rounds = [one_round(args.trace, cache, args.tree) for _ in range(args.repeat)]
        print(
            f"{args.trace.name}: `trnprof analyze TRACE --format json` of {args.tree}, "
            f"median of {args.repeat} fresh processes"
        )
        report(rounds)
        if args.importtime:
            importtime(args.trace, cache)
    finally:
        shutil.rmtree(cache, ignore_errors=True)


if __name__ == "__main__":
    main()
