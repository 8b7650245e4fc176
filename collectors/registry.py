"""Run factories: how a rule test case gets a run from a collector without the rule engine
importing any collector.

A factory takes the case's `run:` entry (a dict, e.g. `{preset, steps, seed, overrides,
faults}` for `simulate`) and a folder, and writes a run there. The built-in `simulate` factory
is the Trn1 execution model; another package adds its own under the entry-point group
`trnprof.run_factories` (`name = "package.module:function"`) or with `register()`.
"""

from __future__ import annotations

from importlib.metadata import entry_points
from pathlib import Path
from typing import Callable

RunFactory = Callable[[dict, Path], Path]
ENTRY_POINT_GROUP = "trnprof.run_factories"


def _simulate(spec: dict, path: Path) -> Path:
    """A run of the Trn1 execution model: a preset plus overrides and faults (and, with
    `device_profile: true`, its Neuron Explorer device profile)."""
    from . import trn1

    config = trn1.load_config(
        preset=spec["preset"], overrides=list(spec.get("overrides") or []), faults=list(spec.get("faults") or [])
    )
    trn1.simulate(
        config,
        path,
        seed=spec.get("seed"),
        steps=spec.get("steps"),
        overwrite=True,
        device_profile=bool(spec.get("device_profile")),
        device_ranks=spec.get("device_ranks"),
    )
    return path


def _explorer(spec: dict, path: Path) -> Path:
    """A run ingested from a Neuron Explorer profile given inline: `{tables: {Instruction:
    {columns: [...], rows: [[...], ...]}, ...}, rank: N}` (rule tests of the device pack)."""
    import tempfile

    import pyarrow as pa
    import pyarrow.parquet as pq

    from .ingest import ingest

    with tempfile.TemporaryDirectory(prefix="trnprof-explorer-case-") as folder:
        for table, data in (spec.get("tables") or {}).items():
            rows = [dict(zip(data["columns"], row)) for row in data["rows"]]
            pq.write_table(pa.Table.from_pylist(rows), Path(folder) / f"{table}.parquet")
        ingest([folder], path, rank=spec.get("rank"), force=True)
    return path


_FACTORIES: dict[str, RunFactory] = {"simulate": _simulate, "explorer": _explorer}


def register(name: str, factory: RunFactory) -> None:
    """Make `factory` the run factory called `name` (replacing any other of that name)."""
    _FACTORIES[name] = factory


def run_factory(name: str) -> RunFactory | None:
    """The factory called `name`: registered, else from an installed entry point, else None."""
    if name not in _FACTORIES:
        for point in entry_points(group=ENTRY_POINT_GROUP, name=name):
            _FACTORIES[name] = point.load()
            break
    return _FACTORIES.get(name)
