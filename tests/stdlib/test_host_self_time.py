"""Host-op self time in the device-idle host time (view host_self_time, CU004's evidence): nested
host ops on one thread never overlap, so each op owns only the instants it is the innermost one,
and the ops' times sum to the `host` time step_breakdown claims."""

from __future__ import annotations

import gzip
import json
import re

import numpy as np
from trnprof import open_run
from trnprof.api import analyze

from tests.conftest import KINETO, write_inline_run

TRIO = ("aten::to", "aten::_to_copy", "aten::copy_")


def _event(ts, dur, kind, name, lane, step=0):
    return {"rank": 0, "ts": ts, "dur": dur, "kind": kind, "name": name, "lane": lane, "step": step}


def test_nested_ops_get_their_self_time_within_the_device_idle_host_time(tmp_path):
    events = [_event(0, 1000, "step", "s", "host/main"),
              _event(0, 600, "host", "aten::to", "host/tid-1"),
              _event(100, 400, "host", "aten::_to_copy", "host/tid-1"),
              _event(200, 200, "host", "aten::copy_", "host/tid-1"),
              _event(250, 100, "compute", "kernel", "gpu/stream-7"),
              _event(700, 200, "host", "logging", "host/tid-2"),
              _event(800, 200, "host", "optimizer", "host/tid-1")]
    # by hand: the device runs [250, 350), nothing runs [600, 700); host time is the rest, 800 ns.
    # aten::to is innermost in [0, 100) and [500, 600): 200; _to_copy in [100, 200) and
    # [400, 500): 200; copy_ in [200, 400) minus the kernel's [250, 350): 100. Two threads run a
    # host op in [800, 900): half each, so logging 100 + 50, optimizer 50 + 100.
    expected = {"aten::to": 200, "aten::_to_copy": 200, "aten::copy_": 100, "logging": 150, "optimizer": 150}
    with open_run(write_inline_run(tmp_path / "run", events)) as run:
        got = dict(run.sql("SELECT name, self_ns FROM host_self_time").itertuples(index=False))
        host = int(run.step_breakdown.iloc[0].host)
    assert got == expected
    assert host == sum(expected.values())


def _painted_self_us(events, tid) -> dict[str, int]:
    """Microseconds each op of `tid` is its thread's innermost host op, over the whole trace: paint
    the ops in start order (outer first), so an inner op overwrites its parent while it runs."""
    ops = sorted((e for e in events if e.get("tid") == tid and e.get("cat") in ("cpu_op", "cuda_runtime")),
                 key=lambda e: (e["ts"], -e["dur"]))
    origin = ops[0]["ts"]
    owner = np.full(int(max(e["ts"] + e["dur"] for e in ops) - origin) + 1, -1)
    for index, e in enumerate(ops):
        owner[int(round(e["ts"] - origin)):int(round(e["ts"] + e["dur"] - origin))] = index
    counts = np.bincount(owner[owner >= 0], minlength=len(ops))
    totals: dict[str, int] = {}
    for index, e in enumerate(ops):
        totals[e["name"]] = totals.get(e["name"], 0) + int(counts[index])
    return totals


def test_a_real_nested_trio_no_longer_each_gets_the_full_share(cli, tmp_path):
    """A100 rank (HTA negative_queue_length_values_check): `aten::to` > `aten::_to_copy` >
    `aten::copy_` nest on the main thread around a blocking copy; each was named with the whole
    767 ms (22 % each). Each op's share is now bounded by its self time on its thread."""
    source = KINETO / "negative_queue_length_values_check"
    with gzip.open(next(source.glob("*.json.gz"))) as handle:
        events = [e for e in json.load(handle)["traceEvents"] if e.get("ph") == "X"]
    tid = next(e["tid"] for e in events if e["name"] == "aten::to")
    painted = _painted_self_us(events, tid)
    full = {name: sum(e["dur"] for e in events if e["name"] == name and e.get("tid") == tid) for name in TRIO}
    assert min(full.values()) > 700e3  # the whole nest, the same ~767 ms for each
    run = tmp_path / "run"
    assert cli("ingest", source, "-o", run).exit_code == 0
    with open_run(run) as opened:
        self_us = dict(opened.sql(f"SELECT name, SUM(self_ns) / 1e3 AS us FROM host_self_time "
                                  f"WHERE lane = 'host/tid-{tid}' GROUP BY name").itertuples(index=False))
        all_us = float(opened.sql("SELECT SUM(self_ns) / 1e3 FROM host_self_time").iloc[0, 0])
        claimed_us = float(opened.sql("SELECT SUM(host) / 1e3 FROM step_breakdown").iloc[0, 0])
    for name in TRIO:
        assert self_us[name] <= painted[name] + 10, name  # 10 us: the trace's rounding
    assert all_us <= claimed_us + 1
    assert sum(self_us[name] for name in TRIO) < 0.1 * claimed_us
    message = next(f.message for f in analyze(run).findings if f.name == "compute.host_bound")
    shares = [int(s) for s in re.findall(r"\((\d+) %\)", message)]
    assert sum(shares) <= 100 and not any(name + " (22 %)" in message for name in TRIO), message
