import shutil

import pytest

from tests.conftest import REPO, write_inline_run
from trnprof import open_run
from trnprof.stdlib import load_views, parse_module


def test_every_public_view_and_column_is_documented(sample_run):
    views = [v for v in load_views() if v.public]
    assert {"steps", "step_breakdown", "collectives", "memory_timeline", "rank_summary"} <= {v.name for v in views}
    with open_run(sample_run) as run:
        for view in views:
            assert view.doc, f"view {view.name} ({view.module}.sql) has no doc comment"
            actual = list(run.sql(f"DESCRIBE {view.name}")["column_name"])
            assert list(view.columns) == actual, f"{view.name}: documented columns differ from its columns"
            assert all(view.columns.values())


def test_parser_keeps_docs_with_their_view():
    views = parse_module(
        "m",
        "-- about a\n-- @column x  the x\nCREATE VIEW a AS\nSELECT 1 AS x;\n\n"
        "-- about b\nCREATE VIEW b AS SELECT 2 AS y;\n",
    )
    assert [(v.name, v.doc, v.columns) for v in views] == [("a", "about a", {"x": "the x"}), ("b", "about b", {})]


def test_a_semicolon_in_a_comment_does_not_end_the_view():
    views = parse_module(
        "m", "-- about a\nCREATE VIEW a AS\nWITH t AS (  -- one row; then\n    SELECT '--;' AS x\n)\nSELECT x FROM t;\n"
    )
    assert [v.name for v in views] == ["a"] and views[0].sql.endswith("SELECT x FROM t")
    assert "SELECT '--;' AS x" in views[0].sql


def _step(rank, step, ts, dur):
    return {"rank": rank, "ts": ts, "dur": dur, "kind": "step", "name": "step", "lane": "host/main", "step": step}


def _coll(rank, ts, dur, seq, op="all_reduce", nbytes=1_000_000, group="dp", size=4):
    return {
        "rank": rank,
        "ts": ts,
        "dur": dur,
        "kind": "collective",
        "name": op,
        "lane": "nc/cc",
        "step": 0,
        "bytes": nbytes,
        "coll_op": op,
        "coll_group": group,
        "coll_seq": seq,
        "coll_ranks": size,
    }


def test_collectives_are_matched_across_ranks_with_nccl_tests_bandwidth(tmp_path):
    # rank 3 arrives 400 ns late; its own duration (the shortest) is the transfer time
    events = [_coll(r, 100 + (400 if r == 3 else 0), 1000 - (400 if r == 3 else 0), seq=7) for r in range(4)]
    events += [_coll(r, 5000, 500, seq=8, op="all_gather") for r in range(4)]
    with open_run(write_inline_run(tmp_path / "r", events)) as run:
        rows = run.collectives.sort_values("coll_seq").reset_index(drop=True)
    first, second = rows.iloc[0], rows.iloc[1]
    assert first.ranks_seen == 4 and first.arrival_skew == 400 and first.transfer_dur == 600
    assert first.algbw == pytest.approx(1e6 / 600e-9)
    assert first.busbw == pytest.approx(first.algbw * 2 * 3 / 4)
    assert second.busbw == pytest.approx(1e6 / 500e-9 * 3 / 4)


def test_an_instance_is_named_by_the_smallest_of_its_ranks_names(tmp_path):
    # names that share a long prefix (longer than DuckDB inlines) or differ in their first
    # character; an unmatched event (no sequence number) keeps its own name
    names = ["nccl:all_reduce_bucket_0007_backward", "nccl:all_reduce_bucket_0007", "c", "b"]
    events = [{**_coll(r, 100, 1000, seq=7), "name": name} for r, name in enumerate(names)]
    events += [{**_coll(r, 5000, 500, seq=8), "name": name} for r, name in enumerate(names[:2])]
    events += [{**_coll(0, 9000, 50, seq=None), "name": "zz_alone"}, {**_coll(1, 9000, 50, seq=None), "name": "a"}]
    with open_run(write_inline_run(tmp_path / "r", events)) as run:
        rows = run.sql(
            "SELECT COALESCE(coll_seq, -1) AS seq, name, ranks_seen FROM collectives ORDER BY coll_seq NULLS LAST, name"
        )
    assert rows.values.tolist() == [
        [7, "b", 4],
        [8, "nccl:all_reduce_bucket_0007", 2],
        [-1, "a", 1],
        [-1, "zz_alone", 1],
    ]


def test_step_breakdown_buckets_on_a_hand_made_step(tmp_path):
    events = [
        _step(0, 0, 0, 1000),
        {"rank": 0, "ts": 0, "dur": 100, "kind": "input", "name": "next", "lane": "host/loader"},
        {"rank": 0, "ts": 100, "dur": 500, "kind": "compute", "name": "mm", "lane": "nc/tensor"},
        {**_coll(0, 400, 400, seq=1)},  # 200 hidden, 200 exposed
        {"rank": 0, "ts": 850, "dur": 50, "kind": "host", "name": "py", "lane": "host/main"},  # device idle
        {"rank": 0, "ts": 150, "dur": 100, "kind": "host", "name": "launch", "lane": "host/main"},  # under compute
        {"rank": 0, "ts": 50, "dur": 100, "kind": "host", "name": "next", "lane": "host/main"},  # 50 under input
        {
            "rank": 0,
            "ts": 880,
            "dur": 40,
            "kind": "transfer",
            "name": "h2d",
            "lane": "dma/h2d",
        },  # device work: 20 over host
    ]
    with open_run(write_inline_run(tmp_path / "r", events)) as run:
        row = run.step_breakdown.iloc[0]
        summary = run.rank_summary.iloc[0]
    assert (
        row.compute,
        row.collective,
        row.exposed_comm,
        row.overlapped_comm,
        row.input_wait,
        row.host,
        row.transfer_exposed,
        row.compile,
        row.idle,
    ) == (500, 400, 200, 200, 100, 30, 40, 0, 130)
    categories = ("compute", "exposed_comm", "input_wait", "host_sync", "host", "transfer_exposed", "compile", "idle")
    assert sum(row[c] for c in categories) == row.dur
    assert row.overlap_ratio == pytest.approx(0.5)
    assert summary.compute_share == pytest.approx(0.5) and summary.idle_share == pytest.approx(0.13)
    assert summary.host_share == pytest.approx(0.03)


def test_the_host_blocked_on_the_device_is_not_host_work(tmp_path):
    # .cpu() (aten::to) blocks in cudaMemcpyAsync until its copy is done: the host waits for the
    # device (host_sync), the outer op's own time outside the call is host work
    events = [
        _step(0, 0, 0, 1000),
        {"rank": 0, "ts": 0, "dur": 400, "kind": "compute", "name": "gemm", "lane": "gpu/stream-7"},
        {"rank": 0, "ts": 300, "dur": 500, "kind": "host", "name": "aten::to", "lane": "host/tid-1"},
        {"rank": 0, "ts": 350, "dur": 420, "kind": "host", "name": "cudaMemcpyAsync", "lane": "host/tid-1"},
        {"rank": 0, "ts": 700, "dur": 50, "kind": "transfer", "name": "Memcpy DtoH", "lane": "gpu/stream-7"},
    ]
    with open_run(write_inline_run(tmp_path / "r", events)) as run:
        row = run.step_breakdown.iloc[0]
    # 400-800 device idle but for the copy (700-750): aten::to runs 300-800 and blocks 350-770
    assert (row.compute, row.transfer_exposed, row.host_sync, row.host, row.idle) == (400, 50, 320, 30, 200)


def test_memory_views_add_categories_and_compare_with_capacity(tmp_path):
    gib = 1 << 30
    counters = [
        {"rank": 0, "ts": t, "name": f"hbm.{c}", "value": v * gib, "unit": "bytes"}
        for t, values in ((0, (2, 1)), (10, (2, 12)))
        for c, v in zip(("params", "activations"), values)
    ]
    events = [_step(0, 0, 0, 20)]
    with open_run(write_inline_run(tmp_path / "r", events, counters=counters)) as run:
        timeline = run.memory_timeline
        peak = run.view("memory_peak").iloc[0]
    assert set(timeline["category"]) == {"params", "activations"}
    assert peak.peak_bytes == 14 * gib and peak.capacity_bytes == 16 * gib
    assert peak.peak_fraction == pytest.approx(14 / 16)


def test_step_times_take_the_slowest_rank(tmp_path):
    events = [_step(0, 1, 0, 100), _step(1, 1, 0, 300), _step(2, 1, 10, 200)]
    with open_run(write_inline_run(tmp_path / "r", events)) as run:
        row = run.view("step_times").iloc[0]
    assert (row.ranks, row.dur, row.dur_median, row.dur_min) == (3, 300, 200, 100)


def test_several_runs_side_by_side(tmp_path, sample_run):
    from trnprof import open_runs

    other = write_inline_run(tmp_path / "r", [_step(0, 0, 0, 10)])
    runs = open_runs({"base": sample_run, "new": other})
    counts = runs.sql("SELECT (SELECT COUNT(*) FROM base.steps) AS a, (SELECT COUNT(*) FROM new.steps) AS b")
    assert (counts.a[0], counts.b[0]) == (32, 1)


def test_overlapping_steps_are_cut_at_the_next_start(tmp_path):
    events = [
        _step(0, 4, 0, 100),
        _step(0, 5, 60, 100),
        {"rank": 0, "ts": 0, "dur": 160, "kind": "compute", "name": "mm", "lane": "nc/tensor"},
    ]
    with open_run(write_inline_run(tmp_path / "r", events)) as run:
        rows = run.step_breakdown.sort_values("step")
    assert list(rows["dur"]) == [60, 100] and list(rows["compute"]) == [60, 100] and list(rows["idle"]) == [0, 0]


def test_bus_bandwidth_is_null_when_the_group_size_is_unknown(tmp_path):
    events = [{**_coll(0, 0, 100, seq=None, size=None)}]
    with open_run(write_inline_run(tmp_path / "r", events)) as run:
        row = run.collectives.iloc[0]
    assert row.algbw > 0 and row.busbw != row.busbw  # NaN: unknown, not 0


CATEGORIES = ("compute", "exposed_comm", "input_wait", "host_sync", "host", "transfer_exposed", "compile", "idle")


@pytest.mark.parametrize("name", ["synthetic-8rank", "tiny-slow-loader"])
def test_the_categories_sum_to_the_step_on_the_shipped_runs(name, tmp_path):
    copy = shutil.copytree(REPO / "sample_traces" / name, tmp_path / name)  # the derived/ cache goes there
    with open_run(copy) as run:
        frame = run.step_breakdown
        host_events = run.sql("SELECT COUNT(*) AS n FROM events WHERE kind = 'host'")["n"][0]
    assert len(frame) and (frame[list(CATEGORIES)] >= 0).all().all()
    assert (frame[list(CATEGORIES)].sum(axis=1) == frame["dur"]).all()
    # the simulated job's first graph launch of each step runs while the device waits for it
    assert (frame["host"] > 0).any() == (host_events > 0)


def test_the_categories_sum_to_the_step_on_the_ddp_traces(cli, tmp_path):
    source = REPO / "tests" / "data" / "kineto_ddp" / "base"
    assert cli("ingest", source, "-o", tmp_path / "run").exit_code == 0
    with open_run(tmp_path / "run") as run:
        frame = run.step_breakdown
    assert len(frame) and (frame[list(CATEGORIES)].sum(axis=1) == frame["dur"]).all()
    # a CPU-only gloo job: its CPU ops are the compute (collectors/kineto), so no time is host time
    assert (frame["host"] == 0).all() and (frame["compute"] > 0).all()
