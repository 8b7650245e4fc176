"""The execution model's sanity properties (issue point 7), on small jobs."""

import pytest

from trnprof.api import open_run
from trnprof.collectors.trn1 import load_config, simulate, summary
from trnprof.model.collectives import Placement, collective_time
from trnprof.model.hardware import INSTANCES

# tiny model on one trn1.32xlarge: tp 2 x dp 16, two microbatches per step
SMALL = ["cluster.instance=trn1.32xlarge", "parallel.tp=2", "batch.global=64", "batch.micro=2", "run.steps=4"]


def run(tmp_path, name, *extra, seed=None):
    cfg = load_config(preset="tiny", overrides=[*SMALL, *extra])
    return open_run(simulate(cfg, tmp_path / name, seed=seed))


STEADY = "step IN (SELECT step FROM step_phases WHERE NOT warmup)"  # the stdlib's steady state


def steady(run_, column):
    """Mean of a step_breakdown column over the steady-state steps (view step_phases), ns."""
    return float(run_.sql(f"SELECT AVG({column}) FROM steady_breakdown").iloc[0, 0])


def test_doubling_nodes_at_fixed_global_batch_lowers_step_time():
    for preset, nodes in (("llama2-7b", 16), ("gpt3-23b", 32), ("bert-large", 1)):
        one = summary(load_config(preset=preset, overrides=[f"cluster.nodes={nodes}"]))
        two = summary(load_config(preset=preset, overrides=[f"cluster.nodes={2 * nodes}"]))
        assert two["step_time_s"] < one["step_time_s"], preset


@pytest.mark.parametrize(
    "where",
    [
        Placement(size=8, per_node=8, nodes=1, same_chip=False),
        Placement(size=2, per_node=2, nodes=1, same_chip=True),
        Placement(size=64, per_node=4, nodes=16, same_chip=False),
    ],
)
@pytest.mark.parametrize("op", ["all_reduce", "all_gather", "reduce_scatter"])
def test_bigger_messages_take_longer(where, op):
    times = [collective_time(op, n, where, INSTANCES["trn1.32xlarge"], 0.8) for n in (1e3, 1e6, 1e8, 1e9)]
    assert all(a < b for a, b in zip(times, times[1:]))


def test_bigger_messages_take_longer_in_a_run(tmp_path):
    small, large = run(tmp_path, "s"), run(tmp_path, "l", "model.seq_len=1024")
    query = (
        "SELECT AVG(bytes) AS b, AVG(transfer_dur) AS t FROM collectives "
        "WHERE coll_op = 'all_gather' AND coll_group LIKE 'tp:%'"
    )
    s, l_ = small.sql(query).iloc[0], large.sql(query).iloc[0]
    assert l_["b"] == 4 * s["b"] and l_["t"] > s["t"]


def test_no_overlap_raises_exposed_communication(tmp_path):
    # wider layers (100 MB of gradients) in several buckets, without noise: only overlap differs
    setup = ["model.hidden=1024", "model.ffn_hidden=4096", "comm.bucket_mb=8", "run.noise=0"]
    base = run(tmp_path, "base", *setup)
    fault = run(tmp_path, "fault", *setup, "faults=[{kind: no_overlap}]")
    assert steady(fault, "exposed_comm") > steady(base, "exposed_comm")
    assert steady(fault, "overlapped_comm") < steady(base, "overlapped_comm")


def test_slow_loader_creates_input_wait(tmp_path):
    one = ["input.workers=1", "input.prefetch=2"]  # a queue the compile step fills for 2 batches only
    base, fault = run(tmp_path, "base", *one), run(tmp_path, "fault", *one, "faults=[{kind: slow_loader, factor: 100}]")
    assert steady(base, "input_wait") == 0
    assert steady(fault, "input_wait") > 0.2 * steady(fault, "dur")
    depth = fault.sql("SELECT AVG(value) FROM counters WHERE name = 'input.queue_depth'").iloc[0, 0]
    assert depth < base.sql("SELECT AVG(value) FROM counters WHERE name = 'input.queue_depth'").iloc[0, 0]


def test_slow_host_makes_the_device_wait_for_the_host(tmp_path):
    base, fault = run(tmp_path, "base"), run(tmp_path, "fault", "faults=[{kind: slow_host, factor: 8}]")
    launch = "SELECT AVG(dur) FROM events WHERE kind = 'host' AND name = 'xla.execute'"
    assert fault.sql(launch).iloc[0, 0] == pytest.approx(8 * base.sql(launch).iloc[0, 0])
    assert steady(fault, "host") > 0.3 * steady(fault, "dur") > steady(base, "host")
    assert steady(fault, "compute") == pytest.approx(steady(base, "compute"), rel=0.05)


def test_a_straggler_slows_its_peers_through_collectives(tmp_path):
    base = run(tmp_path, "base")
    slow = run(tmp_path, "slow", "faults=[{kind: straggler, rank: 5, slowdown: 1.5}]")
    tp_peer = (
        f"SELECT AVG(dur) FROM events WHERE rank = 4 AND kind = 'collective' AND coll_group LIKE 'tp:%' AND {STEADY}"
    )
    assert slow.sql(tp_peer).iloc[0, 0] > 2 * base.sql(tp_peer).iloc[0, 0]
    dp_peer = f"SELECT AVG(dur) FROM events WHERE rank = 9 AND coll_group = 'dp:tp1:pp0' AND {STEADY}"
    assert slow.sql(dp_peer).iloc[0, 0] > base.sql(dp_peer).iloc[0, 0]
    # the collectives view points at the late rank: in its TP group it arrives last, by far
    skew = slow.sql("SELECT AVG(arrival_skew) FROM collectives WHERE coll_group = 'tp:node0:g2'").iloc[0, 0]
    other = slow.sql("SELECT AVG(arrival_skew) FROM collectives WHERE coll_group = 'tp:node0:g3'").iloc[0, 0]
    assert skew > 10 * other
    last = slow.sql("""SELECT rank, COUNT(*) AS n FROM (
        SELECT coll_seq, arg_max(rank, ts) AS rank FROM events WHERE coll_group = 'tp:node0:g2' GROUP BY coll_seq)
        GROUP BY rank ORDER BY n DESC LIMIT 1""").iloc[0]
    assert last["rank"] == 5
    assert steady(slow, "dur") > steady(base, "dur")


def test_zero1_divides_optimizer_state_by_the_dp_degree(tmp_path):
    plain, zero = run(tmp_path, "plain"), run(tmp_path, "zero", "parallel.zero1=true")
    query = "SELECT MAX(value) FROM counters WHERE name = 'hbm.optimizer_state' AND rank = 0"
    assert plain.sql(query).iloc[0, 0] == pytest.approx(16 * zero.sql(query).iloc[0, 0])
    params = "SELECT MAX(value) FROM counters WHERE name = 'hbm.params' AND rank = 0"
    assert plain.sql(params).iloc[0, 0] == zero.sql(params).iloc[0, 0]
    assert (
        zero.sql("SELECT COUNT(*) FROM events WHERE coll_op = 'all_gather' AND coll_group LIKE 'dp:%'").iloc[0, 0] > 0
    )


TABLE_QUERIES = {
    "events": "SELECT * FROM events ORDER BY rank, ts, kind, name, lane",
    "counters": "SELECT * FROM counters ORDER BY rank, ts, name",
    "ranks": "SELECT * FROM ranks ORDER BY rank",
}


def test_same_config_and_seed_give_identical_tables(tmp_path):
    a, b = run(tmp_path, "a", seed=3), run(tmp_path, "b", seed=3)
    for query in TABLE_QUERIES.values():
        assert a.sql(query).equals(b.sql(query))


def test_different_seeds_differ_only_by_noise(tmp_path):
    a, b = run(tmp_path, "a", seed=1), run(tmp_path, "b", seed=2)
    shape = "SELECT rank, kind, name, step, phase, coll_op, coll_group, coll_seq, bytes, flops FROM events ORDER BY ALL"
    assert a.sql(shape).equals(b.sql(shape))
    ts_a, ts_b = (r.sql("SELECT ts, dur FROM events ORDER BY rank, step, kind, name, coll_seq, ts") for r in (a, b))
    assert not ts_a.equals(ts_b)
    step_a, step_b = steady(a, "dur"), steady(b, "dur")
    assert step_a != step_b and abs(step_a / step_b - 1) < 0.05
    noiseless = run(tmp_path, "c", "run.noise=0")
    assert abs(steady(noiseless, "dur") / step_a - 1) < 0.05


def test_pipeline_sends_match_receives(tmp_path):
    r = run(tmp_path, "pp", "parallel.pp=2", "parallel.tp=1", "batch.global=32", "batch.micro=1")
    pairs = r.sql("""SELECT coll_group, coll_seq, COUNT(*) AS n,
                            MAX(CASE WHEN coll_op = 'send' THEN ts + dur END) AS send_end,
                            MAX(CASE WHEN coll_op = 'recv' THEN ts + dur END) AS recv_end
                     FROM events WHERE kind = 'p2p' GROUP BY ALL""")
    assert len(pairs) == 16 * 2 * 2 * 4  # dp links x directions x microbatches x steps
    assert (pairs["n"] == 2).all() and (pairs["recv_end"] >= pairs["send_end"]).all()
    bubble = r.sql("SELECT SUM(exposed_comm) FROM steady_breakdown s JOIN ranks USING (rank) WHERE pp_rank = 1")
    assert bubble.iloc[0, 0] > 0
