"""collective_waits and rank_collective_transfers share one join of the collective events with
`collectives` (view _matched_collective_events): with several ops and groups per rank and step,
and events without a sequence number, each must still equal its per-event definition, derived
here from the events the run was written with, whether the instances are keyed by one number or
matched by their strings."""

from __future__ import annotations

import pandas as pd
import pytest

from trnprof.api import open_run
from trnprof.manifest import new_manifest
from trnprof.runstore import write_run

MS = 1_000_000
RANKS, STEPS = range(4), range(3)
NODE = {0: 0, 1: 0, 2: 1, 3: 1}
# (op, group of each rank, message bytes): a tensor-parallel all-gather within a node and a
# data-parallel all-reduce across nodes, both in every step
COLLECTIVES = (
    ("all_gather", {0: "tp0", 1: "tp0", 2: "tp1", 3: "tp1"}, 1 << 20),
    ("all_reduce", {r: "dp" for r in RANKS}, 8 << 20),
)


def _events() -> list[dict]:
    events = []
    for step in STEPS:
        t0 = step * 100 * MS
        events += [
            {"rank": r, "step": step, "ts": t0, "dur": 100 * MS, "kind": "step", "name": "step", "lane": "host/main"}
            for r in RANKS
        ]
        for index, (op, groups, nbytes) in enumerate(COLLECTIVES):
            for rank in RANKS:
                arrive = t0 + (10 + 40 * index + 3 * rank + step) * MS  # ranks arrive in turn
                events.append(
                    {
                        "rank": rank,
                        "step": step,
                        "ts": arrive,
                        "dur": t0 + (30 + 40 * index) * MS - arrive + 2 * MS * (rank % 2),
                        "kind": "collective",
                        "name": op,
                        "lane": "nc/cc",
                        "coll_op": op,
                        "coll_group": groups[rank],
                        "coll_seq": step,
                        "bytes": nbytes,
                    }
                )
        events.append(
            {
                "rank": 1,
                "step": step,
                "ts": t0 + 95 * MS,
                "dur": MS,
                "kind": "collective",
                "name": "barrier",
                "lane": "nc/cc",
                "coll_op": "barrier",
                "coll_group": "dp",
            }
        )  # no seq
    return events


EVENTS = _events()
# The same instances with sequence numbers 2^45 apart: no pair's instances fit the one-number key
# (view _collective_pairs), so every event is matched by its strings instead
SPREAD = [dict(e, coll_seq=e["coll_seq"] << 45) if e.get("coll_seq") is not None else e for e in EVENTS]


@pytest.fixture(scope="module", params=[(EVENTS, True), (SPREAD, False)], ids=["packed", "by-strings"])
def run(request, tmp_path_factory):
    events, packed = request.param
    path = tmp_path_factory.mktemp("matched") / "run"
    with write_run(path, new_manifest("tests.matched")) as out:
        out.write_events(pd.DataFrame(events))
        out.write_ranks(pd.DataFrame({"rank": list(RANKS), "node": [NODE[r] for r in RANKS]}))
    with open_run(path) as opened:
        assert set(opened.sql("SELECT packed FROM _collective_pairs")["packed"]) == {packed}
        yield opened


def _matched() -> pd.DataFrame:
    """Each sequenced collective event with its instance's last arrival."""
    frame = pd.DataFrame([e for e in EVENTS if e["kind"] == "collective" and e.get("coll_seq") is not None])
    frame["last"] = frame.groupby(["coll_op", "coll_group", "coll_seq"])["ts"].transform("max")
    frame["wait"] = (frame["last"] - frame["ts"]).clip(lower=0).clip(upper=frame["dur"])
    frame["moving"] = frame["ts"] + frame["dur"] - frame[["ts", "last"]].max(axis=1)
    return frame


def _rows(run, sql: str) -> list[tuple]:
    return [tuple(int(v) if not isinstance(v, str) else v for v in row) for row in run.sql(sql).itertuples(index=False)]


def test_collective_waits_sum_every_op_and_group_of_a_rank_step(run):
    sums = _matched().groupby(["rank", "step"]).agg(n=("dur", "size"), dur=("dur", "sum"), wait=("wait", "sum"))
    expected = [
        (r, s, int(row.n), int(row.dur), int(row.wait), int(row.dur - row.wait)) for (r, s), row in sums.iterrows()
    ]
    assert (
        _rows(
            run, "SELECT rank, step, n, collective_ns, wait_ns, transfer_ns FROM collective_waits ORDER BY rank, step"
        )
        == expected
    )


def test_rank_collective_transfers_sum_every_step_of_a_rank_op_and_group(run):
    sums = (
        _matched()
        .groupby(["rank", "coll_op", "coll_group"])
        .agg(n=("dur", "size"), payload=("bytes", "sum"), moving=("moving", "sum"))
    )
    expected = [
        (r, NODE[r], op, group, int(row.n), int(row.payload), int(row.moving))
        for (r, op, group), row in sums.iterrows()
    ]
    assert (
        _rows(
            run,
            "SELECT rank, node, coll_op, coll_group, n, bytes, transfer_ns FROM rank_collective_transfers "
            "ORDER BY rank, coll_op, coll_group",
        )
        == expected
    )
