"""Call sites of the host's blocking calls (view host_sync_calls, CU006's evidence): the host
events around each blocking call on its thread, innermost three, outermost first. Profilers
record ops with the same start and length (microsecond clocks), so their order is decided the
one way host_self_time decides it: the same answer whatever order the trace lists them in."""

from __future__ import annotations

import itertools

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.conftest import write_inline_run
from trnprof import batches, open_run


def _event(ts, dur, kind, name, lane="host/tid-1"):
    return {"rank": 0, "ts": ts, "dur": dur, "kind": kind, "name": name, "lane": lane, "step": 0}


CALL = _event(300, 100, "host", "cudaMemcpyAsync")
AROUND = [
    _event(0, 600, "host", "train_step"),
    _event(100, 400, "host", "aten::to"),  # aten::to and aten::_to_copy start and end
    _event(100, 400, "host", "aten::_to_copy"),  # together: the trace cannot say which is inside
    _event(200, 250, "host", "aten::copy_"),
    _event(700, 50, "host", "aten::add"),
]  # after the call: not around it


def _sites(path):
    with open_run(path) as run:
        return run.sql("SELECT site, name, dur FROM host_sync_calls").to_dict("records")


def test_sites_are_the_innermost_three_outermost_first_in_any_listing_order(tmp_path):
    step = _event(0, 1000, "step", "s", "host/main")
    seen = []
    for k, order in enumerate(itertools.permutations(AROUND[1:4])):
        events = [step, AROUND[0], *order, AROUND[4], CALL]
        seen.append(_sites(write_inline_run(tmp_path / f"run{k}", events)))
    # three deepest: the tied pair as host_self_time nests it (by name, the first outside), then copy_
    expected = [{"site": "aten::_to_copy > aten::to > aten::copy_", "name": "cudaMemcpyAsync", "dur": 100}]
    assert all(sites == expected for sites in seen), seen


SYNC_NAMES = ("cudaMemcpyAsync", "cudaStreamSynchronize", "aten::item")


def _nest(draw, lo, hi, depth, out):
    """Calls nested within [lo, hi): siblings side by side, each maybe holding calls of its own;
    a child may start and end with its parent (profilers' microsecond clocks)."""
    t = lo
    while depth < 6 and t < hi and draw(st.booleans()):
        start = draw(st.integers(t, hi - 1))
        end = draw(st.integers(start + 1, hi))
        name = draw(st.sampled_from(("train.py(9): step", "aten::to", "aten::_to_copy", "aten::copy_") + SYNC_NAMES))
        out.append((start, end, name))
        _nest(draw, start, end, depth + 1, out)
        t = end


def _containment_sites(calls):
    """The reference: for each blocking call, the non-blocking calls of its thread that start no
    later and end no earlier, outermost first (longer first; equal spans by name), innermost three."""
    sites = []
    for lane, start, end, name in calls:
        if name not in SYNC_NAMES:
            continue
        around = sorted(
            (s, -e, n) for ln, s, e, n in calls if ln == lane and n not in SYNC_NAMES and s <= start and e >= end
        )
        sites.append({"site": " > ".join(n for _, _, n in around[-3:]) or name, "name": name, "dur": end - start})
    return sorted(sites, key=lambda r: (r["site"], r["name"], r["dur"]))


@settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(data=st.data())
def test_sites_are_the_enclosing_calls_of_the_same_thread(tmp_path_factory, data):
    """Random call trees on two threads that overlap in time: each blocking call's site holds
    only its own thread's enclosing non-blocking calls, past enclosing blocking ones (`.item()`
    around its copy), however deep the stack."""
    calls = []
    for lane in ("host/tid-1", "host/tid-2"):
        nested = []
        _nest(data.draw, 0, 200, 0, nested)
        calls += [(lane, s, e, n) for s, e, n in nested]
    events = [_event(0, 1000, "step", "s", "host/main")]
    events += [_event(s, e - s, "host", n, lane) for lane, s, e, n in calls]
    path = write_inline_run(tmp_path_factory.mktemp("nest") / "run", events)
    got = sorted(_sites(path), key=lambda r: (r["site"], r["name"], r["dur"]))
    assert got == _containment_sites(calls)


def test_each_rank_nests_alone_whether_its_batch_holds_one_rank_or_all(tmp_path, monkeypatch):
    """The stack of a thread never reaches into another rank's thread of the same name, in one
    batch of ranks or one rank per batch (`trnprof/batches.py`): each rank's sites are its own."""
    calls = {
        0: [(0, 600, "train_step"), (100, 500, "aten::to"), (300, 400, "cudaMemcpyAsync")],
        1: [(50, 700, "optimizer.step"), (300, 400, "cudaStreamSynchronize")],  # rank 0's aten::to spans it
        2: [(300, 400, "aten::item"), (0, 900, "log")],
    }
    events = [dict(_event(0, 1000, "step", "s", "host/main"), rank=r) for r in calls]
    events += [dict(_event(s, e - s, "host", n), rank=r) for r, nest in calls.items() for s, e, n in nest]
    path = write_inline_run(tmp_path / "run", events)
    monkeypatch.setenv("TRNPROF_CACHE", "off")
    expected = {0: "train_step > aten::to", 1: "optimizer.step", 2: "log"}
    for share in (1e6, 1e-12):  # the whole run in one batch; each rank its own
        monkeypatch.setattr(batches, "BATCH_SHARE", share)
        with open_run(path) as run:
            got = dict(run.sql("SELECT rank, site FROM host_sync_calls").itertuples(index=False))
        assert got == expected, share
