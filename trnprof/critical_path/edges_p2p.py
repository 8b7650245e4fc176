"""Pipeline edges: a point-to-point receive ends no earlier than its matching send has delivered.

A send and a receive are one transfer when they share `coll_group` and `coll_seq` on two ranks
(as the stdlib view `p2p_waits` pairs them). Where the receive was posted before the send's data
arrived (the send's end), the receive waited for the sender: its end is the send's end plus the
time measured after it (the solver's end edge from another node, as a blocking host call's from
the device; the path continues on the sender's rank). A receive posted after the data arrived
did not wait and keeps its measured length.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

# 1 for a receive, 0 for a send, null otherwise, as read with the events (events.py)
P2P_RECV_SQL = ("CAST(CASE WHEN kind = 'p2p' AND coll_op = 'recv' THEN 1 "
                "WHEN kind = 'p2p' AND coll_op = 'send' THEN 0 END AS TINYINT)")


def _roles(nodes: pd.DataFrame) -> np.ndarray:
    """1 receive, 0 send, -1 neither (or no such column)."""
    if "p2p_recv" not in nodes:
        return np.full(len(nodes), -1, np.int64)
    role = pd.to_numeric(nodes["p2p_recv"], errors="coerce").to_numpy("float64", na_value=np.nan)
    return np.where(np.isnan(role), -1, role).astype(np.int64)


def waits(nodes: pd.DataFrame, group_codes: np.ndarray, s0: np.ndarray,
          e0: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(receive node, its send node) for every receive that waited for its send's data: one send
    and one receive of a (group, sequence) on two ranks, the send ending within the receive."""
    role = _roles(nodes)
    seq = nodes["coll_seq"].to_numpy("float64", na_value=np.nan)
    rows = np.flatnonzero((role >= 0) & (group_codes >= 0) & ~np.isnan(seq))
    empty = np.zeros(0, np.int64)
    if not len(rows):
        return empty, empty
    ends = pd.DataFrame({"node": rows, "group": group_codes[rows], "seq": seq[rows], "role": role[rows],
                         "rank": nodes["rank"].to_numpy(np.int64)[rows]})
    ends = ends.drop_duplicates(["group", "seq", "role"], keep=False)   # one send and one receive
    sends, recvs = ends[ends["role"] == 0], ends[ends["role"] == 1]
    pairs = recvs.merge(sends, on=["group", "seq"], suffixes=("", "_send"))
    pairs = pairs[pairs["rank"] != pairs["rank_send"]]
    recv, send = pairs["node"].to_numpy(np.int64), pairs["node_send"].to_numpy(np.int64)
    waited = (e0[send] > s0[recv]) & (e0[send] <= e0[recv])
    return recv[waited], send[waited]
