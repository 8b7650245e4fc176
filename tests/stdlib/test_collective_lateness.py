"""collective_lateness against its definition, derived here from the events the run was written
with: per rank and instance (op, group, sequence number), the rank's arrival (its first event's
start) minus the median arrival of the instance's other ranks, summed per rank and step. The view
keys an instance by one number where a pair's sequence numbers span less than 2^39 and numbers
the instances of any other pair: both keys must give the definition's rows."""

from __future__ import annotations

import random
import statistics
from collections import defaultdict

import pandas as pd
import pytest

from trnprof import parts
from trnprof.api import open_run
from trnprof.manifest import new_manifest
from trnprof.runstore import write_run

MS = 1_000_000
RANKS = range(5)
PAIRS = (("all_reduce", "dp"), ("all_gather", "tp0"), ("reduce_scatter", "tp0"))


def _events(seqs: dict[tuple[str, str], list[int]], seed: int) -> list[dict]:
    """Collective events of every pair's instances (the given sequence numbers, in time order), with
    tied arrivals, ranks missing from some instances and a rank with two events of one instance."""
    rng = random.Random(seed)
    events, t0 = [], 0
    for index in range(max(len(s) for s in seqs.values())):
        step = index // 2
        for op, group in PAIRS:
            if index >= len(seqs[op, group]):
                continue
            seq = seqs[op, group][index]
            present = [r for r in RANKS if rng.random() > 0.15]
            for rank in present:
                arrive = t0 + rng.choice((0, 1, 1, 2, 5, 9)) * MS  # ties on purpose
                copies = 2 if rng.random() < 0.1 else 1
                for copy in range(copies):
                    start = arrive + copy * 3 * MS
                    events.append(
                        {
                            "rank": rank,
                            "step": step,
                            "ts": start,
                            "dur": rng.randint(1, 12) * MS,
                            "kind": "collective",
                            "name": op,
                            "lane": "nc/cc",
                            "coll_op": op,
                            "coll_group": group,
                            "coll_seq": seq,
                        }
                    )
            t0 += 20 * MS
    return events


def _expected(events: list[dict]) -> list[tuple]:
    """(rank, step, instances, late_ns, max_late_ns, waited_ns) from the view's definition."""
    arrivals = defaultdict(dict)  # instance -> rank -> (step, first start, last end)
    for e in events:
        key = (e["coll_op"], e["coll_group"], e["coll_seq"])
        step, ts, end = arrivals[key].get(e["rank"], (e["step"], e["ts"], e["ts"] + e["dur"]))
        arrivals[key][e["rank"]] = (min(step, e["step"]), min(ts, e["ts"]), max(end, e["ts"] + e["dur"]))
    sums = defaultdict(lambda: [0, 0.0, None, 0])
    for ranks in arrivals.values():
        if len(ranks) < 2:
            continue
        last = max(ts for _, ts, _ in ranks.values())
        for rank, (step, ts, end) in ranks.items():
            others = [t for r, (_, t, _) in ranks.items() if r != rank]
            late = ts - statistics.median(others)
            row = sums[rank, step]
            row[0] += 1
            row[1] += late
            row[2] = late if row[2] is None else max(row[2], late)
            row[3] += min(last, end) - ts
    return [(r, s, n, late, top, waited) for (r, s), (n, late, top, waited) in sorted(sums.items())]


def _lateness(path, events: list[dict]) -> list[tuple]:
    with write_run(path, new_manifest("tests.lateness")) as out:
        out.write_events(pd.DataFrame(events))
        out.write_ranks(pd.DataFrame({"rank": list(RANKS), "node": [0] * len(RANKS)}))
    with open_run(path) as run:
        frame = run.sql(
            "SELECT rank, step, instances, late_ns, max_late_ns, waited_ns FROM collective_lateness ORDER BY rank, step"
        )
    return [
        (int(r), int(s), int(n), float(late), float(top), int(w))
        for r, s, n, late, top, w in frame.itertuples(index=False)
    ]


SMALL = {pair: list(range(12)) for pair in PAIRS}
SPREAD = {  # sequence numbers no one-number key can hold: negative, and spans past 2^39 and 2^62
    PAIRS[0]: [-(2**62), -5, 0, 7, 2**40, 2**45, 2**50, 2**62, 2**63 - 1, 3, 4, 5],
    PAIRS[1]: list(range(12)),
    PAIRS[2]: [2**40 + i for i in range(12)],  # far from zero, a small span: one number still
}


@pytest.mark.parametrize("seqs", [SMALL, SPREAD], ids=["packed-keys", "numbered-instances"])
@pytest.mark.parametrize("seed", [0, 1, 2])
def test_lateness_is_each_arrival_against_the_median_of_the_other_ranks(tmp_path, monkeypatch, seqs, seed):
    monkeypatch.setenv("TRNPROF_CACHE", "off")
    events = _events(seqs, seed)
    assert _lateness(tmp_path / "run", events) == _expected(events)


@pytest.mark.parametrize("seqs", [SMALL, SPREAD], ids=["packed-keys", "numbered-instances"])
def test_lateness_computed_in_parts_by_sequence_number_is_the_same(tmp_path, monkeypatch, seqs):
    """A large run computes the collective half in parts (trnprof/parts.py): every instance in
    one part whole, the parts' rows summed per rank and step by the view."""
    monkeypatch.setenv("TRNPROF_CACHE", "off")
    monkeypatch.setattr(parts, "part_count", lambda con, schema, budget: 4)
    passes = []
    schema = parts.part_schema
    monkeypatch.setattr(parts, "part_schema", lambda *args: passes.append(args[-1]) or schema(*args))
    events = _events(seqs, 3)
    assert _lateness(tmp_path / "run", events) == _expected(events)
    assert len(passes) == 4
