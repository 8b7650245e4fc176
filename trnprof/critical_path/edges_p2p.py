"""Pipeline edges: a point-to-point receive ends no earlier than its matching send has delivered.

A send and a receive are one transfer when they share `coll_group` and `coll_seq` on two ranks
(as the stdlib view `p2p_waits` pairs them). The data is there when the send ends; the receive
ends its measured post-arrival time after the later of that and its own start (the solver's end
edge from another node, as a blocking host call's from the device; when the sender sets it, the
path continues on the sender's rank). A receive posted before the data arrived waited for it; one
posted after did not, and waits in a replay only if its sender became that much later.
A send still running when its receive was posted is a rendezvous: it ends no earlier than the
receive was posted plus its measured time after that (`rendezvous`), so a receiver made later
in a replay holds its sender; a send that ended before its receive was posted (buffered) does not.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

# 1 for a receive, 0 for a send, null otherwise, as read with the events (events.py)
P2P_RECV_SQL = (
    "CAST(CASE WHEN kind = 'p2p' AND coll_op = 'recv' THEN 1 "
    "WHEN kind = 'p2p' AND coll_op = 'send' THEN 0 END AS TINYINT)"
)


def _roles(nodes: pd.DataFrame) -> np.ndarray:
    """1 receive, 0 send, -1 neither (or no such column)."""
    if "p2p_recv" not in nodes:
        return np.full(len(nodes), -1, np.int64)
    role = pd.to_numeric(nodes["p2p_recv"], errors="coerce").to_numpy("float64", na_value=np.nan)
    return np.where(np.isnan(role), -1, role).astype(np.int64)


def pairs(
    nodes: pd.DataFrame, group_codes: np.ndarray, s0: np.ndarray, e0: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """(receive node, its send node): one send and one receive of a (group, sequence) on two
    ranks, the send starting no later than the receive ends (else the ranks' clocks disagree:
    data cannot arrive before it was sent)."""
    role = _roles(nodes)
    seq = nodes["coll_seq"].to_numpy("float64", na_value=np.nan)
    rows = np.flatnonzero((role >= 0) & (group_codes >= 0) & ~np.isnan(seq))
    empty = np.zeros(0, np.int64)
    if not len(rows):
        return empty, empty
    ends = pd.DataFrame(
        {
            "node": rows,
            "group": group_codes[rows],
            "seq": seq[rows],
            "role": role[rows],
            "rank": nodes["rank"].to_numpy(np.int64)[rows],
        }
    )
    ends = ends.drop_duplicates(["group", "seq", "role"], keep=False)  # one send and one receive
    sends, recvs = ends[ends["role"] == 0], ends[ends["role"] == 1]
    pairs = recvs.merge(sends, on=["group", "seq"], suffixes=("", "_send"))
    pairs = pairs[pairs["rank"] != pairs["rank_send"]]
    recv, send = pairs["node"].to_numpy(np.int64), pairs["node_send"].to_numpy(np.int64)
    causal = s0[send] <= e0[recv]
    return recv[causal], send[causal]


def delivered(recv: np.ndarray, send: np.ndarray, e0: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The pairs whose send ended no later than its receive: the receive's end waits for the
    data. A rendezvous send often ends a few microseconds after its receive (the sender learns
    of the delivery after the receiver has the data): that receive keeps its own end, and the
    send is held by the receive's start instead (rendezvous)."""
    ordered = e0[send] <= e0[recv]
    return recv[ordered], send[ordered]


def after_arrival(recv: np.ndarray, send: np.ndarray, s0: np.ndarray, e0: np.ndarray) -> np.ndarray:
    """ns each receive took after its data arrived (or after it was posted, if later)."""
    return e0[recv] - np.maximum(e0[send], s0[recv])


def rendezvous(
    recv: np.ndarray, send: np.ndarray, s0: np.ndarray, e0: np.ndarray
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(send, its receive, ns the send took after the receive was posted, or after its own start
    if later) for the pairs whose receive was posted while the send ran."""
    held = s0[recv] < e0[send]
    send, recv = send[held], recv[held]
    return send, recv, e0[send] - np.maximum(s0[recv], s0[send])
