"""device_segments / step_breakdown against a brute-force reference on random intervals."""

from collections import Counter

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.conftest import write_inline_run
from trnprof import open_run

KINDS = ["compute", "collective", "p2p", "input", "transfer", "memory", "compile", "host", "sync", "annotation"]
NAMES = {"sync": "cudaStreamSynchronize"}  # a host call that blocks on the device
CATEGORY = {
    "compute": "compute",
    "collective": "comm",
    "p2p": "comm",
    "input": "input",
    "transfer": "transfer",
    "memory": "transfer",
    "compile": "compile",
    "host": "host",
    "sync": "host_sync",
}
# device work of any kind first, then the input wait, the host blocked on the device, the host
PRECEDENCE = ["compute", "comm", "transfer", "input", "host_sync", "host", "compile"]
BUCKET = {
    "compute": "compute",
    "comm": "exposed_comm",
    "input": "input_wait",
    "host": "host",
    "host_sync": "host_sync",
    "transfer": "transfer_exposed",
    "compile": "compile",
}

interval = st.tuples(st.integers(0, 1), st.integers(0, 120), st.integers(0, 40), st.sampled_from(KINDS))
steps = st.lists(st.integers(1, 40), min_size=1, max_size=4)  # step lengths, laid end to end with gaps


def _event(rank, ts, dur, kind):
    return {
        "rank": rank,
        "ts": ts,
        "dur": dur,
        "kind": "host" if kind == "sync" else kind,
        "name": NAMES.get(kind, kind),
        "lane": "x",
    }


def brute_force(intervals, step_windows):
    """Unit-by-unit: which categories cover each nanosecond, then bucket by precedence."""
    expected = {}
    for rank, step, start, end in step_windows:
        row = Counter()
        for t in range(start, end):
            covering = {CATEGORY[k] for r, s, d, k in intervals if r == rank and s <= t < s + d and k in CATEGORY}
            if "comm" in covering:
                row["collective"] += 1
            first = next((c for c in PRECEDENCE if c in covering), None)
            row[BUCKET[first] if first else "idle"] += 1
        row["dur"] = end - start
        expected[(rank, step)] = row
    return expected


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(intervals=st.lists(interval, max_size=25), step_lengths=steps)
def test_step_breakdown_matches_brute_force(tmp_path_factory, intervals, step_lengths):
    windows, t = [], 0
    for step, length in enumerate(step_lengths):
        for rank in (0, 1):
            windows.append((rank, step, t, t + length))
        t += length + 5
    events = [_event(r, s, d, k) for r, s, d, k in intervals]
    events += [
        {"rank": r, "ts": a, "dur": b - a, "kind": "step", "name": "step", "lane": "host/main", "step": s}
        for r, s, a, b in windows
    ]
    path = write_inline_run(tmp_path_factory.mktemp("iv") / "run", events, ranks=2)
    with open_run(path) as run:
        got = {(row.rank, row.step): row for row in run.step_breakdown.itertuples()}
        whole = set(run.sql("SELECT rank, step FROM steps").itertuples(index=False, name=None))
    # the breakdown of every whole step (which edge steps the trace cut: tests/stdlib/test_whole_steps.py)
    expected = brute_force(intervals, [w for w in windows if (w[0], w[1]) in whole])
    assert set(got) == set(expected)
    for key, row in expected.items():
        actual = got[key]
        for column in (
            "dur",
            "compute",
            "collective",
            "exposed_comm",
            "input_wait",
            "host_sync",
            "host",
            "transfer_exposed",
            "compile",
            "idle",
        ):
            assert getattr(actual, column) == row[column], (key, column)
        assert actual.overlapped_comm == row["collective"] - row["exposed_comm"]
        assert actual.dur == (
            actual.compute
            + actual.exposed_comm
            + actual.input_wait
            + actual.host_sync
            + actual.host
            + actual.transfer_exposed
            + actual.compile
            + actual.idle
        )


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(intervals=st.lists(interval, min_size=1, max_size=25))
def test_device_segments_cover_exactly_the_union(tmp_path_factory, intervals):
    events = [_event(r, s, d, k) for r, s, d, k in intervals]
    path = write_inline_run(tmp_path_factory.mktemp("seg") / "run", events, ranks=2)
    with open_run(path) as run:
        segments = run.view("device_segments")
    for rank in (0, 1):
        covered = {t for r, s, d, k in intervals if r == rank and k in CATEGORY for t in range(s, s + d)}
        mine = segments[segments["rank"] == rank]
        assert int(mine["dur"].sum()) == len(covered)
        for category, column in (
            ("compute", "n_compute"),
            ("comm", "n_comm"),
            ("input", "n_input"),
            ("host", "n_host"),
            ("host_sync", "n_host_sync"),
        ):
            expected = {
                t for r, s, d, k in intervals if r == rank and CATEGORY.get(k) == category for t in range(s, s + d)
            }
            assert int(mine.loc[mine[column] > 0, "dur"].sum()) == len(expected)
