"""Link peaks drawn on the collectives chart, per instance type.

Bus bandwidth (nccl-tests convention, the `collectives` view) of a collective between the two
NeuronCores of one chip is bounded by the core's share of the chip's DMA bandwidth (it moves
through HBM); inside a node by the core's share of its chip's NeuronLink-v2 bandwidth; across
nodes a hierarchical collective by the node's EFA bandwidth (the inter-node phase moves
1/cores of the data per core over 1/cores of the node's network). The numbers come from
`collectors/trn1/hardware.py`, which cites `shared/trn1/hardware.md` (aws-neuron-sdk docs):
DMA ~1 TB/s per chip, NeuronLink-v2 384 / 768 GiB/s per chip (trn1 / trn1n.32xlarge), EFA 800 /
1,600 Gbps per node.
"""

from __future__ import annotations

from trnprof.collectors.trn1.hardware import CORE_DMA_BW, CORES_PER_CHIP, INSTANCES


def link_peaks(instance_type: str | None) -> list[dict]:
    """[{"link", "bytes_per_s"}] for the instance type; empty when it is unknown."""
    instance = INSTANCES.get(instance_type or "")
    if instance is None:
        return []
    peaks = [{"link": "on-chip DMA per NeuronCore (same chip)", "bytes_per_s": CORE_DMA_BW}]
    if instance.neuronlink_bw:
        peaks.append({"link": "NeuronLink-v2 per NeuronCore (intra-node)",
                      "bytes_per_s": instance.neuronlink_bw / CORES_PER_CHIP})
    if instance.network_bw:
        peaks.append({"link": "EFA network per node (inter-node)", "bytes_per_s": instance.network_bw})
    return peaks
