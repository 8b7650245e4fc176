"""Where ranks sit and which replica groups they form.

Megatron / NeuronX-Distributed order: tensor-parallel ranks are adjacent (inside a node, on
neighbouring chips), data-parallel next, pipeline stages outermost:
    rank = pp_rank * (dp * tp) + dp_rank * tp + tp_rank
One rank per (logical) NeuronCore: node = rank // cores per node, chip = (rank % cores per node)
// ranks per chip (2 on Trn1, 4 on Trn2 at LNC=2).
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from .job import Job


class Layout:
    def __init__(self, job: Job):
        self.job = job
        self.cpn = job.cores_per_node
        rank = np.arange(job.world)
        self.rank = rank
        self.tp_rank = rank % job.tp
        self.dp_rank = (rank // job.tp) % job.dp
        self.pp_rank = rank // (job.tp * job.dp)
        self.node = rank // self.cpn
        per_chip = job.instance.ranks_per_chip
        self.chip = (rank % self.cpn) // per_chip
        self.core = rank % per_chip

    def rank_grid(self) -> np.ndarray:
        """Ranks as an array indexed [pp, dp, tp]."""
        return self.rank.reshape(self.job.pp, self.job.dp, self.job.tp)

    def tp_group_ranks(self, pp: int, dp: int) -> np.ndarray:
        return self.rank_grid()[pp, dp, :]

    def dp_group_ranks(self, pp: int, tp: int) -> np.ndarray:
        return self.rank_grid()[pp, :, tp]

    def tp_group_name(self, ranks: np.ndarray) -> np.ndarray:
        node = ranks // self.cpn
        return np.array([f"tp:node{n}:g{g}" for n, g in zip(node, (ranks % self.cpn) // self.job.tp)], dtype=object)

    def dp_group_name(self, ranks: np.ndarray) -> np.ndarray:
        return np.array([f"dp:tp{t}:pp{p}" for t, p in zip(self.tp_rank[ranks], self.pp_rank[ranks])], dtype=object)

    def pp_link_name(self, ranks: np.ndarray, to_next: bool) -> np.ndarray:
        """Name of the link between a rank's stage and the next (or previous) one."""
        s = self.pp_rank[ranks] - (0 if to_next else 1)
        return np.array(
            [f"pp:dp{d}:tp{t}:s{a}-s{a + 1}" for d, t, a in zip(self.dp_rank[ranks], self.tp_rank[ranks], s)],
            dtype=object,
        )

    def ranks_table(self) -> pd.DataFrame:
        job = self.job
        return pd.DataFrame(
            {
                "rank": self.rank.astype(np.int32),
                "node": self.node.astype(np.int32),
                "host": [f"node-{n}" for n in self.node],
                "chip": self.chip.astype(np.int32),
                "core": self.core.astype(np.int32),
                "dp_rank": self.dp_rank.astype(np.int32),
                "tp_rank": self.tp_rank.astype(np.int32),
                "pp_rank": self.pp_rank.astype(np.int32),
                "instance_type": job.instance.name,
                "hbm_capacity_bytes": np.int64(job.instance.core_hbm_bytes),
            }
        )
