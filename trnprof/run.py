"""An open run: its tables and the stdlib views by name, on one engine, and several runs side by
side (`RunSet`). The query layer: everything above reads runs through `Run`; `engines.open_run`
opens one on the engine chosen."""

from __future__ import annotations

import abc
import re
from pathlib import Path

import duckdb
import pandas as pd

from . import session, session_tables
from .errors import TrnprofError, first_line
from .info import run_info
from .manifest import read_manifest


def _query(con: duckdb.DuckDBPyConnection, query: str, params=None) -> pd.DataFrame:
    session.prepare(con, query)  # the stdlib views it reads, computed within the memory budget
    try:
        return con.execute(query, params).df() if params is not None else con.sql(query).df()
    except duckdb.Error as exc:
        raise TrnprofError(f"query failed: {first_line(exc)}") from None
    except AttributeError:  # a statement with no result set (e.g. SET)
        return pd.DataFrame()


class Run(abc.ABC):
    """One open run: its tables and the stdlib views by name, on one engine (`open_run`)."""

    engine = ""
    path: Path | str
    manifest: dict

    @abc.abstractmethod
    def sql(self, query: str, params=None) -> pd.DataFrame:
        """Run SQL (DuckDB's dialect, on every engine) over the run's tables and stdlib views."""
        raise NotImplementedError

    @abc.abstractmethod
    def materialize(self, names=session.MATERIALIZABLE) -> "Run":
        """Compute the costly stdlib views once for this session (before many queries)."""
        raise NotImplementedError

    @abc.abstractmethod
    def is_stored(self, view: str) -> bool:
        """Whether `view` is computed already, so reading it is cheap."""
        raise NotImplementedError

    @abc.abstractmethod
    def close(self) -> None:
        raise NotImplementedError

    def view(self, name: str) -> pd.DataFrame:
        if not re.fullmatch(r"[A-Za-z_]\w*", name):
            raise TrnprofError(f"not a view name: {name!r}")
        return self.sql(f"SELECT * FROM {name}")

    def info(self) -> dict:
        return run_info(self)

    @property
    def steps(self) -> pd.DataFrame:
        return self.view("steps")

    @property
    def step_breakdown(self) -> pd.DataFrame:
        return self.view("step_breakdown")

    @property
    def collectives(self) -> pd.DataFrame:
        return self.view("collectives")

    @property
    def memory_timeline(self) -> pd.DataFrame:
        return self.view("memory_timeline")

    @property
    def rank_summary(self) -> pd.DataFrame:
        return self.view("rank_summary")

    def __enter__(self) -> "Run":
        return self

    def __exit__(self, *exc) -> None:
        self.close()


class DuckDBRun(Run):
    """A run in its own DuckDB session (the default engine, and the reference)."""

    engine = "duckdb"

    def __init__(self, path: str | Path, *, threads: int | None = None, memory_limit: str | None = None):
        self.path = Path(path)
        self.manifest = read_manifest(self.path)
        self.con = session.connect(threads, memory_limit)
        session_tables.attach_tables(self.con, self.manifest)
        session.attach_run(self.con, self.path)

    def sql(self, query: str, params=None) -> pd.DataFrame:
        return _query(self.con, query, params)

    def materialize(self, names=session.MATERIALIZABLE) -> "Run":
        session.materialize(self.con, names)
        return self

    def is_stored(self, view: str) -> bool:
        return session.is_stored(self.con, view)

    def close(self) -> None:
        session.close(self.con)


class RunSet:
    """Several runs in one session for comparisons: each run's tables and views live in a
    schema named by its label (`SELECT ... FROM base.step_breakdown JOIN new.step_breakdown`)."""

    def __init__(self, runs: dict[str, str | Path]):
        self.con = session.connect()
        self.manifests = {}
        for label, path in runs.items():
            if not re.fullmatch(r"[A-Za-z_]\w*", label) or label == "main":
                raise TrnprofError(f"run label {label!r}: use letters, digits and _ (not 'main')")
            self.manifests[label] = read_manifest(Path(path))
            session_tables.attach_tables(self.con, self.manifests[label], schema=label)
            session.attach_run(self.con, Path(path), schema=label)

    def sql(self, query: str, params=None) -> pd.DataFrame:
        return _query(self.con, query, params)

    def close(self) -> None:
        session.close(self.con)


def open_runs(runs: dict[str, str | Path]) -> RunSet:
    """Open several runs side by side, each under its label as a SQL schema."""
    return RunSet(runs)
