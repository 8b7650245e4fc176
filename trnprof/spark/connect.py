"""Connecting to Spark: a local JVM (`local[*]`, the default), a standalone or YARN cluster
(`spark://host:7077`, `yarn`) or a Spark Connect server (`sc://host:15002`), with the user's
`spark.*` settings (`--spark-conf`, the config file's `spark:` section).

One base session per process and master; each run opened on it gets a session of its own
(`newSession()`: its own temporary views, the same executors), so two runs side by side never
see each other's tables.
"""

from __future__ import annotations

import functools
import logging
import os
import re
import warnings
from importlib import resources
from pathlib import Path

from trnprof.cachedir import cache_dir
from trnprof.errors import TrnprofError

DEFAULT_MASTER = "local[*]"
INSTALL_HINT = "pip install 'trnprof[spark]'"
# What every trnprof session sets, before the user's settings (which may override all but the
# last two: results are compared in UTC, and rule SQL must never read files by path).
DEFAULTS = {
    "spark.ui.showConsoleProgress": "false",  # Spark draws it on the terminal: it would garble output
}
FIXED = {
    "spark.sql.session.timeZone": "UTC",
    "spark.sql.runSQLOnFiles": "false",
}
_MASTER = re.compile(r"^(local(\[(\*|\d+)(,\d+)?\])?|spark://\S+|sc://\S+|yarn|k8s://\S+|mesos://\S+)$")


def pyspark():
    """The pyspark module, or one clear error saying how to install it."""
    # trnprof hands Spark Arrow, never pandas: pyspark's warning about pandas versions is moot
    warnings.filterwarnings("ignore", message="PySpark does not yet fully support pandas", category=FutureWarning)
    try:
        import pyspark as module  # noqa: PLC0415 (optional dependency)
        import pyspark.sql  # noqa: F401,PLC0415
    except ImportError:
        raise TrnprofError(f"--engine spark needs pyspark, an optional extra: {INSTALL_HINT}") from None
    _python_log_to_file()
    return module


@functools.cache
def _python_log_to_file() -> None:
    """pyspark's own Python logger of failed queries writes each error with its JVM stack trace
    to stderr: send it to the driver's log file too (trnprof prints one line per error)."""
    try:
        from pyspark.logger import PySparkLogger  # noqa: PLC0415 (pyspark >= 4)
    except ImportError:
        return
    logger = PySparkLogger.getLogger(QUERY_LOGGER)
    for handler in list(logger.handlers):
        logger.removeHandler(handler)
    log = log_path()
    try:
        log.parent.mkdir(parents=True, exist_ok=True)
        logger.addHandler(logging.FileHandler(log, encoding="utf-8", delay=True))
    except OSError:
        logger.addHandler(logging.NullHandler())
    logger.propagate = False


def check_settings(master: str, conf: dict) -> None:
    """One clear error for a master URL or a setting trnprof cannot use."""
    if not _MASTER.match(master or ""):
        raise TrnprofError(
            f"spark master {master!r}: give local[*], local[N], spark://HOST:PORT, sc://HOST:PORT, yarn or k8s://URL"
        )
    for key, value in conf.items():
        if not isinstance(key, str) or not key.startswith("spark."):
            raise TrnprofError(f"spark setting {key!r}: only spark.* settings are read")
        if not isinstance(value, (str, int, float, bool)):
            raise TrnprofError(f"spark setting {key}: give a string or a number, not {type(value).__name__}")
        if key in FIXED and str(value).lower() != FIXED[key].lower():
            raise TrnprofError(f"spark setting {key} is fixed to {FIXED[key]} by trnprof")


LOG_ENV = "TRNPROF_SPARK_LOG"  # where the driver's log goes (default: log_path())
QUERY_LOGGER = "SQLQueryContextLogger"  # pyspark's Python logger of failed queries


def _log_config() -> str:
    return str(resources.files("trnprof.spark") / "log4j2.properties")


def log_path() -> Path:
    """The Spark driver's log file: its warnings, errors and JVM stack traces (the terminal gets
    one line per error). TRNPROF_SPARK_LOG, else spark-driver.log in the cache folder
    (`trnprof.cachedir`: ~/.cache/trnprof by default)."""
    return Path(os.environ.get(LOG_ENV) or cache_dir() / "spark-driver.log")


def _text(value) -> str:
    return str(value).lower() if isinstance(value, bool) else str(value)


@functools.lru_cache(maxsize=4)
def _base(master: str, conf: tuple[tuple[str, str], ...]):
    sql = pyspark().sql
    builder = sql.SparkSession.builder.appName("trnprof")
    builder = builder.remote(master) if master.startswith("sc://") else builder.master(master)
    settings = dict(DEFAULTS)
    if not master.startswith("sc://"):  # a local or cluster driver runs in this process's JVM
        log = log_path()
        log.parent.mkdir(parents=True, exist_ok=True)
        settings["spark.driver.extraJavaOptions"] = (
            f"-Dlog4j.configurationFile={_log_config()} -Dtrnprof.spark.log={log}"
        )
    settings.update(conf)
    settings.update(FIXED)
    for key, value in settings.items():
        builder = builder.config(key, value)
    try:
        session = builder.getOrCreate()
    except Exception as exc:  # JVM missing, cluster unreachable, bad setting: Spark's own first line
        raise TrnprofError(f"cannot start Spark ({master}): {_first_line(exc)}") from None
    return session


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip()
    return text.splitlines()[0][:500] if text else type(exc).__name__


def session(master: str | None = None, conf: dict | None = None):
    """A fresh Spark session for one run (its own temporary views) on the process's base
    session for `master` and `conf`."""
    pyspark()  # one clear error without it, even when a session exists
    master = master or DEFAULT_MASTER
    conf = dict(conf or {})
    check_settings(master, conf)
    base = _base(master, tuple(sorted((k, _text(v)) for k, v in conf.items())))
    if master.startswith("sc://"):  # Spark Connect has no newSession(): a new session of the server
        fresh = pyspark().sql.SparkSession.builder.remote(master).create()
    else:
        fresh = base.newSession()
    for key, value in FIXED.items():
        fresh.conf.set(key, value)
    return fresh
