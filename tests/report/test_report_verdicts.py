"""The report draws what the rules judge: the stragglers heatmap of a balanced 2-rank job has one
tick per rank and a colour scale that keeps noise pale."""

from __future__ import annotations

import pytest

from tests.conftest import DATA
from trnprof.api import open_run
from trnprof.report.sections import stragglers

DDP = DATA / "kineto_ddp" / "base"


def test_the_stragglers_heatmap_has_a_discrete_rank_axis_and_an_anchored_scale(cli, tmp_path):
    assert cli("ingest", DDP, "-o", tmp_path / "run").exit_code == 0
    with open_run(tmp_path / "run") as run:
        spec = stragglers.build(run).chart.to_dict()
        worst = run.sql("SELECT MAX(ABS(step_dev)) AS s, MAX(ABS(compute_dev)) AS c FROM rank_deviation").iloc[0]
    for chart, metric in zip(spec["vconcat"], ("s", "c")):
        encoding = chart["encoding"]
        assert encoding["x"]["axis"]["values"] == [0, 1]  # not -1, 0, 1, 1, 2
        assert encoding["y"]["axis"]["values"] == list(range(2, 10))  # ProfilerStep#2 .. #9
        low, high = encoding["color"]["scale"]["domain"]
        # symmetric, never narrower than +-10 %: the balanced job's few percent stay pale
        assert low == -high and high == pytest.approx(max(0.10, worst[metric]), abs=1e-4)


def test_the_link_peaks_name_the_network_the_instance_has(tmp_path):
    from tests.conftest import write_inline_run
    from trnprof import hardware

    events = [{"rank": 0, "ts": 0, "dur": 10, "kind": "step", "name": "s", "lane": "host/main", "step": 0}]
    for instance, network, gbs in (("trn1.2xlarge", "ENA", 3.125), ("trn1.32xlarge", "EFA", 100.0)):
        path = write_inline_run(tmp_path / instance, events, job={"instance_type": instance})
        with open_run(path) as run:
            peaks = dict(run.sql("SELECT link, bytes_per_s FROM link_peaks").itertuples(index=False))
        assert peaks[f"{network} network per node (inter-node)"] == gbs * 1e9
        assert hardware.lookup(instance)["network_kind"] == network


def test_the_collectives_chart_draws_the_peaks_the_rules_judge_against(tmp_path):
    """Two trn1.32xlarge nodes, tp 4 inside a node, dp 16 across both, node 1's links 8x slow.
    Derived from the hardware table: a tensor-parallel group moves over NeuronLink-v2 (its per-core
    peak); a data-parallel group's 8 ranks per node share the node's 100 GB/s EFA with its 32
    cores, so it reaches at most 100 x 8 / 32 = 25 GB/s. Those are the lines CO001 judges
    against, never the node's whole EFA bandwidth."""
    import re

    from trnprof import hardware
    from trnprof.api import analyze
    from trnprof.collectors.trn1 import load_config, simulate
    from trnprof.report.sections import collectives

    config = load_config(
        preset="tiny",
        overrides=[
            "cluster.instance=trn1.32xlarge",
            "cluster.nodes=2",
            "parallel.tp=4",
            "batch.global=64",
            "run.steps=3",
        ],
        faults=[{"kind": "slow_link", "node": 1, "factor": 8}],
    )
    path = simulate(config, tmp_path / "run")
    table = hardware.lookup("trn1.32xlarge")
    with open_run(path) as run:
        groups = run.sql("""SELECT t.coll_group, COUNT(DISTINCT t.rank) AS ranks, COUNT(DISTINCT r.node) AS nodes
                            FROM rank_collective_transfers AS t JOIN ranks AS r ON r.rank = t.rank
                            GROUP BY t.coll_group""")
        chart = collectives.build(run).chart.to_dict()
    expected = set()
    for group in groups.itertuples(index=False):
        peak = table["node_link_bytes_per_s"]
        if group.nodes > 1:
            peak = min(peak, table["network_bytes_per_s"] * group.ranks / group.nodes / table["cores"])
        expected.add(round(peak / 1e9, 3))
    assert 25.0 in expected and len(expected) == 2
    rule_data = next(layer["data"]["name"] for layer in chart["layer"] if layer["mark"]["type"] == "rule")
    drawn = chart["datasets"][rule_data]
    assert {round(row["gbs"], 3) for row in drawn} == expected
    assert table["network_bytes_per_s"] / 1e9 not in {row["gbs"] for row in drawn}
    assert any("across 2 nodes" in row["label"] and "25.0 GB/s" in row["label"] for row in drawn)
    co001 = next(f for f in analyze(path).findings if f.name == "collectives.low_bus_bandwidth")
    judged = float(re.search(r"of ([\d.]+) GB/s in group", co001.message).group(1))
    assert any(abs(judged - row["gbs"]) < 0.05 for row in drawn)
