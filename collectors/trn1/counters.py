"""Counter samples of a batch of ranks: HBM residency by category and the input queue depth."""

from __future__ import annotations

import numpy as np
import pyarrow as pa

from trnprof.model.layout import Layout
from trnprof.model.memory import CATEGORIES, Residency
from trnprof.model.timeline import Timeline


def sample_times(tl: Timeline, stage: int, d: np.ndarray, t: np.ndarray) -> np.ndarray:
    """(ranks, steps, 3): step start (after any compile), peak activations (first backward
    starts), backward done (optimizer starts). No sample at the step end: it can coincide with
    the next step's start, and samples of one rank must have distinct times."""
    times, seq = tl.stages[stage], tl.seqs[stage]
    first_b = next(k for k, (typ, _) in enumerate(seq) if typ == "B")
    return np.stack(
        [times.ready[:, 0, d].T, times.body[:, first_b, d].T, np.moveaxis(times.opt_start[:, d, t], 1, 0)], axis=2
    )


def hbm_values(res: Residency, steps: int, leak_per_step: float) -> dict[str, np.ndarray]:
    """(steps, 3) bytes per category at the three sample points."""
    shape = (steps, 3)
    leak = leak_per_step * np.arange(steps)[:, None]
    return {
        "params": np.full(shape, res.params),
        "grads": np.full(shape, res.grads),
        "optimizer_state": np.full(shape, res.optimizer_state),
        "activations": np.broadcast_to(np.array([0.0, res.activations, 0.0]), shape),
        "runtime": res.runtime + leak + np.zeros(shape),
    }


def build_counters(tl: Timeline, layout: Layout, ranks: np.ndarray, res: Residency, leak_per_step: float) -> pa.Table:
    stage = int(layout.pp_rank[ranks[0]])
    d, t = layout.dp_rank[ranks], layout.tp_rank[ranks]
    n_r, S = len(ranks), tl.steps
    ts = sample_times(tl, stage, d, t).reshape(n_r, -1)
    values = hbm_values(res, S, leak_per_step)
    names, units = ["hbm." + c for c in CATEGORIES], ["bytes"] * len(CATEGORIES)
    ts_parts = [ts] * len(CATEGORIES)
    val_parts = [np.broadcast_to(values[c].ravel(), ts.shape) for c in CATEGORIES]
    sizes = [ts.shape[1]] * len(CATEGORIES)
    loader = tl.loaders.get(stage)
    if loader is not None:
        consumed = S * tl.plan.job.microbatches
        ts_parts.append(loader.got[:consumed, d].T)
        val_parts.append(loader.queue_depth(consumed)[:, d].T)
        names.append("input.queue_depth")
        units.append("count")
        sizes.append(consumed)
    name_codes = np.concatenate([np.full(n, i, dtype=np.int32) for i, n in enumerate(sizes)])
    per_rank = len(name_codes)
    all_ts = np.concatenate(ts_parts, axis=1).ravel()
    return pa.table(
        {
            "rank": np.repeat(ranks.astype(np.int32), per_rank),
            "ts": np.rint(all_ts * 1e9).astype(np.int64),
            "name": pa.DictionaryArray.from_arrays(pa.array(np.tile(name_codes, n_r)), pa.array(names)).cast(
                pa.string()
            ),
            "value": np.concatenate(val_parts, axis=1).ravel().astype(np.float64),
            "unit": pa.DictionaryArray.from_arrays(pa.array(np.tile(name_codes, n_r)), pa.array(units)).cast(
                pa.string()
            ),
        }
    )
