"""The diff_support stdlib views on a tiny inline run: steady steps only, per-rank means, lane
classes without thread ids, collective size classes, memory at the peak by category."""

from __future__ import annotations

import pytest

from tests.conftest import write_inline_run
from trnprof.api import open_run

MS = 1_000_000


def _events():
    events = []
    for rank in (0, 1):
        for step in range(3):
            t0 = step * 100 * MS
            events.append(
                {
                    "rank": rank,
                    "ts": t0,
                    "dur": 100 * MS,
                    "kind": "step",
                    "name": "train_step",
                    "lane": "host/main",
                    "step": step,
                }
            )
            compute = (20 + 10 * rank) * MS
            events.append(
                {
                    "rank": rank,
                    "ts": t0,
                    "dur": compute,
                    "kind": "compute",
                    "name": "aten::mm",
                    "lane": f"host/tid-{4711 + rank}",
                    "step": step,
                }
            )
            events.append(
                {
                    "rank": rank,
                    "ts": t0 + 40 * MS,
                    "dur": 10 * MS,
                    "kind": "collective",
                    "name": "all_reduce",
                    "lane": "nc/cc",
                    "step": step,
                    "coll_op": "all_reduce",
                    "coll_group": "dp",
                    "coll_seq": step,
                    "coll_ranks": 2,
                    "bytes": 3 << 20,
                }
            )
        events.append(
            {
                "rank": rank,
                "ts": 0,
                "dur": 5 * MS,
                "kind": "compile",
                "name": "neuronx-cc",
                "lane": "host/compiler",
                "step": 0,
            }
        )
    return events


@pytest.fixture(scope="module")
def run(tmp_path_factory):
    counters = [
        {"rank": r, "ts": t, "name": f"hbm.{cat}", "value": v * (1 + r), "unit": "bytes"}
        for r in (0, 1)
        for t, scale in ((0, 1), (150 * MS, 2))
        for cat, v in (("params", 100 * scale), ("activations", 50 * scale))
    ]
    path = write_inline_run(tmp_path_factory.mktemp("views") / "run", _events(), counters=counters)
    with open_run(path) as opened:
        yield opened


def test_steady_step_means_average_ranks_over_steady_steps(run):
    frame = run.sql("SELECT * FROM steady_step_means ORDER BY step")
    assert list(frame["step"]) == [1, 2]  # step 0 compiled: warm-up
    assert list(frame["ranks"]) == [2, 2]
    assert frame["compute"].tolist() == [25 * MS, 25 * MS]  # ranks compute 20 and 30 ms
    assert frame["exposed_comm"].tolist() == [10 * MS, 10 * MS]


def test_op_totals_mask_thread_ids_and_skip_warmup(run):
    frame = run.sql("SELECT * FROM steady_op_totals WHERE kind = 'compute' ORDER BY step")
    assert frame["lane"].tolist() == ["host/tid-*", "host/tid-*"]  # both ranks' threads in one class
    assert frame["n"].tolist() == [2, 2] and frame["dur"].tolist() == [50 * MS, 50 * MS]
    assert run.sql("SELECT COUNT(*) AS n FROM steady_op_totals WHERE kind IN ('step', 'compile')")["n"][0] == 0


def test_collective_classes_use_the_power_of_two_below(run):
    frame = run.sql("SELECT * FROM steady_collective_classes")
    assert frame[["coll_op", "size_class", "n"]].values.tolist() == [["all_reduce", 2 << 20, 2]]


def test_peak_memory_by_category_is_the_largest_rank(run):
    frame = run.sql("SELECT * FROM peak_memory_categories ORDER BY category")
    assert frame["category"].tolist() == ["activations", "params"]
    assert frame["bytes"].tolist() == [200, 400] and frame["peak_bytes"].tolist() == [600, 600]
