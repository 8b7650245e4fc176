"""The device views (trnprof/stdlib/device.sql: interval sweeps, stored once per session) give
the rows of the views as issue 36 first wrote them (tests/device/device_views_before.sql:
pairwise interval joins), on a simulated profile with both device faults and on random
profiles full of overlaps, ties, touching and empty intervals. Integers must be equal; floats
agree to a relative 1e-9 (sums taken in another order)."""

from __future__ import annotations

import math
import re
import shutil

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from tests.conftest import REPO
from trnprof import api, derived
from trnprof.collectors.trn1 import load_config, simulate
from trnprof.manifest import new_manifest, read_manifest
from trnprof.runstore import write_run
from trnprof.stdlib import load_views, parse_module

BEFORE = REPO / "tests" / "device" / "device_views_before.sql"
RELATIVE = 1e-9
FAULTS = [{"kind": "sbuf_spill", "fraction": 0.5}, {"kind": "throttle", "utilization": 0.6}]
DEVICE_VIEWS = [view.name for view in load_views() if view.module == "device"]


@pytest.fixture(scope="module")
def faulty(tmp_path_factory):
    path = tmp_path_factory.mktemp("device-equal") / "faulty"
    simulate(load_config(preset="tiny", faults=FAULTS), path, steps=4, seed=0, overwrite=True, device_profile=True)
    return path


def _random_profile(path, seed: int, job: dict) -> None:
    """A run of two trn1 ranks whose device profile holds random intervals: many overlapping,
    some touching or empty, some without an end (read from the duration) or a step."""
    rng = np.random.default_rng(seed)
    tables = {}

    def keys(n):
        return {
            "rank": rng.integers(0, 2, n).astype(np.int32),
            "step": pa.array(rng.choice([1, 2, -1], n), pa.int32()).to_pylist(),
        }

    def timed(n, span=3000, longest=80):
        start = rng.integers(0, span, n)
        dur = rng.integers(0, longest, n)
        end = [None if rng.random() < 0.1 else int(s + d) for s, d in zip(start, dur)]
        return {"start_ts": start, "end_ts": pa.array(end, pa.int64()), "duration_ns": dur}

    def nulls_for_minus_one(table):
        return {k: [None if v == -1 else v for v in col] if k == "step" else col for k, col in table.items()}

    n = 600
    tables["instruction"] = pa.table(
        nulls_for_minus_one(
            {
                **keys(n),
                **timed(n),
                "engine": rng.choice(["tensor", "PE", "Vector", "act", "pool", "sp", "weird"], n),
                "raw_flops": rng.integers(0, 10**6, n),
                "adjusted_flops": rng.integers(0, 10**6, n),
                "flops_transpose": rng.integers(0, 10**4, n),
                "hbm_read_bytes": rng.integers(0, 10**5, n),
                "hbm_write_bytes": rng.integers(0, 10**5, n),
                "sbuf_read_bytes": rng.integers(0, 10**5, n),
                "spill_save_bytes": rng.integers(0, 100, n),
                "spill_reload_bytes": rng.integers(0, 100, n),
            }
        )
    )
    n = 300
    tables["dma_packet"] = pa.table(
        nulls_for_minus_one(
            {
                **keys(n),
                **timed(n, longest=200),
                "queue_name": rng.choice(["qSpillSave0", "qSpillReload1", "qVectorIO0", "qData3"], n),
                "queue_type": rng.choice(["data", "input"], n),
                "transfer_bytes": rng.integers(1, 4096, n),
            }
        )
    )
    n = 40
    tables["cc_op"] = pa.table(
        nulls_for_minus_one(
            {
                **keys(n),
                **timed(n, longest=400),
                "operation": rng.choice(["AllReduce", "AllGather"], n),
                "op_id": np.arange(n),
                "input_size": rng.choice([1024, 4096], n),
                "output_size": rng.choice([1024, 4096], n),
                "bus_bandwidth": rng.random(n) * 1e11,
            }
        )
    )
    windows = {
        (int(r), s, int(t), int(d))
        for r, s, t, d in zip(
            rng.integers(0, 2, 30), rng.choice([1, 2, -1], 30), rng.integers(0, 3000, 30), rng.integers(0, 500, 30)
        )
    }
    rank, step, stamp, duration = zip(*sorted(windows))  # distinct windows: see docs/performance.md
    n = len(rank)
    tables["throttle"] = pa.table(
        nulls_for_minus_one(
            {
                "rank": np.array(rank, np.int32),
                "step": list(step),
                "timestamp": list(stamp),
                "duration": list(duration),
                "k": rng.integers(1, 16, n),
                "n": rng.choice([0, 8, 16], n),
            }
        )
    )
    with write_run(path, new_manifest("tests.device", job=job)) as run:
        run.write_events(
            pd.DataFrame(
                [
                    {"rank": r, "ts": 0, "dur": 4000, "kind": "step", "name": "step 1", "lane": "host/step"}
                    for r in (0, 1)
                ]
            )
        )
        run.write_ranks(pd.DataFrame({"rank": [0, 1], "instance_type": "trn1.32xlarge"}))
        for name, table in tables.items():
            run.write_table(f"{derived.DEVICE_FOLDER}/{name}", table)


@pytest.fixture(scope="module", params=[1, 2, 3])
def random_run(request, faulty, tmp_path_factory):
    path = tmp_path_factory.mktemp("device-random") / "run"
    _random_profile(path, request.param, read_manifest(faulty)["job"])
    return path


def _before_views(con) -> None:
    views = parse_module("device", BEFORE.read_text(encoding="utf-8"))
    names = [view.name for view in views]
    for view in views:
        con.execute(re.sub(r"\b(" + "|".join(names) + r")\b", r"old_\1", view.sql))


def _plain(value):
    if value is None or value is pd.NA or (isinstance(value, float) and math.isnan(value)):
        return None
    return value.item() if isinstance(value, np.generic) else value


def _rows(frame: pd.DataFrame) -> list[tuple]:
    records = [tuple(_plain(v) for v in row) for row in frame.astype(object).itertuples(index=False)]
    return sorted(records, key=lambda r: tuple((v is None, str(v) if isinstance(v, str) else v or 0) for v in r))


def _same(a, b) -> bool:
    if isinstance(a, (int, float)) and isinstance(b, (int, float)) and not isinstance(a, bool):
        return math.isclose(a, b, rel_tol=RELATIVE, abs_tol=0)
    return a == b


def _assert_views_equal(path) -> dict[str, int]:
    counts = {}
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("TRNPROF_CACHE", "off")
        with api.open_run(path) as run:
            _before_views(run.con)
            for name in DEVICE_VIEWS:
                new = run.sql(f"SELECT * FROM {name}")
                old = run.con.execute(f"SELECT * FROM old_{name}").df()
                assert list(new.columns) == list(old.columns), name
                left, right = _rows(new), _rows(old)
                assert len(left) == len(right), f"{name}: {len(left)} rows, were {len(right)}"
                for a, b in zip(left, right):
                    assert all(_same(x, y) for x, y in zip(a, b)), f"{name}: {a} != {b}"
                counts[name] = len(left)
    return counts


def test_simulated_profile_with_both_faults(faulty):
    counts = _assert_views_equal(faulty)
    assert counts["throttling"] and counts["device_spill"] and counts["_device_overlap"]


def test_random_profiles(random_run):
    counts = _assert_views_equal(random_run)
    assert counts["throttling"] and counts["_device_overlap"] > 10


def test_device_views_are_computed_once_and_stored(faulty, monkeypatch):
    """explorer_agreement reads device_units three ways (directly, through engine_activity and
    device_utilization): it is computed once, stored, and read back."""
    monkeypatch.setenv("TRNPROF_CACHE", "off")
    with api.open_run(faulty) as run:
        run.sql("SELECT * FROM explorer_agreement")
        assert all(
            run.is_stored(name)
            for name in (
                "_device_overlap",
                "device_units",
                "engine_activity",
                "device_utilization",
                "explorer_agreement",
            )
        )
        assert not run.is_stored("_device_islands")  # a row per busy stretch: recomputed, never stored


def test_query_sandbox_reads_device_views(faulty, cli):
    """`trnprof query` locks its session to the run's files: the device profile's are among them."""
    result = cli("query", str(faulty), "SELECT COUNT(*) AS n FROM dma_queues", "--format", "json")
    assert result.exit_code == 0, result.output
    assert '"n"' in result.output


def test_changed_device_profile_changes_the_cache_key(faulty, tmp_path):
    path = shutil.copytree(faulty, tmp_path / "run")
    before = derived.run_fingerprint(path, derived.data_files(path))
    table = pq.read_table(path / derived.DEVICE_FOLDER / "throttle.parquet")
    pq.write_table(table.slice(1), path / derived.DEVICE_FOLDER / "throttle.parquet")
    assert derived.run_fingerprint(path, derived.data_files(path)) != before
