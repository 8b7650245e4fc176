"""Alpha-beta cost of collectives over the Trn1 topology.

A group inside one node runs a ring over NeuronLink (or over DMA when all members share a
chip); a group spanning nodes runs hierarchically: reduce-scatter inside each node, the
inter-node part over EFA on 1/k of the data (k members per node), all-gather inside the node.
Ring cost: steps x hop latency + bus factor x bytes / bus bandwidth, the factors of nccom-test
(all-reduce 2(n-1)/n over 2(n-1) steps; all-gather and reduce-scatter (n-1)/n over n-1 steps).
Byte counts follow nccl-tests: all-gather counts the gathered output, reduce-scatter the input.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .hardware import (CORE_DMA_BW, CORES_PER_CHIP, INTER_NODE_HOP_S, INTRA_NODE_HOP_S,
                       NEURONLINK_EFFICIENCY, Instance)

_RING = {  # op -> (bus factor(n), steps(n))
    "all_reduce": (lambda n: 2 * (n - 1) / n, lambda n: 2 * (n - 1)),
    "all_gather": (lambda n: (n - 1) / n, lambda n: n - 1),
    "reduce_scatter": (lambda n: (n - 1) / n, lambda n: n - 1),
    "send": (lambda n: 1.0, lambda n: 1),
    "recv": (lambda n: 1.0, lambda n: 1),
}


@dataclass(frozen=True)
class Placement:
    """Where a replica group's members sit."""
    size: int          # ranks in the group
    per_node: int      # members on each node it spans
    nodes: int         # nodes it spans
    same_chip: bool    # every member on one chip
    slow: float = 1.0  # slow_link factor on its inter-node part (1 = healthy)


def placement(ranks: np.ndarray, cores_per_node: int, slow_nodes: dict[int, float] | None = None) -> Placement:
    nodes = np.unique(ranks // cores_per_node)
    chips = np.unique(ranks // CORES_PER_CHIP)
    slow = max([slow_nodes.get(int(n), 1.0) for n in nodes] if slow_nodes else [1.0])
    return Placement(size=len(ranks), per_node=len(ranks) // len(nodes), nodes=len(nodes),
                     same_chip=len(chips) == 1, slow=slow if len(nodes) > 1 else 1.0)


def ring_time(op: str, nbytes: float, n: int, busbw: float, hop: float) -> float:
    if n <= 1 or nbytes <= 0:
        return 0.0
    factor, steps = _RING[op]
    return steps(n) * hop + factor(n) * nbytes / busbw


def intra_busbw(instance: Instance, same_chip: bool) -> float:
    """Bus bandwidth per rank inside a node, bytes/s."""
    if same_chip or instance.neuronlink_bw == 0:
        return CORE_DMA_BW * NEURONLINK_EFFICIENCY
    return instance.neuronlink_bw / CORES_PER_CHIP * NEURONLINK_EFFICIENCY


def inter_bw(instance: Instance, network_efficiency: float, slow: float) -> float:
    """Network bandwidth per rank when every rank of the node communicates at once, bytes/s."""
    return instance.network_bw * network_efficiency / instance.cores / slow


def collective_time(op: str, nbytes: float, where: Placement, instance: Instance,
                    network_efficiency: float) -> float:
    """Seconds one collective takes once every member has arrived."""
    if where.size <= 1 or nbytes <= 0:
        return 0.0
    local = intra_busbw(instance, where.same_chip)
    if where.nodes == 1:
        return ring_time(op, nbytes, where.size, local, INTRA_NODE_HOP_S)
    remote = inter_bw(instance, network_efficiency, where.slow)
    k, m = where.per_node, where.nodes
    if op in ("send", "recv"):
        return INTER_NODE_HOP_S + nbytes / remote
    inner_rs = ring_time("reduce_scatter", nbytes, k, local, INTRA_NODE_HOP_S)
    inner_ag = ring_time("all_gather", nbytes, k, local, INTRA_NODE_HOP_S)
    outer = ring_time(op, nbytes / k, m, remote, INTER_NODE_HOP_S)
    if op == "all_reduce":
        return inner_rs + outer + inner_ag
    return (inner_rs if op == "reduce_scatter" else inner_ag) + outer
