"""A run itself: is it whole (`trnprof check`), what it holds (`trnprof info`), and SQL over it
(`trnprof query`)."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from ..errors import TrnprofError

if TYPE_CHECKING:
    from ..integrity import Verdict


def check(run: str | Path, *, repair: bool = False, on_repair=None) -> Verdict:
    """Verify a run in full, its derived/ cache included (`trnprof check`). repair: first undo
    what an interrupted writer left (an old copy is removed only beside a whole run) and remove
    the cache's bad entries and links. Each repair line goes to `on_repair` as it happens, so a
    kept copy is named before anything can fail; without it, the kept copies join the error."""
    from .. import derived
    from ..integrity import verify
    from ..manifest import read_manifest
    from ..runstore import recover

    run = Path(run)
    repaired = recover(run) if repair else []
    for line in repaired:
        (on_repair or (lambda _: None))(line)
    try:
        manifest = read_manifest(run, check_files=False)
    except TrnprofError as exc:
        kept = [] if on_repair else [line for line in repaired if line.startswith("kept ")]
        raise TrnprofError("; ".join([str(exc)] + kept)) from None
    if repair:
        for line in _repair_cache(run):
            repaired.append(line)
            (on_repair or (lambda _: None))(line)
    verdict = verify(run, manifest)
    verdict.problems += [problem for problem, _ in derived.cache_problems(run)]
    verdict.repaired = repaired
    return verdict


def _repair_cache(run: Path) -> list[str]:
    """Remove the cache's bad entries and links (never what a link points to)."""
    from .. import derived

    done = []
    for problem, path in derived.cache_problems(run):
        derived.remove(path)
        done.append(f"removed {path.relative_to(run)} from the cache: {problem}")
    return done


def run_info(run: str | Path, *, threads: int | None = None) -> dict:
    """What the run holds (`trnprof info --format json`): world size, steps, step time,
    throughput, MFU, warm-up and long steps, event and counter counts, time span."""
    from ..engines import open_run

    with open_run(run, threads=threads) as opened:
        return opened.info()


def query(run: str | Path, sql: str, *, unsafe: bool = False, timeout: float | None = None, threads: int | None = None):
    """The result of `sql` over the run at `run` as a DataFrame (`trnprof query`): in the rule
    sandbox (one SELECT over the run's tables and views, no file, setting or extension, at most
    `timeout` seconds, default the rules' 60; Ctrl-C stops it). unsafe: any SQL on the run's
    session, limited only by `timeout` when given."""
    from ..engines import open_run
    from ..rules_engine.engine import DEFAULT_TIMEOUT_S
    from ..rules_engine.sandbox import SandboxError, interruptible, query_run

    with open_run(run, threads=threads) as opened:
        try:
            limit = DEFAULT_TIMEOUT_S if timeout is None else timeout
            if not unsafe and opened.engine == "spark":
                from ..rules_engine.catalog import readable_tables
                from ..rules_engine.spark_sandbox import SparkSandbox  # the optional extra

                return SparkSandbox(opened, set(readable_tables()), cache=[]).query(sql, timeout=limit)
            if not unsafe:
                return query_run(opened, sql, timeout=limit)
            if opened.engine == "duckdb":
                return interruptible(opened.con, lambda: opened.sql(sql), timeout)
            return opened.sql(sql)
        except SandboxError as exc:
            refused = str(exc).startswith("refused") or "Permission Error" in str(exc) or "locked" in str(exc)
            raise TrnprofError(
                f"query failed: {exc}"
                + (" (trnprof query runs one SELECT over the run in the sandbox; --unsafe lifts it)" if refused else "")
            ) from None
