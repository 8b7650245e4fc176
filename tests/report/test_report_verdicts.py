"""The report draws what the rules judge: the stragglers heatmap of a balanced 2-rank job has one
tick per rank and a colour scale that keeps noise pale."""

from __future__ import annotations

from pathlib import Path

import pytest

from trnprof.api import open_run
from tests.conftest import DATA
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
