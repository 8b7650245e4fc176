"""Call sites of the host's blocking calls (view host_sync_calls, CU006's evidence): the host
events around each blocking call on its thread, innermost three, outermost first. Profilers
record ops with the same start and length (microsecond clocks), so their order is decided the
one way host_self_time decides it: the same answer whatever order the trace lists them in."""

from __future__ import annotations

import itertools

from trnprof import open_run

from tests.conftest import write_inline_run


def _event(ts, dur, kind, name, lane="host/tid-1"):
    return {"rank": 0, "ts": ts, "dur": dur, "kind": kind, "name": name, "lane": lane, "step": 0}


CALL = _event(300, 100, "host", "cudaMemcpyAsync")
AROUND = [_event(0, 600, "host", "train_step"),
          _event(100, 400, "host", "aten::to"),          # aten::to and aten::_to_copy start and end
          _event(100, 400, "host", "aten::_to_copy"),    # together: the trace cannot say which is inside
          _event(200, 250, "host", "aten::copy_"),
          _event(700, 50, "host", "aten::add")]          # after the call: not around it


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
