"""Whole steps only: a step the trace cut at its start or end is left out of every statistic and
rule (view recorded_steps marks it, view steps drops it), `info` says so, and a run with no whole
step is not judged. Copies are told apart by direction (view copy_exposure)."""

from __future__ import annotations

import pytest

from tests.conftest import KINETO, write_inline_run
from trnprof import open_run
from trnprof.api import analyze

MS = 1_000_000


def lanes(events: list[dict]) -> list[dict]:
    """Each event on its kind's lane (steps on the host thread)."""
    return [{"lane": "host/0" if e["kind"] == "step" else f"dev/{e['kind']}", **e} for e in events]


def stepped(rank: int, durations: list[int], start: int = 0) -> list[dict]:
    """Back-to-back steps of `durations` ns on one rank, each full of compute."""
    events, ts = [], start
    for step, dur in enumerate(durations):
        events += [
            {"rank": rank, "step": step, "kind": "step", "name": f"ProfilerStep#{step}", "ts": ts, "dur": dur},
            {"rank": rank, "step": step, "kind": "compute", "name": "matmul", "ts": ts, "dur": dur},
        ]
        ts += dur
    return lanes(events)


def test_a_last_step_cut_by_the_trace_is_left_out(tmp_path):
    # four 10 ms steps, the profiler stopped 0.4 ms into the fifth: the typical step is 10 ms
    run = write_inline_run(tmp_path / "run", stepped(0, [10 * MS] * 4 + [400_000]))
    with open_run(run) as r:
        recorded = r.sql("SELECT step, partial FROM recorded_steps ORDER BY step")
        assert recorded["partial"].tolist() == [False, False, False, False, True]
        assert r.sql("SELECT step FROM steps ORDER BY step")["step"].tolist() == [0, 1, 2, 3]
        info = r.info()
    assert info["step_time_s"]["median"] == pytest.approx(0.010)
    assert info["partial_steps"] == [{"rank": 0, "step": 4, "recorded_s": pytest.approx(0.0004)}]


def test_a_first_step_cut_by_the_trace_is_left_out(tmp_path):
    run = write_inline_run(tmp_path / "run", stepped(0, [2 * MS] + [10 * MS] * 4))
    with open_run(run) as r:
        assert r.sql("SELECT step FROM steps ORDER BY step")["step"].tolist() == [1, 2, 3, 4]


def test_long_and_short_steps_inside_the_run_are_whole(tmp_path):
    # a short step between others, and a long first step (a compile), are real steps
    run = write_inline_run(tmp_path / "run", stepped(0, [80 * MS, 10 * MS, 3 * MS, 10 * MS, 9 * MS]))
    with open_run(run) as r:
        assert not r.sql("SELECT * FROM recorded_steps WHERE partial").size


def test_a_plain_last_step_of_a_run_recompiling_every_other_step_is_whole(tmp_path):
    # steps 0, 2 and 4 compile (80 ms), 1, 3 and 5 take 10 ms: the interior's median of 45 ms
    # would make the last plain step look cut; it is judged against a plain step
    run = write_inline_run(tmp_path / "run", stepped(0, [80 * MS, 10 * MS] * 3))
    with open_run(run) as r:
        assert r.sql("SELECT COUNT(*) AS n FROM steps")["n"][0] == 6


def test_two_steps_a_compile_and_a_step_are_both_whole(tmp_path):
    # only two steps: the first compiles (8x the second); a cut step is 20x shorter than the other
    run = write_inline_run(tmp_path / "run", stepped(0, [80 * MS, 10 * MS]))
    with open_run(run) as r:
        assert r.sql("SELECT COUNT(*) AS n FROM steps")["n"][0] == 2


def test_the_mi250_trace_s_cut_last_step(tmp_path, cli):
    # the profiler closed ProfilerStep#2 49 us after it opened; the whole step 1 takes 9.29 ms
    out = tmp_path / "run"
    assert cli("ingest", KINETO / "amd_trace", "-o", out).exit_code == 0
    with open_run(out) as r:
        info = r.info()
    assert info["step_time_s"]["median"] == pytest.approx(9.288e-3, rel=1e-3)
    assert [p["step"] for p in info["partial_steps"]] == [2]
    result = cli("info", out)
    assert "partial      1 step cut by the trace's start or end" in result.output


def test_a_run_with_no_whole_step_is_not_judged(tmp_path, cli):
    events = [{"rank": 0, "kind": "compute", "name": "matmul", "ts": i * MS, "dur": MS // 2} for i in range(10)]
    run = write_inline_run(tmp_path / "run", lanes(events))
    assert analyze(run).steps == 0
    result = cli("analyze", run)
    assert result.exit_code == 0 and "not judged: the run has no whole step" in result.output
    gated = cli("analyze", run, "--fail-on", "low")
    assert gated.exit_code == 2
    assert "not judged" in gated.stderr


def test_copies_are_told_apart_by_direction(tmp_path):
    # per step: an input copy before compute (exposed 1 ms), a clone after it overlapping a memset
    # for 0.5 ms (the shared instant split evenly), and a read-back under compute (hidden)
    events = []
    for step in range(3):
        t = step * 10 * MS
        events += [
            {"rank": 0, "step": step, "kind": "step", "name": "s", "ts": t, "dur": 10 * MS},
            {"rank": 0, "step": step, "kind": "transfer", "name": "Memcpy HtoD (Pinned -> Device)", "ts": t, "dur": MS},
            {"rank": 0, "step": step, "kind": "compute", "name": "mm", "ts": t + MS, "dur": 6 * MS},
            {
                "rank": 0,
                "step": step,
                "kind": "transfer",
                "name": "Memcpy DtoH (Device -> Pageable)",
                "ts": t + 2 * MS,
                "dur": MS,
            },
            {
                "rank": 0,
                "step": step,
                "kind": "transfer",
                "name": "Memcpy DtoD (Device -> Device)",
                "ts": t + 7 * MS,
                "dur": 2 * MS,
            },
            {
                "rank": 0,
                "step": step,
                "kind": "memory",
                "name": "Memset (Device)",
                "ts": t + 8 * MS + MS // 2,
                "dur": MS,
            },
        ]
    run = write_inline_run(tmp_path / "run", lanes(events))
    with open_run(run) as r:
        got = r.sql(
            "SELECT direction, SUM(copies) AS n, SUM(exposed_ns) / 3 AS exposed FROM copy_exposure GROUP BY direction"
        ).set_index("direction")
        total = r.sql("SELECT SUM(transfer_exposed) / 3 AS t FROM step_breakdown")["t"][0]
    assert got.loc["h2d", "exposed"] == pytest.approx(MS)
    assert got.loc["d2h", "exposed"] == 0  # under compute
    assert got.loc["d2d", "exposed"] == pytest.approx(1.5 * MS + 0.25 * MS)
    assert got.loc["memset", "exposed"] == pytest.approx(0.25 * MS + 0.5 * MS)
    assert got["exposed"].sum() == pytest.approx(total)
    assert got["n"].tolist() and int(got["n"].sum()) == 12
