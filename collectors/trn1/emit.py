"""Canonical tables for a batch of ranks, built as arrays (no Python loop over events).

Every event group is a set of columns shaped (ranks, steps, events-per-step) or broadcastable
to it; strings are indices into one vocabulary per run, so columns concatenate as integers and
become Arrow dictionary arrays cast to strings at the end. Rows come out grouped by rank, so the
writer can hand each rank's slice to its partition.
"""

from __future__ import annotations

import numpy as np
import pyarrow as pa

from trnprof.schema import EVENT_COLUMNS

_STRING_COLUMNS = ("kind", "name", "lane", "phase", "coll_op", "coll_group", "args")
_INT_TYPES = {name: typ for name, typ, _, _ in EVENT_COLUMNS if name not in _STRING_COLUMNS}


class Vocabulary:
    """String -> index, shared by every batch of a run (index -1 = null)."""

    def __init__(self):
        self.index: dict[str, int] = {}
        self.strings: list[str] = []

    def ids(self, values) -> np.ndarray | int:
        if values is None:
            return -1
        if isinstance(values, str):
            return self._one(values)
        if isinstance(values, np.ndarray) and values.dtype.kind in "iu":
            return values  # already codes
        values = np.asarray(values, dtype=object)
        uniques, inverse = np.unique(values.astype(str), return_inverse=True)
        codes = np.array([self._one(u) for u in uniques], dtype=np.int32)
        out = codes[inverse].reshape(values.shape)
        nulls = np.frompyfunc(lambda v: v is None, 1, 1)(values).astype(bool)
        out[nulls] = -1
        return out

    def _one(self, value: str) -> int:
        code = self.index.get(value)
        if code is None:
            code = self.index[value] = len(self.strings)
            self.strings.append(value)
        return code

    def array(self, codes: np.ndarray) -> pa.Array:
        """Strings for codes (a take from the vocabulary: twice as fast as a dictionary cast)."""
        dictionary = pa.array(self.strings, type=pa.string())
        return dictionary.take(pa.array(codes, type=pa.int32(), mask=codes < 0))


class EventBatch:
    """Events of `n_ranks` ranks over `steps` steps, collected group by group."""

    def __init__(self, ranks: np.ndarray, steps: int, vocab: Vocabulary):
        self.ranks, self.steps, self.vocab = ranks, steps, vocab
        self.groups: list[dict] = []

    def add(
        self,
        *,
        ts,
        dur,
        kind,
        name,
        lane,
        step=None,
        phase=None,
        nbytes=None,
        flops=None,
        coll_op=None,
        coll_group=None,
        coll_seq=None,
        coll_ranks=None,
        args=None,
        keep=None,
    ):
        """Times in seconds. Columns may be scalars, per-event arrays (n,), per-rank arrays
        (R, 1, 1) or full (R, S, n). `keep` (R, S, n) bool drops rows (e.g. zero-length waits)."""
        ts = np.asarray(ts, dtype=float)
        shape = ts.shape
        start = np.rint(ts * 1e9).astype(np.int64)
        end = np.rint((ts + np.asarray(dur, dtype=float)) * 1e9).astype(np.int64)
        if step is None:
            step = np.arange(self.steps)[None, :, None]
        strings = dict(kind=kind, name=name, lane=lane, phase=phase, coll_op=coll_op, coll_group=coll_group, args=args)
        group = {
            "ts": start,
            "dur": np.maximum(np.broadcast_to(end, shape) - start, 0),
            "step": np.broadcast_to(np.asarray(step, dtype=np.int32), shape),
        }
        for key, value in (("nbytes", nbytes), ("flops", flops), ("coll_seq", coll_seq), ("coll_ranks", coll_ranks)):
            group[key] = (
                None
                if value is None
                else np.broadcast_to(np.rint(np.asarray(value, dtype=float)).astype(np.int64), shape)
            )
        for key, value in strings.items():
            codes = self.vocab.ids(value)
            group[key] = (
                None
                if isinstance(codes, int) and codes < 0
                else np.broadcast_to(np.asarray(codes, dtype=np.int32), shape)
            )
        group["keep"] = None if keep is None else np.broadcast_to(keep, shape)
        self.groups.append(group)

    def table(self) -> tuple[pa.Table, np.ndarray]:
        """All events, rows grouped by rank, and the row count of each rank."""
        n_r = len(self.ranks)

        def flat(a):
            return a.reshape(n_r, -1)

        if any(g["keep"] is not None for g in self.groups):
            keep = np.concatenate(
                [flat(g["keep"] if g["keep"] is not None else np.ones(g["ts"].shape, bool)) for g in self.groups],
                axis=1,
            )
            counts, flat_keep = keep.sum(axis=1), keep.ravel()
        else:
            counts = np.full(n_r, sum(flat(g["ts"]).shape[1] for g in self.groups))
            flat_keep = None

        def column(key, fill, dtype):
            if all(g[key] is None for g in self.groups):
                return None
            parts = [
                flat(np.broadcast_to(np.array(fill, dtype=dtype), g["ts"].shape) if g[key] is None else g[key])
                for g in self.groups
            ]
            out = np.concatenate(parts, axis=1).ravel()
            return out if flat_keep is None else out[flat_keep]

        rows = int(counts.sum())
        data = {"rank": pa.array(np.repeat(self.ranks.astype(np.int32), counts))}
        for key, typ in (("ts", np.int64), ("dur", np.int64), ("step", np.int32)):
            data[key] = pa.array(column(key, 0, typ))
        for key in ("kind", "name", "lane", "phase", "coll_op", "coll_group", "args"):
            codes = column(key, -1, np.int32)
            data[key] = pa.nulls(rows, pa.string()) if codes is None else self.vocab.array(codes)
        for key, out in (
            ("nbytes", "bytes"),
            ("flops", "flops"),
            ("coll_seq", "coll_seq"),
            ("coll_ranks", "coll_ranks"),
        ):
            values = column(key, -1, np.int64)
            arrow_type = _INT_TYPES[out]
            data[out] = (
                pa.nulls(rows, arrow_type) if values is None else pa.array(values, mask=values < 0).cast(arrow_type)
            )
        order = [name for name, *_ in EVENT_COLUMNS]
        return pa.table({k: data[k] for k in order}), counts
