"""A golden test per stdlib view no other test names: one tiny run (three ranks on two nodes,
three steps, an all-reduce the ranks reach at different times, HBM samples), one query per view,
and the rows it must give, derived here from the events and counters the run was written with."""

from __future__ import annotations

import pandas as pd
import pytest

from trnprof.api import open_run
from trnprof.manifest import new_manifest
from trnprof.runstore import write_run

MS = 1_000_000
RANKS, STEPS, STEP_NS = (0, 1, 2), (0, 1, 2), 100 * MS
NODE = {0: 0, 1: 0, 2: 1}
CAPACITY = 16 << 30
COLL_END = 60 * MS  # every rank's all-reduce ends here: the last arrival (rank 2) sets the pace


def _step_events(rank: int, step: int) -> list[dict]:
    t0 = step * STEP_NS
    mm_ns, relu_ns = (20 + 10 * rank) * MS, 5 * MS
    arrive = t0 + (40 + 5 * rank) * MS
    base = {"rank": rank, "step": step}
    return [
        {**base, "ts": t0, "dur": STEP_NS, "kind": "step", "name": "train_step", "lane": "host/main"},
        {
            **base,
            "ts": t0,
            "dur": mm_ns,
            "kind": "compute",
            "name": "aten::mm",
            "lane": "nc/tensor",
            "flops": 1e9,
            "args": '{"dtype": "bfloat16"}',
        },
        {
            **base,
            "ts": t0 + mm_ns,
            "dur": relu_ns,
            "kind": "compute",
            "name": "relu",
            "lane": "nc/vector",
            "args": '{"dtype": "float32"}',
        },
        {
            **base,
            "ts": arrive,
            "dur": t0 + COLL_END - arrive,
            "kind": "collective",
            "name": "all_reduce",
            "lane": "nc/cc",
            "coll_op": "all_reduce",
            "coll_group": "dp",
            "coll_seq": step,
            "coll_ranks": 3,
            "bytes": 4 << 20,
        },
        {**base, "ts": t0 + 90 * MS, "dur": 3 * MS, "kind": "input", "name": "next_batch", "lane": "host/loader"},
    ]


EVENTS = [e for r in RANKS for s in STEPS for e in _step_events(r, s)]
EVENTS += [
    {
        "rank": r,
        "step": 0,
        "ts": 95 * MS,
        "dur": 2 * MS,
        "kind": "compile",
        "name": "neuronx-cc",
        "lane": "host/compiler",
    }
    for r in RANKS
]
COUNTERS = [
    {"rank": r, "ts": s * STEP_NS + MS, "name": f"hbm.{cat}", "value": float(v), "unit": "bytes"}
    for r in RANKS
    for s in STEPS
    for cat, v in (("params", 100 << 20), ("activations", (s + 1) * (r + 1) << 20))
]


@pytest.fixture(scope="module")
def run(tmp_path_factory):
    path = tmp_path_factory.mktemp("golden") / "run"
    with write_run(path, new_manifest("tests.golden")) as out:
        out.write_events(pd.DataFrame(EVENTS))
        out.write_counters(pd.DataFrame(COUNTERS))
        out.write_ranks(
            pd.DataFrame(
                {
                    "rank": list(RANKS),
                    "node": [NODE[r] for r in RANKS],
                    "pp_rank": 0,
                    "instance_type": "trn1.32xlarge",
                    "hbm_capacity_bytes": CAPACITY,
                }
            )
        )
    with open_run(path) as opened:
        yield opened


def _rows(run, sql: str) -> list[tuple]:
    return [tuple(row) for row in run.sql(sql).itertuples(index=False)]


def _events(**match) -> list[dict]:
    return [e for e in EVENTS if all(e.get(k) == v for k, v in match.items())]


def _totals() -> dict[tuple, float]:
    """Device memory per (rank, ts): the sum of that sample's categories."""
    totals: dict[tuple, float] = {}
    for c in COUNTERS:
        totals[(c["rank"], c["ts"])] = totals.get((c["rank"], c["ts"]), 0.0) + c["value"]
    return totals


def _last_arrival(step: int) -> int:
    return max(e["ts"] for e in _events(kind="collective", step=step))


def test_device_intervals_give_every_timed_event_its_category(run):
    category = {"compute": "compute", "collective": "comm", "input": "input", "compile": "compile"}
    expected = sorted(
        (e["rank"], e["ts"], e["ts"] + e["dur"], category[e["kind"]]) for e in EVENTS if e["kind"] in category
    )
    assert _rows(run, "SELECT rank, ts, end_ts, category FROM device_intervals ORDER BY ALL") == expected


def test_memory_totals_sum_the_categories_of_a_sample(run):
    expected = sorted((rank, ts, total, CAPACITY) for (rank, ts), total in _totals().items())
    assert _rows(run, "SELECT rank, ts, bytes, capacity_bytes FROM memory_totals ORDER BY ALL") == expected


def test_step_memory_is_the_largest_total_inside_the_step(run):
    expected = sorted(
        (
            rank,
            step,
            max(t for (r, ts), t in _totals().items() if r == rank and step * STEP_NS <= ts < (step + 1) * STEP_NS),
            CAPACITY,
        )
        for rank in RANKS
        for step in STEPS
    )
    assert _rows(run, "SELECT rank, step, peak_bytes, capacity_bytes FROM step_memory ORDER BY ALL") == expected


def test_memory_at_peak_splits_each_ranks_fullest_sample(run):
    expected = []
    for rank in RANKS:
        peak = max(t for (r, _), t in _totals().items() if r == rank)
        ts = min(ts for (r, ts), t in _totals().items() if r == rank and t == peak)
        expected += [
            (rank, ts, c["name"][4:], c["value"], peak) for c in COUNTERS if c["rank"] == rank and c["ts"] == ts
        ]
    assert _rows(run, "SELECT rank, ts, category, bytes, peak_bytes FROM memory_at_peak ORDER BY ALL") == sorted(
        expected
    )


def test_event_stats_count_and_sum_each_kind(run):
    expected = []
    for rank in RANKS:
        for step in STEPS:
            computes = _events(rank=rank, step=step, kind="compute")
            expected.append(
                (
                    rank,
                    step,
                    len(computes),
                    sum(e["dur"] for e in computes),
                    sum(e.get("flops", 0) for e in computes),
                    sum("flops" in e for e in computes),
                )
            )
    assert _rows(
        run, "SELECT rank, step, n, dur, flops, n_flops FROM event_stats WHERE kind = 'compute' ORDER BY ALL"
    ) == sorted(expected)


def test_compute_dtypes_split_matmuls_and_normalise_the_type(run):
    expected = sorted(
        (e["rank"], e["step"], e["name"] == "aten::mm", "bf16" if e["name"] == "aten::mm" else "fp32", e["dur"])
        for e in _events(kind="compute")
    )
    assert _rows(run, "SELECT rank, step, is_matmul, dtype, dur FROM compute_dtypes ORDER BY ALL") == expected


def test_rank_deviation_compares_each_rank_with_its_peers_lower_median(run):
    steady = [s for s in STEPS if not _events(kind="compile", step=s)]  # a compile makes a warm-up step
    expected = []
    for step in steady:
        compute = {r: sum(e["dur"] for e in _events(rank=r, step=step, kind="compute")) for r in RANKS}
        median = sorted(compute.values())[(len(RANKS) - 1) // 2]
        expected += [
            (r, step, len(RANKS), compute[r], median, pytest.approx((compute[r] - median) / median)) for r in RANKS
        ]
    assert _rows(
        run, "SELECT rank, step, peers, compute, median_compute, compute_dev FROM rank_deviation ORDER BY rank, step"
    ) == sorted(expected, key=lambda row: (row[0], row[1]))


def test_collective_waits_split_waiting_for_the_last_rank_from_moving_data(run):
    expected = []
    for e in _events(kind="collective"):
        wait = min(e["dur"], max(0, _last_arrival(e["step"]) - e["ts"]))
        expected.append((e["rank"], e["step"], 1, e["dur"], wait, e["dur"] - wait))
    assert _rows(
        run, "SELECT rank, step, n, collective_ns, wait_ns, transfer_ns FROM collective_waits ORDER BY ALL"
    ) == sorted(expected)


def test_rank_collective_transfers_time_the_data_movement_per_rank(run):
    expected = []
    for rank in RANKS:
        mine = _events(kind="collective", rank=rank)
        moving = sum(e["ts"] + e["dur"] - max(e["ts"], _last_arrival(e["step"])) for e in mine)
        expected.append((rank, NODE[rank], "all_reduce", "dp", len(mine), sum(e["bytes"] for e in mine), moving))
    assert (
        _rows(
            run,
            "SELECT rank, node, coll_op, coll_group, n, bytes, transfer_ns FROM rank_collective_transfers ORDER BY ALL",
        )
        == expected
    )


def test_collective_groups_say_where_the_members_sit(run):
    members = {e["rank"] for e in _events(kind="collective", coll_group="dp")}
    expected = [("dp", len(members), len({NODE[r] for r in members}), "trn1.32xlarge")]
    assert _rows(run, "SELECT coll_group, ranks, nodes, instance_type FROM collective_groups") == expected
