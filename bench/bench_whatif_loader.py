"""Benchmark: whatif on a loader-bound job against the simulator (docs/whatif.md, *A loader-bound
step*).

For each job of trnprof.whatif.validate.LOADER_JOBS and each slow_loader factor: simulate the
job clean and with the fault (seeds 1 and 2, parameters perturbed by set A), then
`whatif CLEAN(seed 1) --set faults=[fault]` against the faulty run of seed 2 (effective step,
wall time per step) and `whatif FAULTY(seed 1) --set faults=[]` against the clean run of seed 2
(typical step, its band, effective step). Prints a Markdown table.

    python bench/bench_whatif_loader.py [--jobs 'tiny, 1 worker;bert-large phase 1']

Target: every error within 3 %, the band holding the clean typical step.
"""

from __future__ import annotations

import argparse
import os
import tempfile
import time
from pathlib import Path

os.environ.setdefault("TRNPROF_CACHE", "off")

from trnprof.api import open_run  # noqa: E402
from trnprof.whatif.document import whatif  # noqa: E402
from trnprof.whatif.validate import LOADER_FACTORS, LOADER_JOBS, simulate_job  # noqa: E402


def views(path) -> tuple[float, float]:
    with open_run(path) as run:
        row = run.sql("SELECT typical, effective FROM step_time_views").iloc[0]
    return float(row["typical"]) / 1e9, float(row["effective"]) / 1e9


def rows(job: str, folder: Path):
    sets, steps, _ = LOADER_JOBS[job]

    def run(factor, seed):
        fault = "{kind: slow_loader, factor: %d}" % factor if factor else None
        return simulate_job(sets + [f"run.seed={seed}"], "A", folder / f"{factor}-{seed}", faults=fault, steps=steps)

    clean = {seed: run(None, seed) for seed in (1, 2)}
    clean_typical, clean_effective = views(clean[2])
    for factor in LOADER_FACTORS[job]:
        faulty = {seed: run(factor, seed) for seed in (1, 2)}
        started = time.perf_counter()
        add = whatif(clean[1], ["faults=[{kind: slow_loader, factor: %d}]" % factor])["predicted"]
        remove = whatif(faulty[1], ["faults=[]"])["predicted"]
        seconds = (time.perf_counter() - started) / 2
        faulty_typical, faulty_effective = views(faulty[2])
        band = remove["band"]
        yield (
            f"| {job} | {factor} | {1e3 * add['effective_step_s']:.2f} | {1e3 * faulty_effective:.2f} | "
            f"{add['effective_step_s'] / faulty_effective - 1:+.2%} | {1e3 * remove['step_time_s']:.2f} | "
            f"{1e3 * clean_typical:.2f} | {remove['step_time_s'] / clean_typical - 1:+.2%} | "
            f"{1e3 * band['low_s']:.2f}..{1e3 * band['high_s']:.2f} | "
            f"{'yes' if band['low_s'] <= clean_typical <= band['high_s'] else 'no'} | "
            f"{remove['effective_step_s'] / clean_effective - 1:+.2%} | {1e3 * faulty_typical:.2f} | {seconds:.1f} |"
        )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--jobs", default=";".join(LOADER_JOBS), help="job names, separated by ';'")
    args = parser.parse_args()
    print(
        "| job | factor | add: predicted effective ms | simulated ms | error | remove: predicted typical ms "
        "| clean typical ms | error | band ms | in band | effective error | faulty typical ms | whatif s |"
    )
    print("|---|---|---|---|---|---|---|---|---|---|---|---|---|")
    with tempfile.TemporaryDirectory() as tmp:
        for job in args.jobs.split(";"):
            for row in rows(job, Path(tmp) / job.replace(" ", "_").replace(",", "")):
                print(row, flush=True)


if __name__ == "__main__":
    main()
