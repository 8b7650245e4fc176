import json
import os
import signal
import subprocess
import sys
import time

import pandas as pd
import pyarrow.parquet as pq
import pytest

from tests.conftest import write_inline_run
from trnprof import open_run
from trnprof.errors import NotARunError, TrnprofError
from trnprof.manifest import new_manifest
from trnprof.runstore import STEP_GROUP_ROWS, conform, step_row_groups, write_run
from trnprof.schema import EVENTS, SCHEMA_VERSION

EVENT = {"rank": 0, "ts": 0, "dur": 10, "kind": "compute", "name": "mm", "lane": "nc/tensor"}


def test_layout_is_hive_partitioned_by_rank(tmp_path):
    run = write_inline_run(tmp_path / "r", [EVENT, {**EVENT, "rank": 3, "ts": 5}])
    assert sorted(p.name for p in (run / "events").iterdir()) == ["rank=0", "rank=3"]
    part = pq.read_table(next((run / "events" / "rank=3").glob("*.parquet")))
    assert part.column("ts").to_pylist() == [5]
    manifest = json.loads((run / "trnprof.json").read_text())
    assert manifest["schema_version"] == SCHEMA_VERSION
    assert manifest["time_unit"] == "ns"
    assert manifest["world_size"] == 4
    assert manifest["counts"] == {"events": 2, "counters": 0}


def test_round_trip_keeps_values_and_types(tmp_path):
    events = [{**EVENT, "ts": 2**40 + 7, "step": 3, "bytes": 2**35, "args": '{"k": "v"}'}]
    with open_run(write_inline_run(tmp_path / "r", events)) as run:
        row = run.sql("SELECT * FROM events").iloc[0]
        types = dict(run.sql("DESCRIBE events")[["column_name", "column_type"]].values)
    assert row["ts"] == 2**40 + 7 and row["bytes"] == 2**35 and row["args"] == '{"k": "v"}'
    assert types["rank"] == "INTEGER" and types["ts"] == "BIGINT" and types["coll_seq"] == "BIGINT"


def test_counter_args_are_stored_and_null_when_not_given(tmp_path):
    counters = [
        {"rank": 0, "ts": 1, "name": "hbm.params", "value": 2.0, "args": '{"Addr": 7}'},
        {"rank": 0, "ts": 2, "name": "hbm.params", "value": 3.0},
    ]
    with open_run(write_inline_run(tmp_path / "r", [EVENT], counters=counters)) as run:
        stored = run.con.sql("SELECT args FROM counters ORDER BY ts").fetchall()
    assert stored == [('{"Addr": 7}',), (None,)]
    with open_run(write_inline_run(tmp_path / "empty", [EVENT])) as run:  # no counter files: typed empty view
        assert dict(run.sql("DESCRIBE counters")[["column_name", "column_type"]].values)["args"] == "VARCHAR"


def test_conform_fills_missing_nullable_columns_and_rejects_bad_data():
    table = conform(pd.DataFrame([EVENT]), "events")
    assert table.schema == EVENTS
    assert table.column("phase").null_count == 1
    with pytest.raises(TrnprofError, match="unknown column"):
        conform(pd.DataFrame([{**EVENT, "colour": "red"}]), "events")
    with pytest.raises(TrnprofError, match="required column 'lane'"):
        conform(pd.DataFrame([{k: v for k, v in EVENT.items() if k != "lane"}]), "events")
    with pytest.raises(TrnprofError, match="negative"):
        conform(pd.DataFrame([{**EVENT, "dur": -1}]), "events")
    with pytest.raises(TrnprofError, match="unknown kind 'gpu'"):
        conform(pd.DataFrame([{**EVENT, "kind": "gpu"}]), "events")
    with pytest.raises(TrnprofError, match="events.ts"):
        conform(pd.DataFrame([{**EVENT, "ts": "soon"}]), "events")
    with pytest.raises(TrnprofError, match="beyond"):
        conform(pd.DataFrame([{**EVENT, "ts": 2**63 - 10}]), "events")
    with pytest.raises(TrnprofError, match="negative step"):
        conform(pd.DataFrame([{**EVENT, "step": -1}]), "events")
    counter = {"rank": 0, "ts": 0, "name": "hbm.params", "value": float("inf")}
    with pytest.raises(TrnprofError, match="NaN"):
        conform(pd.DataFrame([counter]), "counters")


def test_failed_writer_leaves_nothing(tmp_path):
    with pytest.raises(RuntimeError):
        with write_run(tmp_path / "r", new_manifest("t")) as run:
            run.write_events(pd.DataFrame([EVENT]))
            raise RuntimeError("collector crashed")
    assert list(tmp_path.iterdir()) == []


def test_run_without_ranks_is_not_committed(tmp_path):
    with pytest.raises(TrnprofError, match="ranks"):
        with write_run(tmp_path / "r", new_manifest("t")) as run:
            run.write_events(pd.DataFrame([EVENT]))
    assert list(tmp_path.iterdir()) == []


def test_existing_output_needs_overwrite_and_only_runs_are_replaced(tmp_path):
    run = write_inline_run(tmp_path / "r", [EVENT])
    with pytest.raises(TrnprofError, match="exists"):
        write_run(run, new_manifest("t"))
    with write_run(run, new_manifest("t2"), overwrite=True) as w:
        w.write_events(pd.DataFrame([EVENT, EVENT]))
        w.write_ranks(pd.DataFrame({"rank": [0]}))
    assert open_run(run).sql("SELECT COUNT(*) AS n FROM events").n[0] == 2
    precious = tmp_path / "thesis"
    precious.mkdir()
    with pytest.raises(NotARunError):
        write_run(precious, new_manifest("t"), overwrite=True)
    assert precious.exists()


KILLED_WRITER = """
import sys, time, pandas as pd
from trnprof.manifest import new_manifest
from trnprof.runstore import write_run
with write_run(sys.argv[1], new_manifest("t")) as run:
    for i in range(10_000):
        run.write_events(pd.DataFrame([{"rank": i % 8, "ts": i, "dur": 1, "kind": "compute",
                                        "name": "x", "lane": "nc/tensor"}]))
        if i == 3:
            print("writing", flush=True)
        time.sleep(0.01)
    run.write_ranks(pd.DataFrame({"rank": range(8)}))
"""


def test_killed_writer_leaves_no_run_that_looks_whole(tmp_path):
    target = tmp_path / "run"
    proc = subprocess.Popen([sys.executable, "-c", KILLED_WRITER, str(target)], stdout=subprocess.PIPE, text=True)
    assert proc.stdout.readline().strip() == "writing"
    time.sleep(0.2)
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait()
    assert not target.exists()
    leftovers = [p for p in tmp_path.iterdir()]
    assert leftovers and all(p.name.startswith(".run.tmp-") for p in leftovers)
    with pytest.raises(NotARunError, match="no trnprof.json"):
        open_run(leftovers[0])
    # the next writer of the same run cleans up after the dead one
    write_inline_run(target, [EVENT])
    assert sorted(p.name for p in tmp_path.iterdir()) == ["run"]


def test_opening_what_is_not_a_run_is_one_clear_error(tmp_path):
    with pytest.raises(NotARunError, match="run not found"):
        open_run(tmp_path / "missing")
    (tmp_path / "file.json").write_text("{}")
    with pytest.raises(NotARunError, match="is a file"):
        open_run(tmp_path / "file.json")
    with pytest.raises(NotARunError, match="no trnprof.json"):
        open_run(tmp_path)
    (tmp_path / "trnprof.json").write_text("{not json")
    with pytest.raises(NotARunError, match="unreadable manifest"):
        open_run(tmp_path)
    (tmp_path / "trnprof.json").write_text(json.dumps({"format": "trnprof.run", "schema_version": 99}))
    with pytest.raises(TrnprofError, match="unsupported run schema_version 99"):
        open_run(tmp_path)


def test_run_with_no_events_opens_with_empty_typed_views(tmp_path):
    with write_run(tmp_path / "r", new_manifest("t")) as run:
        run.write_ranks(pd.DataFrame({"rank": [0, 1]}))
    with open_run(tmp_path / "r") as opened:
        assert opened.sql("SELECT COUNT(*) AS n FROM events").n[0] == 0
        assert opened.step_breakdown.empty
        info = opened.info()
    assert info["world_size"] == 2 and info["steps"] == 0 and info["step_time_s"] is None


def test_files_written_before_a_nullable_column_existed_read_it_as_null(tmp_path):
    run = write_inline_run(tmp_path / "r", [EVENT])
    part = next((run / "events" / "rank=0").glob("*.parquet"))
    pq.write_table(pq.read_table(part).drop_columns(["coll_ranks"]), part)
    manifest = json.loads((run / "trnprof.json").read_text())
    del manifest["parts"]  # as a run written before the manifest listed its files
    (run / "trnprof.json").write_text(json.dumps(manifest))
    with open_run(run) as opened:
        row = opened.sql("SELECT ts, coll_ranks IS NULL AS missing FROM events").iloc[0]
    assert row["ts"] == 0 and bool(row["missing"])


def _stepped_events(per_step: int, steps: int, ranks=(0, 1)) -> list[dict]:
    """Events of `ranks`, in step order, `per_step` a step, then a few outside any step."""
    out = [
        {**EVENT, "rank": rank, "step": step, "ts": (step * per_step + i) * 10, "name": f"op{i % 7}"}
        for rank in ranks
        for step in range(steps)
        for i in range(per_step)
    ]
    return out + [{**EVENT, "rank": ranks[0], "ts": 10**9 + i} for i in range(3)]


@pytest.mark.parametrize("ranks", [(0, 1), (0,)], ids=["two ranks", "one rank (a trace)"])
def test_events_are_cut_into_row_groups_where_the_step_changes(tmp_path, ranks):
    """A reader of some steps skips the other steps' row groups by the step column's statistics;
    rows of one rank (one trace) are written by their own path, to the same layout."""
    per_step = STEP_GROUP_ROWS + 100
    run = write_inline_run(tmp_path / "r", _stepped_events(per_step, 3, ranks))
    assert sorted(p.name for p in (run / "events").iterdir()) == [f"rank={rank}" for rank in ranks]
    for rank in ranks:
        meta = pq.ParquetFile(next((run / "events" / f"rank={rank}").glob("*.parquet"))).metadata
        step = meta.schema.to_arrow_schema().get_field_index("step")
        ranges = [
            (meta.row_group(g).column(step).statistics.min, meta.row_group(g).column(step).statistics.max)
            for g in range(meta.num_row_groups)
            if meta.row_group(g).column(step).statistics.has_min_max
        ]
        assert ranges == [(0, 0), (1, 1), (2, 2)]
    stored = pq.read_table(next((run / "events" / "rank=0").glob("*.parquet")))  # the rows in their order
    written = pd.DataFrame([e for e in _stepped_events(per_step, 3, ranks) if e["rank"] == 0])
    assert stored["ts"].to_pylist() == written["ts"].tolist()
    assert "rank" not in stored.column_names  # the folder's name holds it
    with open_run(run) as opened:
        assert opened.sql("SELECT COUNT(*) AS n FROM events WHERE step = 1")["n"][0] == len(ranks) * per_step
        assert opened.sql("SELECT DISTINCT rank FROM events ORDER BY rank")["rank"].tolist() == list(ranks)


def test_small_steps_share_a_row_group_until_it_holds_enough_rows():
    events = conform(pd.DataFrame(_stepped_events(100, 3 * STEP_GROUP_ROWS // 100)), "events")
    batches = step_row_groups(events).to_batches()
    steps = [set(b.column(b.schema.get_field_index("step")).to_pylist()) for b in batches]
    assert sum(len(b) for b in batches) == events.num_rows
    assert all(len(b) >= STEP_GROUP_ROWS for b in batches[:-1])
    assert all(not (a & b) - {None} for a, b in zip(steps, steps[1:]))  # a step is in one group
