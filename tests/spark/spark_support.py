"""Shared by the Spark engine's tests: a Spark session in local mode for the module, and the
comparisons that define "equal results" on both engines (docs/scale-out.md)."""

from __future__ import annotations

import math
import shutil
from pathlib import Path

import numpy as np
import pandas as pd

from tests.conftest import REPO
from trnprof.collectors.trn1 import load_config, simulate

# two cores and tiny runs: few shuffle partitions keep each query fast
SPARK_TEST_MASTER = "local[2]"
# 2 GB of driver heap: at 1 GB the views' tasks of the equality tests already spill and, late in
# the whole suite, one ran the heap out (OutOfMemoryError in the next module's first read)
SPARK_TEST_CONF = {"spark.sql.shuffle.partitions": "2", "spark.driver.memory": "2g"}
RELATIVE = 1e-9
# A multi-node run: four pipeline stages on four trn1 nodes, node 2's links 8x slow (p2p sends
# and collectives over EFA, as in the detection table's slow_link case), 8 ranks.
MULTINODE = [
    "model.hidden=1024",
    "model.layers=4",
    "model.ffn_hidden=4096",
    "model.seq_len=1024",
    "batch.micro=1",
    "batch.global=64",
    "cluster.nodes=4",
    "parallel.pp=4",
    "run.steps=5",
]


def sample_copies(folder: Path) -> dict[str, Path]:
    """The shipped sample runs and a simulated multi-node run, in `folder`."""
    runs = {}
    for name in ("synthetic-8rank", "tiny-slow-loader"):
        runs[name] = Path(shutil.copytree(REPO / "sample_traces" / name, folder / name))
    config = load_config(preset="tiny", overrides=MULTINODE, faults=[{"kind": "slow_link", "node": 2, "factor": 8}])
    runs["multinode"] = simulate(config, folder / "multinode")
    return runs


def _plain(value):
    if isinstance(value, np.ndarray):
        return tuple(_plain(v) for v in value.tolist())
    if isinstance(value, (list, tuple)):
        return tuple(_plain(v) for v in value)
    if value is None or (isinstance(value, float) and math.isnan(value)) or value is pd.NA:
        return None
    if isinstance(value, (np.integer, np.floating)):
        return value.item()
    return value


def _sortable(value):
    return (
        value is None,
        str(type(value).__name__ if not isinstance(value, (int, float)) else "n"),
        value if isinstance(value, (int, float)) else str(value),
    )


def rows(frame: pd.DataFrame) -> list[tuple]:
    """The frame's rows as plain Python values, in a canonical order (engines order rows freely)."""
    records = [tuple(_plain(v) for v in row) for row in frame.astype(object).itertuples(index=False)]
    return sorted(records, key=lambda r: tuple(_sortable(v) for v in r))


def values_equal(a, b) -> bool:
    if isinstance(a, bool) or isinstance(b, bool):
        return a == b
    if isinstance(a, (int, float)) and isinstance(b, (int, float)):
        return math.isclose(a, b, rel_tol=RELATIVE, abs_tol=1e-12)
    if isinstance(a, (tuple, list)) and isinstance(b, (tuple, list)):
        return len(a) == len(b) and all(values_equal(x, y) for x, y in zip(a, b))
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(values_equal(a[k], b[k]) for k in a)
    return a == b


def assert_same_rows(spark: pd.DataFrame, duck: pd.DataFrame, what: str) -> None:
    assert list(spark.columns) == list(duck.columns), what
    left, right = rows(spark), rows(duck)
    assert len(left) == len(right), f"{what}: {len(left)} rows on Spark, {len(right)} on DuckDB"
    for a, b in zip(left, right):
        assert values_equal(a, b), f"{what}: Spark row {a} != DuckDB row {b}"


def assert_same_document(spark: dict, duck: dict) -> None:
    """Findings documents equal but for timings: codes, ranks, steps, messages, impacts and
    evidence numbers within RELATIVE."""
    timings = ("seconds", "rule_seconds")
    left = {k: v for k, v in spark.items() if k not in timings}
    right = {k: v for k, v in duck.items() if k not in timings}
    assert [f["code"] for f in left["findings"]] == [f["code"] for f in right["findings"]]
    for a, b in zip(left["findings"], right["findings"]):
        assert values_equal(a, b), f"finding {a['code']} differs:\n{a}\n{b}"
    assert values_equal(left, right)
