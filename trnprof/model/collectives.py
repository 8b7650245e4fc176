"""Latency + bandwidth cost of collectives per link class over the Trn1 topology.

Link classes: same chip (DMA through HBM), NeuronLink inside a node, EFA across nodes. A group
inside one node pays a fixed latency per collective phase (nccom-test: a 32-rank all-gather of
1 KiB takes 6.16 us) plus bus factor x bytes / achieved bus bandwidth; a group spanning nodes
runs hierarchically: reduce-scatter inside each node, the inter-node part over EFA on 1/k of
the data (k members per node) with recursive halving/doubling (log2(nodes) steps of the
inter-node latency), all-gather inside the node. So a collective's efficiency grows with its
message size as nccom-test shows (latency-bound below ~1 MiB, bandwidth-bound above). Bus
factors are nccom-test's (all-reduce 2(n-1)/n, all-gather and reduce-scatter (n-1)/n, send 1);
byte counts follow nccl-tests: all-gather counts the gathered output, reduce-scatter the input.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from .hardware import COLLECTIVE_BASE_S, INTER_NODE_HOP_S, NEURONLINK_EFFICIENCY, Instance

_BUS = {  # op -> (bus factor(n), latency phases: an all-reduce is a reduce-scatter + all-gather)
    "all_reduce": (lambda n: 2 * (n - 1) / n, 2),
    "all_gather": (lambda n: (n - 1) / n, 1),
    "reduce_scatter": (lambda n: (n - 1) / n, 1),
    "send": (lambda n: 1.0, 1),
    "recv": (lambda n: 1.0, 1),
}


@dataclass(frozen=True)
class Placement:
    """Where a replica group's members sit."""

    size: int  # ranks in the group
    per_node: int  # members on each node it spans
    nodes: int  # nodes it spans
    same_chip: bool  # every member on one chip
    slow: float = 1.0  # slow_link factor on its inter-node part (1 = healthy)
    torus_dims: int = 2  # dimensions of a node's 4x4 chip torus its chips span (1: one row or column)
    per_ultraserver: int = 1  # nodes of one UltraServer it spans (NeuronLink between them)


def _torus_dims(chips_in_node: np.ndarray, side: int = 4) -> int:
    """Torus dimensions a node's chips span: chip c sits at (c // side, c % side)."""
    rows, cols = np.unique(chips_in_node // side), np.unique(chips_in_node % side)
    return 1 if len(rows) == 1 or len(cols) == 1 else 2


def placement(
    ranks: np.ndarray, cores_per_node: int, slow_nodes: dict[int, float] | None = None, instance: Instance | None = None
) -> Placement:
    per_chip = instance.ranks_per_chip if instance is not None else 2
    nodes = np.unique(ranks // cores_per_node)
    chips = np.unique(ranks // per_chip)
    slow = max([slow_nodes.get(int(n), 1.0) for n in nodes] if slow_nodes else [1.0])
    first_node = ranks[ranks // cores_per_node == nodes[0]]
    dims = _torus_dims(np.unique((first_node % cores_per_node) // per_chip))
    group = instance.ultraserver_nodes if instance is not None else 1
    per_us = len(nodes) // len(np.unique(nodes // group))
    return Placement(
        size=len(ranks),
        per_node=len(ranks) // len(nodes),
        nodes=len(nodes),
        same_chip=len(chips) == 1,
        slow=slow if len(nodes) > 1 else 1.0,
        torus_dims=dims,
        per_ultraserver=per_us,
    )


def link_time(op: str, nbytes: float, n: int, busbw: float, latency: float) -> float:
    """Seconds of one collective over n members of one link class: latency per phase plus the
    bus bytes at the class's achieved bus bandwidth."""
    if n <= 1 or nbytes <= 0:
        return 0.0
    factor, phases = _BUS[op]
    return phases * latency + factor(n) * nbytes / busbw


def intra_busbw(instance: Instance, same_chip: bool, torus_dims: int = 2) -> float:
    """Bus bandwidth per rank inside a node, bytes/s. On Trn2 a group whose chips lie on one row
    or column of the 4x4 torus rings over that dimension's 2 of the chip's 4 NeuronLink-v3 links:
    half the chip's bandwidth (Trn1 keeps the fitted per-chip figure for every group: its
    calibration rests on it)."""
    if same_chip or instance.neuronlink_bw == 0:
        return instance.core_dma_bw * NEURONLINK_EFFICIENCY
    share = 0.5 if instance.trainium2 and torus_dims == 1 else 1.0
    return instance.neuronlink_bw * share / instance.ranks_per_chip * NEURONLINK_EFFICIENCY


def ultraserver_busbw(instance: Instance) -> float:
    """Bus bandwidth per rank between the nodes of a Trn2 UltraServer (a ring of same-coordinate
    chips over inter-instance NeuronLink-v3), at the fitted NeuronLink efficiency, bytes/s."""
    return instance.ultraserver_bw / instance.ranks_per_chip * NEURONLINK_EFFICIENCY


def inter_bw(instance: Instance, network_efficiency: float, slow: float) -> float:
    """Network bandwidth per rank when every rank of the node communicates at once, bytes/s."""
    return instance.network_bw * network_efficiency / instance.cores / slow


def collective_time(op: str, nbytes: float, where: Placement, instance: Instance, network_efficiency: float) -> float:
    """Seconds one collective takes once every member has arrived."""
    if where.size <= 1 or nbytes <= 0:
        return 0.0
    local = intra_busbw(instance, where.same_chip, where.torus_dims)
    if where.nodes == 1:
        return link_time(op, nbytes, where.size, local, COLLECTIVE_BASE_S)
    remote = inter_bw(instance, network_efficiency, where.slow)
    k, m = where.per_node, where.nodes
    u = where.per_ultraserver if instance.ultraserver_bw > 0 and where.slow == 1.0 else 1
    if op in ("send", "recv"):
        if u > 1:  # the next stage sits in the same UltraServer: over NeuronLink
            return COLLECTIVE_BASE_S + nbytes / ultraserver_busbw(instance)
        return INTER_NODE_HOP_S + nbytes / remote
    inner_rs = link_time("reduce_scatter", nbytes, k, local, COLLECTIVE_BASE_S)
    inner_ag = link_time("all_gather", nbytes, k, local, COLLECTIVE_BASE_S)
    # UltraServer: the u nodes of one UltraServer combine over NeuronLink, then the UltraServers
    # over EFA on 1/(k u) of the data
    mid = link_time(op, nbytes / k, u, ultraserver_busbw(instance), COLLECTIVE_BASE_S) if u > 1 else 0.0
    outer = mid + link_time(
        op, nbytes / (k * u), m // u, remote, math.ceil(math.log2(max(m // u, 1))) * INTER_NODE_HOP_S
    )
    if op == "all_reduce":
        return inner_rs + outer + inner_ag
    return (inner_rs if op == "reduce_scatter" else inner_ag) + outer
