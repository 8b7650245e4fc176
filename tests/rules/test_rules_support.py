"""The stdlib views the rules read (ops, communication, signals, steady_state modules), on tiny inline runs."""

from __future__ import annotations

import msgspec

from tests.conftest import REPO
from trnprof.api import open_run
from trnprof.rules_engine.spec import Inline
from trnprof.rules_engine.testing import write_inline

COLUMNS = ["rank", "kind", "name", "step", "ts", "dur", "coll_op", "coll_group", "coll_seq"]


def _run(path, rows, ranks):
    spec = {"ranks": ranks, "events": {"columns": COLUMNS, "rows": rows}}
    return write_inline(msgspec.convert(spec, Inline), path)


def test_comm_exposure_splits_waits_and_p2p_into_hidden_and_exposed(tmp_path):
    """Ranks 0-2 join an all-reduce at 300, 600 and 800 ns (the last arrival): rank 0 waits 300-800
    under compute until 700, rank 1 waits 600-800 with no compute, rank 2 does not wait; its p2p
    send runs 1200-1500 with compute from 1400."""
    rows = [[rank, "step", "train_step", 0, 0, 2000, None, None, None] for rank in range(3)] + [
        [0, "compute", "matmul", 0, 0, 600, None, None, None],
        [0, "compute", "gelu", 0, 100, 600, None, None, None],  # overlaps the matmul: counted once
        [0, "collective", "all_reduce", 0, 300, 700, "all_reduce", "dp", 0],
        [1, "compute", "matmul", 0, 0, 200, None, None, None],
        [1, "collective", "all_reduce", 0, 600, 400, "all_reduce", "dp", 0],
        [2, "collective", "all_reduce", 0, 800, 200, "all_reduce", "dp", 0],
        [2, "p2p", "send", 0, 1200, 300, "send", "pp", None],
        [2, "compute", "matmul", 0, 1400, 200, None, None, None],
    ]
    with open_run(_run(tmp_path / "run", rows, 3)) as run:
        found = run.sql(
            "SELECT rank, wait_ns, wait_hidden, wait_exposed, p2p_ns, p2p_hidden, p2p_exposed "
            "FROM comm_exposure ORDER BY rank"
        ).values.tolist()
    assert found == [[0, 500, 400, 100, 0, 0, 0], [1, 200, 0, 200, 0, 0, 0], [2, 0, 0, 0, 300, 100, 200]]


def test_comm_exposure_gives_hidden_time_to_waits_first(tmp_path):
    """One rank waits 0-400 with no compute, then its p2p runs 500-800 under compute: the estimate
    from step totals counts the hidden 300 ns as waiting first (the exposed wait, truly 400, reads
    100: low by at most min(wait, overlapped_comm))."""
    rows = [[rank, "step", "train_step", 0, 0, 1000, None, None, None] for rank in range(2)] + [
        [0, "collective", "all_reduce", 0, 0, 500, "all_reduce", "dp", 0],
        [1, "collective", "all_reduce", 0, 400, 100, "all_reduce", "dp", 0],
        [0, "p2p", "send", 0, 500, 300, "send", "pp", None],
        [0, "compute", "matmul", 0, 500, 300, None, None, None],
    ]
    with open_run(_run(tmp_path / "run", rows, 2)) as run:
        found = run.sql(
            "SELECT wait_ns, wait_hidden, wait_exposed, p2p_hidden, p2p_exposed FROM comm_exposure WHERE rank = 0"
        ).values.tolist()
    assert found == [[400, 300, 100, 0, 300]]


def test_signals_are_false_not_null_on_a_run_without_events(cli, tmp_path):
    """neuron-monitor output holds counters only."""
    ingested = cli("ingest", REPO / "tests" / "data" / "neuron" / "neuron_monitor.jsonl", "-o", tmp_path / "run")
    assert ingested.exit_code == 0, ingested.output
    with open_run(tmp_path / "run") as run:
        flags = run.sql("SELECT * FROM signals").iloc[0].to_dict()
    assert all(isinstance(value, bool) for value in flags.values()), flags
    assert not flags["steps"] and not flags["compute"] and not flags["collectives"] and flags["hbm"]
