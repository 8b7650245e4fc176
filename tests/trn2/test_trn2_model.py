"""The execution model on Trn2: per-rank figures from the chip and LNC, FP8 at twice the BF16
rate, the torus and UltraServer links in the collective model, the throttle ramp, the band and
the Trn2 presets."""

import json

import numpy as np
import pytest
from click.testing import CliRunner

from trnprof.cli import main as cli
from trnprof.collectors.trn1 import load_config, summary
from trnprof.collectors.trn1.uncertainty import band, outside
from trnprof.errors import TrnprofError
from trnprof.model.collectives import Placement, collective_time, intra_busbw, placement
from trnprof.model.hardware import INSTANCES, THROTTLE_RAMP_S
from trnprof.model.job import resolve
from trnprof.model.matmul import Matmul, matmul_cycles, tensor_seconds

TRN1, TRN2, TRN2U = INSTANCES["trn1.32xlarge"], INSTANCES["trn2.48xlarge"], INSTANCES["trn2u.48xlarge"]
BIG = [Matmul(4096, 4096, 4096)]


def step(preset="tiny", *overrides):
    return summary(load_config(preset=preset, overrides=list(overrides)))["step_time_s"]


def test_fp8_matmuls_run_at_twice_the_bf16_rate_on_trn2_only():
    assert tensor_seconds(BIG, "fp8", 1.0, TRN2) == pytest.approx(
        tensor_seconds(BIG, "bf16", 1.0, TRN2) * 667 / 1299, rel=1e-3
    )
    assert tensor_seconds(BIG, "fp8", 1.0, TRN1) == tensor_seconds(BIG, "bf16", 1.0, TRN1)


def test_fp8_jobs_step_faster_than_bf16_on_trn2():
    trn2 = ("cluster.instance=trn2.48xlarge",)
    bf16, fp8 = step("qwen3-8b-torchtitan-trn2"), step("qwen3-8b-torchtitan-trn2", "precision.compute=fp8")
    assert fp8 < 0.9 * bf16
    trn1 = step("llama2-7b-16node"), step("llama2-7b-16node", "precision.compute=fp8")
    assert trn1[1] == pytest.approx(trn1[0], rel=1e-6)  # no FP8 gain on Trn1
    assert step("llama2-7b", *trn2) < step("llama2-7b")  # same layout, the newer chip


def test_lnc_sets_the_ranks_and_what_each_rank_has():
    two = resolve(load_config(preset="qwen3-8b-torchtitan-trn2"))
    one = resolve(load_config(preset="qwen3-8b-torchtitan-trn2", overrides=["cluster.lnc=1", "batch.global=32"]))
    assert (two.world, one.world) == (64, 128)
    assert one.instance.core_hbm_bytes * 2 == two.instance.core_hbm_bytes
    assert tensor_seconds(BIG, "bf16", 1.0, one.instance) == pytest.approx(
        2 * tensor_seconds(BIG, "bf16", 1.0, two.instance), rel=1e-3
    )  # but the one throttle ramp
    with pytest.raises(TrnprofError, match="cluster.lnc: 2 is not a Logical NeuronCore Configuration of trn1.32xlarge"):
        resolve(load_config(preset="tiny", overrides=["cluster.instance=trn1.32xlarge", "cluster.lnc=2"]))


def test_the_throttle_ramp_costs_every_trn2_tensor_op_up_to_the_ramp():
    def streaming(mms, instance):
        return sum(matmul_cycles(mm) for mm in mms) / instance.tensor_cycle_hz

    tiny = [Matmul(128, 128, 128)]
    assert streaming(tiny, TRN2) < THROTTLE_RAMP_S
    assert tensor_seconds(tiny, "bf16", 1.0, TRN2) == pytest.approx(2 * streaming(tiny, TRN2))  # all at half rate
    assert tensor_seconds(BIG, "bf16", 1.0, TRN2) == pytest.approx(streaming(BIG, TRN2) + THROTTLE_RAMP_S)
    assert tensor_seconds(BIG, "bf16", 1.0, TRN1) == pytest.approx(streaming(BIG, TRN1))  # no ramp on Trn1


def test_a_torus_row_gets_half_the_links_of_a_two_dimensional_group():
    row = placement(np.arange(16), 64, instance=TRN2)  # 4 chips on one torus row
    square = placement(np.arange(64), 64, instance=TRN2)  # all 16 chips
    assert (row.torus_dims, square.torus_dims) == (1, 2)
    assert intra_busbw(TRN2, False, 1) == pytest.approx(intra_busbw(TRN2, False, 2) / 2)
    assert placement(np.arange(4), 64, instance=TRN2).same_chip  # TP4 inside a chip at LNC=2


def test_trn2_collectives_are_sane_against_trn1():
    node1 = Placement(size=32, per_node=32, nodes=1, same_chip=False)
    node2 = Placement(size=64, per_node=64, nodes=1, same_chip=False)
    big = 1 << 30
    busbw = {
        name: 2 * (n - 1) / n * big / collective_time("all_reduce", big, where, inst, 0.8)
        for name, n, where, inst in (("trn1", 32, node1, TRN1), ("trn2", 64, node2, TRN2))
    }
    # per rank: NeuronLink-v3 1,024 GB/s over 4 ranks against NeuronLink-v2 384 GiB/s over 2
    assert busbw["trn2"] / busbw["trn1"] == pytest.approx((1024e9 / 4) / (384 * 2**30 / 2), rel=0.05)
    tiny = collective_time("all_reduce", 1024, node2, TRN2, 0.8)
    assert tiny == pytest.approx(collective_time("all_reduce", 1024, node1, TRN1, 0.8), rel=0.05)  # latency-bound


def test_ultraserver_nodes_combine_over_neuronlink_not_efa():
    ranks = np.arange(4) * 64  # one rank per node, 4 nodes
    efa = collective_time("all_reduce", 1 << 30, placement(ranks, 64, instance=TRN2), TRN2, 0.8)
    ultra_place = placement(ranks, 64, instance=TRN2U)
    assert ultra_place.per_ultraserver == 4
    ultra = collective_time("all_reduce", 1 << 30, ultra_place, TRN2U, 0.8)
    assert ultra < efa / 5
    two_servers = placement(np.arange(8) * 64, 64, instance=TRN2U)  # 8 nodes: 2 UltraServers
    assert two_servers.per_ultraserver == 4
    eight_efa = collective_time("all_reduce", 1 << 30, placement(np.arange(8) * 64, 64, instance=TRN2), TRN2, 0.8)
    assert ultra < collective_time("all_reduce", 1 << 30, two_servers, TRN2U, 0.8) < eight_efa


def test_the_band_names_trn2_as_outside_the_evidence():
    config = load_config(preset="qwen3-8b-torchtitan-trn2")
    reasons = outside(resolve(config))
    assert reasons and reasons[0].startswith("Trainium2 (trn2.48xlarge): no published Trainium2 training throughput")
    result = band(config)
    assert not result["inside_evidence"] and result["low"] < summary(config)["throughput"]["value"] < result["high"]
    assert not any("Trainium" in r for r in outside(resolve(load_config(preset="llama2-7b-16node"))))


@pytest.mark.parametrize("preset", ["qwen3-8b-torchtitan-trn2", "llama3-70b-nxdt-trn2"])
def test_trn2_presets_resolve_fit_and_state_their_stack(preset):
    config = load_config(preset=preset)
    job = resolve(config)
    assert job.instance.chip.name == "Trainium2" and job.instance.lnc == 2 and job.world == 64 * job.nodes
    assert summary(config)["fits"]
    assert config.precision.neuron_sdk and config.precision.framework


def test_cli_simulates_a_trn1_preset_on_trn2():
    result = CliRunner().invoke(
        cli,
        [
            "simulate",
            "--preset",
            "llama2-7b",
            "--set",
            "cluster.instance=trn2.48xlarge",
            "--summary-only",
            "--format",
            "json",
        ],
    )
    assert result.exit_code == 0, result.output
    out = json.loads(result.output)
    assert out["band"]["outside_evidence"][0].startswith("Trainium2")
    text = (
        CliRunner()
        .invoke(cli, ["simulate", "--preset", "llama2-7b", "--set", "cluster.instance=trn2.48xlarge", "--summary-only"])
        .output
    )
    assert "OUTSIDE the calibration evidence: Trainium2" in text
