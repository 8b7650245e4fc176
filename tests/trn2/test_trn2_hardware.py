"""Trn2 in the hardware table: the published figures (docs/hardware.md's sources) and the
per-core figures the table derives from them at the default LNC=2."""

import pytest

from trnprof import hardware as hw
from trnprof.units import GIB


def test_trainium2_chip_figures_are_the_published_ones():
    chip = hw.TRAINIUM2
    assert chip.physical_cores == 8 and chip.default_lnc == 2 and chip.lncs == (1, 2)
    assert chip.tensor_flops == {"bf16": 667e12, "fp16": 667e12, "tf32": 667e12, "fp8": 1299e12, "fp32": 181e12}
    assert chip.hbm_bytes == 96 * GIB and chip.hbm_bytes_per_s == 2.9e12 and chip.dma_bytes_per_s == 3.5e12
    assert (chip.vector_flops, chip.scalar_flops) == (1.0e12, 1.2e12)


@pytest.mark.parametrize("name", ["trn2.48xlarge", "trn2u.48xlarge"])
def test_trn2_instance_rows_at_lnc_2(name):
    row = hw.lookup(name)
    assert (row["chip"], row["neuron_core"], row["lnc"]) == ("Trainium2", "NeuronCore-v3", 2)
    assert (row["chips"], row["cores"], row["cores_per_chip"]) == (16, 64, 4)
    assert row["hbm_bytes_per_core"] == 24 * GIB  # training/best-practices.rst: ~24 GiB per rank
    assert row["tensor_bf16_flops"] * 4 == pytest.approx(667e12)
    assert row["tensor_fp8_flops"] / row["tensor_bf16_flops"] == pytest.approx(1299 / 667)
    assert row["node_link_bytes_per_s"] * 4 == pytest.approx(1024e9)
    assert row["network_bytes_per_s"] == pytest.approx(3200e9 / 8) and row["network_kind"] == "EFAv3"
    assert row["vector_fp32_flops"] == pytest.approx(2 * hw.TRAINIUM2.vector_flops)  # two cores per rank


def test_the_ultraserver_is_four_trn2u_joined_by_neuronlink():
    ultra, plain = hw.lookup("trn2u.48xlarge"), hw.lookup("trn2.48xlarge")
    assert ultra["ultraserver_nodes"] * ultra["chips"] == 64
    assert ultra["ultraserver_link_bytes_per_s"] * ultra["cores_per_chip"] == pytest.approx(256e9)
    assert plain["ultraserver_nodes"] == 1 and plain["ultraserver_link_bytes_per_s"] is None


def test_lnc_1_halves_every_per_core_figure():
    two, one = (hw.row(hw.INSTANCE_TYPES["trn2.48xlarge"], lnc) for lnc in (2, 1))
    assert one["cores"] == 128 and one["cores_per_chip"] == 8
    for column in (
        "tensor_bf16_flops",
        "tensor_fp8_flops",
        "hbm_bytes_per_core",
        "vector_fp32_flops",
        "node_link_bytes_per_s",
        "chip_link_bytes_per_s",
    ):
        assert one[column] == pytest.approx(two[column] / 2), column


def test_trn1_rows_are_unchanged():
    row = hw.lookup("trn1.32xlarge")
    assert (row["chip"], row["lnc"], row["cores"], row["cores_per_chip"]) == ("Trainium1", 1, 32, 2)
    assert row["tensor_bf16_flops"] == 95e12 and row["tensor_fp8_flops"] == 95e12
    assert row["ultraserver_nodes"] == 1


def test_every_trn2_figure_names_its_source():
    for key in (
        "trn2_cores",
        "trn2_lnc",
        "trn2_tensor",
        "trn2_vector_scalar",
        "trn2_hbm",
        "trn2_dma",
        "trn2_instances",
        "trn2_neuronlink",
        "trn2_network",
        "trn2_topology",
    ):
        assert hw.SOURCES[key].strip(), key


def test_the_table_has_a_row_per_instance_type():
    table = hw.table()
    assert set(table.column("instance_type").to_pylist()) == set(hw.INSTANCE_TYPES)
    assert {"trn2.48xlarge", "trn2u.48xlarge"} <= set(hw.INSTANCE_TYPES)
