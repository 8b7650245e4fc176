"""Profile: where a cold `analyze` of one run spends its time, view by view.

Runs `analyze` in this process with the derived/ cache off and times each stored stdlib view
where it is computed (the per-batch pass of the rank-local views: each view summed over the
batches; the cross-rank views: once each), in wall and CPU seconds (user + system of the whole
process, so DuckDB's threads count), then the rest (opening the run, the rules, the pricing of
the findings). The load average before and after and the peak RSS are printed beside: on a
shared machine compare shares and CPU seconds, not wall seconds.

    python bench/profile_views.py RUN
"""

from __future__ import annotations

import collections
import os
import resource
import sys
import time

os.environ["TRNPROF_CACHE"] = "off"  # measure the computation, not the derived/ cache

from trnprof import api, batches  # noqa: E402  (after the cache is switched off)


def _cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


def _timed(function, label, totals):
    def timed(*args, **kwargs):
        wall, cpu = time.perf_counter(), _cpu()
        try:
            return function(*args, **kwargs)
        finally:
            totals[label(*args)][0] += time.perf_counter() - wall
            totals[label(*args)][1] += _cpu() - cpu

    return timed


def main() -> None:
    if len(sys.argv) != 2:
        sys.exit(__doc__.strip().splitlines()[-1].strip())
    totals = collections.defaultdict(lambda: [0.0, 0.0])
    # each rank-local view is kept as a table of its batch (the shared sweep too); each
    # cross-rank view is stored once over the run
    batches._keep_as_table = _timed(batches._keep_as_table, lambda con, name: f"batch: {name}", totals)
    batches._store_whole = _timed(batches._store_whole, lambda con, run, name, *_: f"whole: {name}", totals)
    load, wall, cpu = os.getloadavg()[0], time.perf_counter(), _cpu()
    api.analyze(sys.argv[1])
    wall, cpu = time.perf_counter() - wall, _cpu() - cpu
    views = [sum(t[i] for t in totals.values()) for i in (0, 1)]
    print(f"{'part':40s} {'wall s':>8s} {'share':>6s} {'CPU s':>8s}")
    for name, (w, c) in sorted(totals.items(), key=lambda item: -item[1][0]):
        print(f"{name:40s} {w:8.3f} {w / wall:6.1%} {c:8.3f}")
    print(
        f"{'the rest (open, rules, pricing)':40s} {wall - views[0]:8.3f} {(wall - views[0]) / wall:6.1%} "
        f"{cpu - views[1]:8.3f}"
    )
    print(f"{'total':40s} {wall:8.3f} {'':6s} {cpu:8.3f}")
    print(
        f"peak RSS {resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024:.0f} MB, "
        f"load average {load:.1f} before, {os.getloadavg()[0]:.1f} after, {os.cpu_count()} cores"
    )


if __name__ == "__main__":
    main()
